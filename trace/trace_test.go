package trace

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestRecorderWritesTraceEventJSON(t *testing.T) {
	r := New(0)
	r.Thread(0, "train loop")
	r.Thread(1, "worker 0")
	t0 := r.start.Add(time.Millisecond)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Span(1, "load", "load", t0.Add(time.Duration(i)*time.Millisecond), t0.Add(time.Duration(i+1)*time.Millisecond), map[string]any{"i": i})
		}()
	}
	wg.Wait()
	r.Span(0, "step", "step", t0, t0.Add(2500*time.Microsecond), nil)
	path := filepath.Join(t.TempDir(), "t.json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta, spans int
	last := -1.0
	for _, e := range f.TraceEvents {
		switch e.Ph {
		case "M":
			meta++
		case "X":
			spans++
			if e.TS < last {
				t.Errorf("spans not sorted by start: %v after %v", e.TS, last)
			}
			last = e.TS
			if e.Name == "step" && (e.TS != 1000 || e.Dur != 2500) {
				t.Errorf("step span at %vus for %vus, want 1000us for 2500us", e.TS, e.Dur)
			}
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}
	if meta != 4 || spans != 5 {
		t.Errorf("%d metadata and %d span events, want 4 and 5", meta, spans)
	}
}

func TestLimitAndNil(t *testing.T) {
	r := New(2)
	for i := 0; i < 5; i++ {
		r.Span(0, "", "x", time.Now(), time.Now(), nil)
	}
	if len(r.Events()) != 2 || r.Dropped() != 3 {
		t.Errorf("kept %d, dropped %d; want 2 and 3", len(r.Events()), r.Dropped())
	}
	var none *Recorder
	none.Span(0, "", "x", time.Now(), time.Now(), nil) // must not panic
	none.Thread(0, "x")
	if none.Dropped() != 0 {
		t.Error("nil recorder dropped spans")
	}
}
