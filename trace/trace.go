// Package trace records a timeline of a run in the Chrome trace-event format
// (the JSON that chrome://tracing and https://ui.perfetto.dev open): one
// complete event ("ph": "X") per span, on named threads, in microseconds.
//
// The format is Google's "Trace Event Format" document; only complete
// events and thread-name metadata events are written.
package trace

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Event is one trace event as written to the file.
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   float64        `json:"ts"`            // microseconds since the recorder's start
	Dur  float64        `json:"dur,omitempty"` // microseconds, for "X" events
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// File is the JSON object written: the events and the unit to show them in.
type File struct {
	TraceEvents     []Event `json:"traceEvents"`
	DisplayTimeUnit string  `json:"displayTimeUnit"`
}

// Recorder collects spans from any goroutine. A nil *Recorder records
// nothing, so callers need not check whether tracing is on.
type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	events  []Event
	threads map[int]string
	limit   int
	dropped int
}

// New returns a recorder whose time zero is now. It keeps at most limit
// events (0 = one million) and counts the rest as dropped, so a long run
// cannot exhaust memory through its trace.
func New(limit int) *Recorder {
	if limit <= 0 {
		limit = 1_000_000
	}
	return &Recorder{start: time.Now(), threads: map[int]string{}, limit: limit}
}

// Thread names timeline row tid.
func (r *Recorder) Thread(tid int, name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.threads[tid] = name
	r.mu.Unlock()
}

// Span records that name ran on row tid from start to end.
func (r *Recorder) Span(tid int, cat, name string, start, end time.Time, args map[string]any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) >= r.limit {
		r.dropped++
		return
	}
	r.events = append(r.events, Event{
		Name: name, Cat: cat, Ph: "X", PID: 1, TID: tid, Args: args,
		TS:  float64(start.Sub(r.start).Nanoseconds()) / 1e3,
		Dur: float64(end.Sub(start).Nanoseconds()) / 1e3,
	})
}

// Dropped reports how many spans were not kept because of the limit.
func (r *Recorder) Dropped() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Events returns the thread-name events, then the spans sorted by start.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	tids := make([]int, 0, len(r.threads))
	for tid := range r.threads {
		tids = append(tids, tid)
	}
	sort.Ints(tids)
	for _, tid := range tids {
		out = append(out, Event{Name: "thread_name", Ph: "M", PID: 1, TID: tid, Args: map[string]any{"name": r.threads[tid]}},
			Event{Name: "thread_sort_index", Ph: "M", PID: 1, TID: tid, Args: map[string]any{"sort_index": tid}})
	}
	spans := append([]Event(nil), r.events...)
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].TS < spans[j].TS })
	return append(out, spans...)
}

// WriteFile writes the trace as JSON to path (through a temporary file, so
// a reader never sees half a trace).
func (r *Recorder) WriteFile(path string) error {
	b, err := json.Marshal(File{TraceEvents: r.Events(), DisplayTimeUnit: "ms"})
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// Read parses a trace file written by WriteFile (or any trace-event JSON
// object form).
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("trace %s: not trace-event JSON: %v", path, err)
	}
	return &f, nil
}
