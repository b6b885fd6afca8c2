package model

import (
	"errors"
	"fmt"
	"time"

	G "gorgonia.org/gorgonia"

	"stoke/augment"
)

// The trainer's seam (trainer.Backend) is a step on an Input: Start begins
// one and returns a Pending to wait on, Eval scores one, State and Load move
// the weights and optimizer state, Close releases it all. *Model is the CPU
// backend; cudaops.Backend the CUDA one, with the same methods.

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

// done is a step Start ran to the end.
type done struct {
	res   StepResult
	times StepTimes
	err   error
}

func (d done) Wait() (StepResult, StepTimes, error) { return d.res, d.times, d.err }
func (d done) Queued() bool                         { return false }

// Start runs one training step on in (TrainStep, after normalizing a uint8
// batch): on the CPU the step is done when Start returns, and its error,
// also one about the input, comes from Wait. The whole of it counts as
// compute.
func (m *Model) Start(in Input, lr float32) (Pending, error) {
	t := time.Now()
	var d done
	x, err := m.hostInput(in)
	if err == nil {
		m.in = in.Value
		d.res, err = m.TrainStep(x, in.Labels, in.N, lr)
		m.in = nil
	} else {
		err = fmt.Errorf("model.TrainStep: %w", err)
	}
	d.err = err
	d.times.Compute = time.Since(t)
	return d, nil
}

// Eval is EvalStep on an Input.
func (m *Model) Eval(in Input) (EvalResult, error) {
	x, err := m.hostInput(in)
	if err != nil {
		return EvalResult{}, fmt.Errorf("model.EvalStep: %w", err)
	}
	m.in = in.Value
	defer func() { m.in = nil }()
	return m.EvalStep(x, in.Labels, in.N)
}

// hostInput is in's batch as float32s: X itself, or U8 normalized (as
// augment.NormalizeU8 does, bit for bit) into the graph's own input buffer,
// which TrainStep and EvalStep then copy onto themselves; nil for a Value.
func (m *Model) hostInput(in Input) ([]float32, error) {
	if err := in.Check(); err != nil {
		return nil, err
	}
	if in.U8 == nil {
		return in.X, nil
	}
	if m.opt.Std == [3]float32{} {
		return nil, errors.New("a uint8 batch needs Options.Mean and Options.Std to normalize it")
	}
	if len(in.U8) != len(m.x) {
		return nil, fmt.Errorf("x has %d bytes, want %d (B=%d x 3 x %d x %d)", len(in.U8), len(m.x), m.opt.Batch, m.spec.InputSize, m.spec.InputSize)
	}
	augment.NormalizeU8(m.x, in.U8, m.spec.InputSize, m.opt.Mean, m.opt.Std)
	return m.x, nil
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
