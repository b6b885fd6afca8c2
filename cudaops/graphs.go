//go:build stokecuda

package cudaops

/*
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"
)

// CUDA Graphs by stream capture (CUDA driver API, "Stream Management" and
// "Graph Management"; the programming guide's "Creating a Graph Using
// Stream Capture"): work queued on a capturing stream is recorded instead of
// run, and the executable graph made from it replays that work with one
// cuGraphLaunch. gorgonia.org/cu v0.9.6 has no binding for the capture
// calls, so these are ours (through the jump table, gen_tramp.sh). The
// caller makes the device's context current, as for every driver call here.

// CaptureMode is how a capture restricts the potentially unsafe calls
// (cuMemAlloc and the like) of other threads and of its own
// (cuThreadExchangeStreamCaptureMode's documentation).
type CaptureMode int

const (
	// CaptureGlobal: no thread may make unsafe calls while the capture lasts.
	CaptureGlobal CaptureMode = C.CU_STREAM_CAPTURE_MODE_GLOBAL
	// CaptureThreadLocal: only the capturing thread may not.
	CaptureThreadLocal CaptureMode = C.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
	// CaptureRelaxed: no restriction, and the capture may end on any thread.
	CaptureRelaxed CaptureMode = C.CU_STREAM_CAPTURE_MODE_RELAXED
)

// The CUresult codes of stream capture (cuda.h's CUresult descriptions).
const (
	ErrCaptureUnsupported = C.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED  // 900: not permitted while the stream captures
	ErrCaptureInvalidated = C.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED  // 901: an earlier error invalidated the capture
	ErrCaptureUnmatched   = C.CUDA_ERROR_STREAM_CAPTURE_UNMATCHED    // 903: the capture did not begin on this stream
	ErrCaptureUnjoined    = C.CUDA_ERROR_STREAM_CAPTURE_UNJOINED     // 904: a forked stream was not joined back
	ErrCaptureImplicit    = C.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT     // 906: the legacy stream used during a capture
	ErrCapturedEvent      = C.CUDA_ERROR_CAPTURED_EVENT              // 907: a wait on or query of a captured event
	ErrCaptureWrongThread = C.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD // 908: ended on another thread
)

// GraphError is a failed capture or graph call, with the driver's code.
type GraphError struct {
	Call string
	Code int
}

func (e *GraphError) Error() string {
	var name *C.char
	C.cuGetErrorName(C.CUresult(e.Code), &name)
	s := fmt.Sprintf("cudaops: %s: CUDA error %d", e.Call, e.Code)
	if name != nil {
		s += " (" + C.GoString(name) + ")"
	}
	switch e.Code {
	case ErrCaptureInvalidated:
		s += ": an earlier call during the capture was not permitted (a synchronization, an allocation, a pageable copy); the capture is void"
	case ErrCaptureUnsupported, ErrCaptureImplicit:
		s += ": not permitted while a stream captures"
	}
	return s
}

func graphResult(call string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &GraphError{Call: call, Code: int(r)}
}

func cstream(s cu.Stream) C.CUstream { return C.CUstream(unsafe.Pointer(s.C())) }

// Capture is a stream capture in progress.
type Capture struct {
	s    cu.Stream
	mode CaptureMode
	done bool
}

// BeginCapture puts s in capture mode: what is queued on it (and on streams
// that wait on its events) is recorded until End. Except in CaptureRelaxed,
// the driver requires End on the OS thread that began the capture, so
// BeginCapture locks the calling goroutine to its thread until End, which
// that goroutine must call.
func BeginCapture(s cu.Stream, mode CaptureMode) (*Capture, error) {
	if mode != CaptureRelaxed {
		runtime.LockOSThread()
	}
	if err := graphResult("cuStreamBeginCapture", C.cuStreamBeginCapture(cstream(s), C.CUstreamCaptureMode(mode))); err != nil {
		if mode != CaptureRelaxed {
			runtime.UnlockOSThread()
		}
		return nil, err
	}
	return &Capture{s: s, mode: mode}, nil
}

// End ends the capture and returns its graph. If a call during the capture
// was not permitted, the capture was invalidated: End returns a GraphError
// with ErrCaptureInvalidated (or the code of what else was wrong) and no
// graph; the stream leaves capture mode either way.
func (c *Capture) End() (*Graph, error) {
	if c.done {
		return nil, fmt.Errorf("cudaops: Capture.End called twice")
	}
	var g C.CUgraph
	r := C.cuStreamEndCapture(cstream(c.s), &g)
	if r == C.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD {
		return nil, graphResult("cuStreamEndCapture", r) // still capturing: End again from the right goroutine
	}
	c.done = true
	if c.mode != CaptureRelaxed {
		runtime.UnlockOSThread()
	}
	if err := graphResult("cuStreamEndCapture", r); err != nil {
		return nil, err
	}
	return &Graph{g: g}, nil
}

// CaptureStatus reports whether s is capturing (cuStreamIsCapturing) and,
// if so, whether the capture is still valid.
func CaptureStatus(s cu.Stream) (capturing, valid bool, err error) {
	var st C.CUstreamCaptureStatus
	if err := graphResult("cuStreamIsCapturing", C.cuStreamIsCapturing(cstream(s), &st)); err != nil {
		return false, false, err
	}
	return st != C.CU_STREAM_CAPTURE_STATUS_NONE, st == C.CU_STREAM_CAPTURE_STATUS_ACTIVE, nil
}

// Graph is a captured graph.
type Graph struct{ g C.CUgraph }

// Instantiate makes the executable graph, a snapshot of g: destroying g
// after does not change it.
func (g *Graph) Instantiate() (*GraphExec, error) {
	var x C.CUgraphExec
	var log [256]C.char
	if r := C.cuGraphInstantiate(&x, g.g, nil, &log[0], C.size_t(len(log))); r != C.CUDA_SUCCESS {
		err := &GraphError{Call: "cuGraphInstantiate", Code: int(r)}
		if msg := C.GoString(&log[0]); msg != "" {
			err.Call += " (" + msg + ")"
		}
		return nil, err
	}
	return &GraphExec{x: x}, nil
}

// Destroy frees the graph.
func (g *Graph) Destroy() error { return graphResult("cuGraphDestroy", C.cuGraphDestroy(g.g)) }

// GraphExec is an executable graph.
type GraphExec struct{ x C.CUgraphExec }

// Launch queues the whole graph on s: ordered after the work queued on s
// before, and after the previous launch of the same graph.
func (x *GraphExec) Launch(s cu.Stream) error {
	return graphResult("cuGraphLaunch", C.cuGraphLaunch(x.x, cstream(s)))
}

// Destroy frees the executable graph (a launch in flight completes first).
func (x *GraphExec) Destroy() error {
	return graphResult("cuGraphExecDestroy", C.cuGraphExecDestroy(x.x))
}
