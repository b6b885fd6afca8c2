//go:build stokecuda

package cudaops

import (
	"errors"
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"stoke/model"
)

// CUDA Graphs of the training step (cuda.graphs). A Backend step is the
// same launches on the same device memory every time, but for what
// changes from step to step: the learning rate, AdamW's bias corrections,
// the step's number and its slot in the result ring (the step's arguments,
// stepArgs, which the update and loss kernels read from device memory, and
// putArgs copies into place before each step, outside any graph); which of
// the two input slots (and their labels) the batch is in; the number of
// valid rows n, a launch argument of the loss, BatchNorm and padding
// kernels; and whether the batch is uint8. So a step is captured once per
// (slot, n, uint8) on the compute stream (cuStreamBeginCapture, in
// thread-local mode: the capturing goroutine's unsafe calls are refused,
// and invalidate the capture) and every later step with the same key
// replays it with one cuGraphLaunch: the full batch in each slot, and the
// epoch's short last batch once it has been seen. The first optimizer step
// runs uncaptured (SGD's first-step momentum is a launch argument, and the
// first step allocates what the later ones reuse), and so does every step
// that goes through the host (a GradSync: data-parallel training). The
// replayed launches are the captured ones, so the weights are those of the
// same steps launched one by one (TestGPUGraphStepsEqualLaunches).

// The values of cuda.graphs.
const (
	GraphsAuto = "auto" // capture where the step can be captured; if a capture fails, launch one by one and say why
	GraphsOn   = "on"   // as auto, but a failed capture stops the run
	GraphsOff  = "off"  // launch every kernel of every step
)

// GraphsChoices are the values cuda.graphs takes, in the order shown.
var GraphsChoices = []string{GraphsAuto, GraphsOn, GraphsOff}

// maxGraphs is the most step graphs a Backend keeps: two slots times the
// full and the short last batch, for float32 and uint8 batches.
const maxGraphs = 8

// testBreakCapture, set only by a test, makes each capture synchronize its
// stream, which invalidates it (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
var testBreakCapture bool

// graphKey is what tells captured steps apart: the input slot, the valid
// rows and the batch's type.
type graphKey struct {
	slot, n int
	u8      bool
}

// stepGraphs are a Backend's captured steps.
type stepGraphs struct {
	mode    string
	execs   map[graphKey]*GraphExec
	off     string // auto after a failed capture: why the steps launch one by one from then on
	replays int    // steps run as a graph launch (the captured one's first launch included)
}

func (g *stepGraphs) free(d *Device) {
	if len(g.execs) == 0 {
		return
	}
	d.do(func() error {
		for k, x := range g.execs {
			x.Destroy()
			delete(g.execs, k)
		}
		return nil
	})
}

// GraphsNote says how the steps run: as CUDA Graphs (how many captured,
// how many steps replayed), or launched one by one and why.
func (b *Backend) GraphsNote() string {
	g := &b.graphs
	switch {
	case g.mode == GraphsOff:
		return "graphs=off"
	case g.off != "":
		return "graphs=off (" + g.off + ")"
	case b.synced:
		return "graphs=off (data-parallel steps wait for the host)"
	case testHostLoss:
		return "graphs=off (the loss is computed on the host)"
	}
	if len(g.execs) == 0 {
		return "graphs=" + g.mode + " (each step after the first captured once per input slot and batch size, then replayed)"
	}
	return fmt.Sprintf("graphs=%s (%d captured, %d steps replayed)", g.mode, len(g.execs), g.replays)
}

// GraphsFallback says why b's steps launch kernel by kernel after a
// capture failed under cuda.graphs auto; "" while they do not.
func (b *Backend) GraphsFallback() string { return b.graphs.off }

// graphed reports whether b's training steps have replayed a CUDA Graph.
func (b *Backend) graphed() bool { return b.graphs.replays > 0 }

// putArgs copies step k's arguments at learning rate lr to the device
// (through its pinned slot of argsPin, in order on the compute stream) and
// tells the engine they are there. The caller has made the context
// current; the previous step's host side is done (model.NextStepScalars
// reads its step count).
func (b *Backend) putArgs(k int, lr float32) error {
	st, sq := b.m.NextStepScalars(lr)
	a := stepArgs{lr: lr, adamStep: st, adamSq: sq, slot: int32(k % stepRing), step: int32(k)}
	w := a.words()
	// The slot's last copy (step k−stepRing) has run: Start reads the ring,
	// waiting for the device, every flushEvery steps, and a step that is
	// not deferred is waited for before the next but one starts.
	pin := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b.argsPin))), stepRing*stepArgsLen)[stepArgsLen*(k%stepRing):][:stepArgsLen]
	copy(pin, w[:])
	b.e.cur, b.e.curSet = a, true
	return cu.MemcpyHtoDAsync(b.e.sargs, unsafe.Pointer(unsafe.SliceData(pin)), 4*stepArgsLen, b.compute)
}

// capturable reports whether a step may be captured or replayed now: not
// the optimizer's first step, the loss on the device (no GradSync, whose
// step waits for the host) and graphs not off.
func (b *Backend) capturable() bool {
	return b.graphs.mode != GraphsOff && b.graphs.off == "" && b.score.on && b.m.Steps() > 0
}

// runStep runs a step whose batch is in slot s (its key), after its copy and
// its arguments: a replay of the key's graph, a capture of it, or the
// model's launches one by one.
func (b *Backend) runStep(key graphKey, s *slot, in model.Input, lr float32) (model.StepResult, error) {
	if b.capturable() {
		if x := b.graphs.execs[key]; x != nil {
			if err := b.dev.do(func() error { return x.Launch(b.compute) }); err != nil {
				return model.StepResult{}, err
			}
			b.m.ReplayedStep()
			b.graphs.replays++
			return model.StepResult{Deferred: true}, nil
		}
		if len(b.graphs.execs) < maxGraphs {
			return b.captureStep(key, s, in, lr)
		}
	}
	return b.launchStep(key, s, in, lr)
}

// launchStep runs the step's kernels one by one.
func (b *Backend) launchStep(key graphKey, s *slot, in model.Input, lr float32) (model.StepResult, error) {
	if err := b.dev.do(func() error { return b.prepare(s, key.n, key.u8) }); err != nil {
		return model.StepResult{}, err
	}
	p, err := b.m.Start(in, lr)
	if err != nil {
		return model.StepResult{}, err
	}
	r, _, err := p.Wait()
	return r, err
}

// captureStep captures the step's launches as key's graph and launches it:
// the step runs as every later replay of it will. If the capture fails
// (a call in it that a capture does not permit), the step's host side is
// undone and, with cuda.graphs auto, it and every later step are launched
// one by one; with on, the step fails, saying why.
func (b *Backend) captureStep(key graphKey, s *slot, in model.Input, lr float32) (model.StepResult, error) {
	before := b.m.Steps()
	var c *Capture
	err := b.dev.do(func() error {
		var err error
		c, err = BeginCapture(b.compute, CaptureThreadLocal)
		return err
	})
	var res model.StepResult
	var stepErr, endErr error
	var x *GraphExec
	if err == nil {
		if testBreakCapture {
			b.dev.do(func() error {
				b.compute.Synchronize() // not permitted while the stream captures: invalidates the capture
				return nil
			})
		}
		res, stepErr = b.launchStep(key, s, in, lr) // into the capture
		endErr = b.dev.do(func() error {
			g, err := c.End()
			if err != nil {
				return err
			}
			defer g.Destroy()
			x, err = g.Instantiate()
			return err
		})
		err = first(endErr, stepErr)
	}
	if err == nil {
		b.graphs.execs[key] = x
		if err = b.dev.do(func() error { return x.Launch(b.compute) }); err != nil {
			return model.StepResult{}, err
		}
		b.graphs.replays++
		return res, nil
	}
	var ge *GraphError
	if stepErr != nil && endErr == nil && !errors.As(stepErr, &ge) {
		return model.StepResult{}, stepErr // the step's own error, not the capture's
	}
	if b.m.Steps() > before {
		b.m.UndoSteps(int(b.m.Steps() - before)) // nothing it captured ran
	}
	why := fmt.Sprintf("capturing a step (slot %d, %d rows) failed: %v", key.slot, key.n, err)
	if b.graphs.mode == GraphsOn {
		return model.StepResult{}, fmt.Errorf("cudaops: cuda.graphs on: %s; cuda.graphs off (or auto) launches the kernels one by one", why)
	}
	b.graphs.off = why
	return b.launchStep(key, s, in, lr)
}
