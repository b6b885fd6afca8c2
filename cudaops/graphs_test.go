//go:build stokecuda

package cudaops

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"gorgonia.org/cu"
)

// graphStep queues one small training-like step on g's stream: the input
// copied from pinned memory, y = relu(x + w), an SGD update of w by y with
// momentum (state that carries from step to step), a copy of w, and a
// memset.
type graphStep struct {
	g                 *gpuEngine
	pinned            []byte
	x, w, v, y, wc, z buffer
	n                 int
}

func (st *graphStep) queue() error {
	x := st.x.(devBuf)
	if err := cu.MemcpyHtoDAsync(x.p, unsafe.Pointer(&st.pinned[0]), int64(4*st.n), st.g.s); err != nil {
		return err
	}
	return first(
		st.g.launch1D("add_relu", st.n, p(st.x), p(st.w), p(st.y), i(st.n)),
		st.g.sgd(st.w, st.y, st.v, st.n, 0.05, 0.9, 0, false),
		cu.MemcpyDtoDAsync(st.wc.(devBuf).p, st.w.(devBuf).p, int64(4*st.n), st.g.s),
		st.g.zero(st.z, 0, st.n),
	)
}

// reset puts the state back to w0, v = 0, z = 1.
func (st *graphStep) reset(w0 []float32) error {
	ones := make([]float32, st.n)
	for k := range ones {
		ones[k] = 1
	}
	return first(st.g.upload(st.w, w0), st.g.zero(st.v, 0, st.n), st.g.upload(st.z, ones), st.g.s.Synchronize())
}

func (st *graphStep) setInput(step int) {
	in := unsafe.Slice((*float32)(unsafe.Pointer(&st.pinned[0])), st.n)
	for k := range in {
		in[k] = float32((k*7+step*13)%23)/11 - 1
	}
}

// read returns y, the copy of w and z after the step.
func (st *graphStep) read(t *testing.T) [3][]float32 {
	var out [3][]float32
	for k, b := range []buffer{st.y, st.wc, st.z} {
		out[k] = make([]float32, st.n)
		if err := st.g.download(out[k], b); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestGPUGraphCaptureReplay: a captured step (pinned H2D copy, kernels,
// a device copy, a memset), replayed 3 times with new pinned input each
// time, gives bit for bit what queuing the same work directly gives (the
// kernels are elementwise: the same arithmetic in the same order); the
// capture itself runs nothing, and each replay counts as one launch.
func TestGPUGraphCaptureReplay(t *testing.T) {
	d := openOrSkip(t)
	const n = 3000
	pinned, err := d.Pinned().Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Pinned().Free(pinned)
	withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
		st := &graphStep{g: g, pinned: pinned, n: n}
		for _, b := range []*buffer{&st.x, &st.w, &st.v, &st.y, &st.wc, &st.z} {
			if *b, err = g.alloc(n); err != nil {
				return err
			}
		}
		w0 := make([]float32, n)
		for k := range w0 {
			w0[k] = float32(k%17)/8 - 1
		}
		const steps = 3
		var direct [steps][3][]float32
		if err := st.reset(w0); err != nil {
			return err
		}
		for r := range steps {
			st.setInput(r)
			if err := st.queue(); err != nil {
				return err
			}
			direct[r] = st.read(t)
		}

		if err := st.reset(w0); err != nil {
			return err
		}
		st.setInput(0)
		c, err := BeginCapture(s, CaptureGlobal)
		if err != nil {
			return err
		}
		if capturing, valid, err := CaptureStatus(s); err != nil || !capturing || !valid {
			t.Errorf("during the capture: capturing %v valid %v (%v)", capturing, valid, err)
		}
		if err := st.queue(); err != nil {
			c.End()
			return err
		}
		graph, err := c.End()
		if err != nil {
			return err
		}
		exec, err := graph.Instantiate()
		graph.Destroy() // the executable graph is a snapshot
		if err != nil {
			return err
		}
		defer exec.Destroy()
		w := make([]float32, n)
		if err := g.download(w, st.w); err != nil {
			return err
		}
		if !equalBits(w, w0) {
			t.Errorf("the capture ran the captured work: w changed before any launch")
		}
		for r := range steps {
			st.setInput(r)
			before := ReadDriverCounters()
			if err := exec.Launch(s); err != nil {
				return err
			}
			if l := ReadDriverCounters().Sub(before).Launches; l != 1 {
				t.Errorf("replay %d counted %d launches, want 1 (one cuGraphLaunch)", r, l)
			}
			got := st.read(t)
			for k, name := range []string{"y", "w", "z"} {
				if !equalBits(got[k], direct[r][k]) {
					t.Errorf("replay %d: %s differs from the directly queued step (first: %v, want %v)", r, name, got[k][:3], direct[r][k][:3])
				}
			}
		}
		return nil
	})
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if math.Float32bits(a[k]) != math.Float32bits(b[k]) {
			return false
		}
	}
	return true
}

// TestGPUGraphCaptureRefusesSync: synchronizing the stream during its
// capture is refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, which
// invalidates the capture: End returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
// and no graph, and the stream works normally after (the driver API
// reference and the programming guide's "Prohibited and Unhandled
// Operations" and "Invalidation").
func TestGPUGraphCaptureRefusesSync(t *testing.T) {
	d := openOrSkip(t)
	withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
		b, err := g.alloc(256)
		if err != nil {
			return err
		}
		c, err := BeginCapture(s, CaptureGlobal)
		if err != nil {
			return err
		}
		if err := g.zero(b, 0, 256); err != nil {
			t.Errorf("a memset during the capture: %v", err)
		}
		if err := s.Synchronize(); !errors.Is(err, cu.StreamCaptureUnsupported) {
			t.Errorf("cuStreamSynchronize during the capture returned %v, want %v", err, cu.StreamCaptureUnsupported)
		}
		if capturing, valid, _ := CaptureStatus(s); !capturing || valid {
			t.Errorf("after the refused sync: capturing %v valid %v, want an invalidated capture", capturing, valid)
		}
		graph, err := c.End()
		var ge *GraphError
		if !errors.As(err, &ge) || ge.Code != ErrCaptureInvalidated || graph != nil {
			t.Errorf("End after the refused sync: graph %v, error %v; want no graph and CUDA error %d", graph, err, ErrCaptureInvalidated)
		}
		if capturing, _, _ := CaptureStatus(s); capturing {
			t.Errorf("the stream still captures after End")
		}
		return first(g.zero(b, 0, 256), s.Synchronize())
	})
}

// TestStandInGraphReportsFreedMemory: a graph replayed after the memory its
// kernel uses was freed is an illegal access on hardware; the stand-in
// reports it (naming the kernel and the freed allocation) and the
// context's error becomes sticky. In a child process: the report counts as
// a stand-in error.
func TestStandInGraphReportsFreedMemory(t *testing.T) {
	if os.Getenv("STOKE_STANDIN_CHILD") == "graph-free" {
		d := openStandInOrSkip(t)
		withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
			mem, err := cu.MemAlloc(4 * 256)
			if err != nil {
				return err
			}
			b := devBuf{mem, 256}
			c, err := BeginCapture(s, CaptureGlobal)
			if err != nil {
				return err
			}
			if err := g.launch1D("add_f32", 256, p(b), p(b), p(b), i(256)); err != nil {
				return err
			}
			graph, err := c.End()
			if err != nil {
				return err
			}
			exec, err := graph.Instantiate()
			if err != nil {
				return err
			}
			if err := first(graph.Destroy(), cu.MemFree(mem), exec.Launch(s)); err != nil {
				return err
			}
			t.Logf("sync after the replay: %v", s.Synchronize())
			return exec.Destroy()
		})
		return
	}
	openStandInOrSkip(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStandInGraphReportsFreedMemory$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "STOKE_STANDIN_CHILD=graph-free")
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{"cudasim: error: kernel add_f32: argument 0 no longer points into live memory", "that was freed",
		"sync after the replay: IllegalAddress"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q; the child said:\n%s", want, out)
		}
	}
}

// TestGPUGraphCaptureForkJoin: the training step's shape, a copy stream
// forked from the compute stream and joined back by events (the
// programming guide's fork/join capture): the copy from pinned memory on
// the copy stream, the kernel on the compute stream after it. Each replay
// reads the pinned buffer as it is then.
func TestGPUGraphCaptureForkJoin(t *testing.T) {
	d := openOrSkip(t)
	const n = 1024
	pinned, err := d.Pinned().Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Pinned().Free(pinned)
	in := unsafe.Slice((*float32)(unsafe.Pointer(&pinned[0])), n)
	withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
		cs, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer cs.Destroy()
		fork, err := cu.MakeEvent(cu.DisableTiming)
		if err != nil {
			return err
		}
		defer cu.DestroyEvent(&fork)
		join, err := cu.MakeEvent(cu.DisableTiming)
		if err != nil {
			return err
		}
		defer cu.DestroyEvent(&join)
		x, err := g.alloc(n)
		if err != nil {
			return err
		}
		y, err := g.alloc(n)
		if err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		c, err := BeginCapture(s, CaptureGlobal)
		if err != nil {
			return err
		}
		err = first(fork.Record(s), cs.Wait(fork, 0),
			cu.MemcpyHtoDAsync(x.(devBuf).p, unsafe.Pointer(&pinned[0]), 4*n, cs),
			join.Record(cs), s.Wait(join, 0),
			g.launch1D("add_f32", n, p(x), p(x), p(y), i(n)))
		graph, endErr := c.End()
		if err = first(err, endErr); err != nil {
			return err
		}
		defer graph.Destroy()
		exec, err := graph.Instantiate()
		if err != nil {
			return err
		}
		defer exec.Destroy()
		out := make([]float32, n)
		for r := range 2 {
			for k := range in {
				in[k] = float32(k*(r+1)) / 8
			}
			if err := exec.Launch(s); err != nil {
				return err
			}
			if err := g.download(out, y); err != nil {
				return err
			}
			for k := range out {
				if out[k] != 2*in[k] {
					t.Fatalf("replay %d: y[%d] = %v, want 2 x %v", r, k, out[k], in[k])
				}
			}
		}
		return nil
	})
}
