package model

import (
	"errors"
	"fmt"
	"time"

	G "gorgonia.org/gorgonia"

	"stoke/augment"
)

// The trainer's seam (trainer.Backend) is a step on an Input: Start begins
// one and returns a Pending to wait on, Eval scores one (Logits returns its
// logits), State and Load move the weights and optimizer state, Close
// releases it all. *Model is the CPU backend; cudaops.Backend the CUDA
// one, with the same methods.

// Input is one batch for a step, one of: X, float32 already normalized
// (B·3·S·S, NCHW); U8, the same pixels as round(255·v) in CHW order, which
// the backend normalizes itself (Options.Mean and Options.Std here; on a
// GPU after a copy of a quarter of the bytes); or, for a Model only, Value,
// the batch already in the engine's memory: a (B,3,S,S) value of the
// model's engine (NewValue) whose rows from N on are zero (a device
// backend copies and normalizes its batches there itself, so that the copy
// overlaps the previous step). Its first N rows are valid, and Labels holds
// at least N class indices.
type Input struct {
	X      []float32
	U8     []uint8
	Value  G.Value
	Labels []int32
	N      int
	// Release, when set, lets a device backend return from Start before
	// the batch has left X or U8, which the caller then leaves untouched
	// until the backend calls Release: once it has seen the copy done, in
	// a later Start or in a call that waits for the device (Results,
	// Eval, State, Load, Close). nil: Start returns once the batch is off
	// the host. The CPU model calls it before Start returns.
	Release func()
}

// StepTimes are where a training step's time went, as its backend measures
// it: the copy of its batch to the device (zero on the CPU) and its
// compute (CUDA events on a GPU; on the CPU, the whole step).
type StepTimes struct {
	Copy, Compute time.Duration
}

// Pending is a training step that Start began.
type Pending interface {
	// Wait blocks until the step is done and returns its result, its
	// times and its error (a non-finite loss wraps ErrNonFiniteLoss).
	Wait() (StepResult, StepTimes, error)
	// Queued reports whether the step may still be computing once Start
	// has returned (queued on a device's stream behind its copy): the
	// loop then fetches and starts the next batch before waiting for it.
	// False when Start ran the step to the end, as on the CPU.
	Queued() bool
}

// StepScorer is an engine (its Values) that scores training steps on its
// own device while ScoresSteps is true (cudaops's, inside a Backend that
// keeps a ring of step results): its loss kernel (Layers.NewXent) builds
// the weighted target from the step's labels, which its backend copied to
// the device, and writes the loss and the top-1 hits there, flagging the
// first step whose loss is not finite; while that flag is set its updates
// (Updater) and CommitCopy do nothing, so the weights and the BatchNorm
// running statistics stay those before that step. The model then neither
// uploads the target nor reads the loss or the logits, and its StepResult
// is Deferred: the backend reports the figures later (Deferred.Results).
type StepScorer interface {
	ScoresSteps() bool
	// CommitCopy is Values.Copy, done only while no step's loss has been
	// non-finite.
	CommitCopy(dst, src G.Value) error
}

// commitCopy is what keeps a step's BatchNorm running statistics:
// CommitCopy on a StepScorer, else Copy.
func (m *Model) commitCopy(dst, src G.Value) error {
	if sc, ok := m.eng.Values.(StepScorer); ok && sc.ScoresSteps() {
		return sc.CommitCopy(dst, src)
	}
	return m.eng.Copy(dst, src)
}

// UndoSteps takes n steps off the optimizer's step count and the
// BatchNorms' num_batches_tracked: the last n steps, which a StepScorer's
// non-finite flag made change nothing, so that State reports the steps
// that did.
func (m *Model) UndoSteps(n int) {
	m.steps -= int64(n)
	for _, b := range m.bns {
		b.tracked -= int64(n)
	}
}

// ReplayedStep counts a training step that a device backend ran by
// replaying a captured graph of an earlier one (cudaops, cuda.graphs): a
// step of trainStepScored's whose launches ran without the model, so what
// that step does on the host besides launching is done here: the
// optimizer's step count and every BatchNorm's num_batches_tracked go up
// by one, as commitBN and trainStepScored do.
func (m *Model) ReplayedStep() {
	m.steps++
	for _, b := range m.bns {
		b.tracked++
	}
}

// Deferred is a backend whose Pending.Wait may return a Deferred result
// (the step is queued on a device and its figures stay there): Results
// reads them, waiting for the device, and returns one Outcome per such
// step whose Wait has returned and that no earlier call listed, in the
// order the steps were started. A
// non-finite loss is the Err of the step that produced it (wrapping
// ErrNonFiniteLoss, "parameters not updated", as a step that is not
// deferred says it); no step after it changed the weights, and none after
// it is listed. The CPU's Model never defers.
type Deferred interface {
	Results() ([]Outcome, error)
}

// Outcome is one deferred step's result, its times and its error.
type Outcome struct {
	Result StepResult
	Times  StepTimes
	Err    error
}

// done is a step Start ran to the end.
type done struct {
	res   StepResult
	times StepTimes
	err   error
}

func (d done) Wait() (StepResult, StepTimes, error) { return d.res, d.times, d.err }
func (d done) Queued() bool                         { return false }

// Start runs one training step on in: forward, backward and one optimizer
// step, on a batch whose first in.N rows are valid (padded rows add nothing
// to the loss or the gradients; on error the weights are unchanged). On
// the CPU the step is done when Start returns, and its error, also one
// about the input, comes from Wait. The whole of it counts as compute.
func (m *Model) Start(in Input, lr float32) (Pending, error) {
	t := time.Now()
	var d done
	in, err := m.hostInput(in)
	if err == nil {
		d.res, err = m.trainStep(in, lr)
	} else {
		err = fmt.Errorf("model.TrainStep: %w", err)
	}
	d.err = err
	d.times.Compute = time.Since(t)
	if in.Release != nil {
		in.Release()
	}
	return d, nil
}

// Eval runs the forward pass on in, BatchNorm on its running statistics,
// and scores the first in.N rows.
func (m *Model) Eval(in Input) (EvalResult, error) {
	in, err := m.hostInput(in)
	if err != nil {
		return EvalResult{}, fmt.Errorf("model.EvalStep: %w", err)
	}
	return m.evalStep(in)
}

// Logits runs the forward pass on in as Eval does and returns a copy of
// the first in.N rows of logits, in.N·Classes floats; in.Labels is not
// read.
func (m *Model) Logits(in Input) ([]float32, error) {
	in, err := m.hostInput(in)
	if err == nil {
		in.Labels = nil
		var logits []float32
		if logits, err = m.runForward(in); err == nil {
			return append([]float32(nil), logits[:in.N*m.spec.Classes]...), nil
		}
	}
	return nil, fmt.Errorf("model.Logits: %w", err)
}

// hostInput checks in and returns it with a U8 batch normalized (as
// augment.NormalizeU8 does, bit for bit) into the graph's own input buffer,
// as X: what the steps take.
func (m *Model) hostInput(in Input) (Input, error) {
	if err := in.Check(); err != nil {
		return in, err
	}
	if in.U8 == nil {
		return in, nil
	}
	if m.opt.Std == [3]float32{} {
		return in, errors.New("a uint8 batch needs Options.Mean and Options.Std to normalize it")
	}
	if len(in.U8) != len(m.x) {
		return in, fmt.Errorf("x has %d bytes, want %d (B=%d x 3 x %d x %d)", len(in.U8), len(m.x), m.opt.Batch, m.spec.InputSize, m.spec.InputSize)
	}
	augment.NormalizeU8(m.x, in.U8, m.spec.InputSize, m.opt.Mean, m.opt.Std)
	in.X, in.U8 = m.x, nil
	return in, nil
}

// Check says whether in holds exactly one kind of batch.
func (in Input) Check() error {
	n := 0
	for _, set := range []bool{in.X != nil, in.U8 != nil, in.Value != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("an input holds one of float32 (X) or uint8 (U8) pixels or an engine value (Value)")
	}
	return nil
}
