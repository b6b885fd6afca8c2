//go:build stokecuda

package cudaops

// BackendCounters are the driver's running totals (ReadDriverCounters) as
// a backend reports them, with whether its training steps run as a CUDA
// Graph. The trainer takes two readings around an epoch's steps and writes
// the difference per step into metrics.jsonl (docs/cuda.md, "What a step
// costs the host").
type BackendCounters struct {
	DriverCounters
	// Graph: the backend's steps have replayed a captured CUDA Graph
	// (cuda.graphs, backend_graphs.go).
	Graph bool
}

// DriverCounters reads the counters for b's steps: the process's driver
// calls counted at the jump table (counters.c), so on a real GPU as under
// the stand-in, and whether b's steps run as a graph. ok is false once b is
// closed: its readings then say nothing of its steps.
//
// The counts are the process's, not b's alone: every caller of the driver
// in the process is counted, and cuBLAS's own kernel launches are not (it
// calls libcuda directly). A reading around one backend's steps is that
// backend's cost while nothing else in the process uses the device.
func (b *Backend) DriverCounters() (c BackendCounters, ok bool) {
	if b == nil || b.closed {
		return BackendCounters{}, false
	}
	return BackendCounters{DriverCounters: ReadDriverCounters(), Graph: b.graphed()}, true
}
