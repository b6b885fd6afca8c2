package model

import (
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
)

// GradSync stands between backward and the optimizer update of a training
// step: data-parallel training (package trainer, over package dist) sums
// the ranks' gradients there. Every rank takes the same update from the
// same synchronized gradients, so the weights stay identical on all ranks.
//
// A step calls Begin, then Ready once for every parameter as soon as
// backward has produced its gradient (from the goroutine that runs the
// graph, while the rest of backward still runs: the output layer's first),
// then Wait; the update follows. Wait must leave in each gradient buffer
// the gradient to apply, in place; the buffers may be written until Wait
// returns and not after.
type GradSync interface {
	// Begin starts a step with n valid samples on this rank; n is 0 when
	// this rank's slice of the global batch is empty (a short last batch):
	// its gradients are then zero and no backward runs.
	Begin(n int)
	// Ready hands over trainable parameter i's gradient (i indexes
	// GradSizes).
	Ready(i int, grad []float32)
	// Wait returns once every gradient holds its synchronized value. It is
	// called also when backward failed, so that every rank calls the same
	// collectives; gradients never handed over are then as they are.
	Wait() error
}

// GradSizes is the length of each gradient a GradSync is handed, in
// Ready's order: the trainable parameters only, not the BatchNorm buffers
// that State also lists.
func (m *Model) GradSizes() []int {
	sizes := make([]int, len(m.params))
	for i, p := range m.params {
		sizes[i] = len(p.data)
	}
	return sizes
}

// SetGradSync installs s (nil removes it) for the following training
// steps. With one installed, a step also accepts n = 0. A DeviceGradSync
// is handed the gradient values themselves (gradsync_device.go).
func (m *Model) SetGradSync(s GradSync) { m.sync = s }

// hookGradients makes each parameter's gradient op hand its gradient to
// the GradSync the moment it has run (from the goroutine that runs the
// graph, while the rest of backward still runs). Gradients that are not an
// op of ours (none today) are handed over after backward instead.
func (m *Model) hookGradients() {
	m.grads = make([][]float32, len(m.params))
	for i, p := range m.params {
		op, ok := p.grad.Op().(*kernelOp)
		if !ok {
			continue
		}
		p.hooked = true
		op.after = func() error {
			if m.sync == nil {
				return nil
			}
			return m.handOver(i, op.out)
		}
	}
}

// handOver gives the GradSync parameter i's gradient v on the host
// (Values.Read: the value's own memory on the CPU, a download on a device),
// where Wait leaves the synchronized sum for putGradients.
func (m *Model) handOver(i int, v G.Value) error {
	if ds, ok := m.sync.(DeviceGradSync); ok {
		return ds.ReadyValue(i, v)
	}
	h, err := m.eng.Read(m.grads[i], v)
	if err != nil {
		return fmt.Errorf("reading the gradient of %s: %w", m.params[i].name, err)
	}
	m.grads[i] = h
	m.sync.Ready(i, h)
	return nil
}

// trainStepSync is trainStep with a GradSync between backward and update.
func (m *Model) trainStepSync(in Input, lr float32) (StepResult, error) {
	_, device := m.sync.(DeviceGradSync)
	n := in.N
	if n < 0 || n > m.opt.Batch {
		return StepResult{}, fmt.Errorf("model.TrainStep: n = %d valid samples, want 0..%d", n, m.opt.Batch)
	}
	m.sync.Begin(n)
	var (
		loss   float32
		logits []float32
		err    error
	)
	if n > 0 {
		loss, logits, err = m.backward(in)
		for i, p := range m.params {
			if err == nil && !p.hooked {
				err = m.handOver(i, p.grad.Value())
			}
		}
	} else {
		err = m.handOverZeros()
	}
	if werr := m.sync.Wait(); werr != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: synchronizing gradients: %w", werr)
	}
	if err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	if device { // the sums are in the values the update reads, unread on the host (DeviceGradSync)
		return m.finishStep(loss, logits, in.Labels, n, lr)
	}
	for i, p := range m.params {
		if !finite(m.grads[i]) {
			return StepResult{}, fmt.Errorf("model.TrainStep: %w in the synchronized gradient of %s (another rank's loss diverged); parameters not updated", ErrNonFiniteLoss, p.name)
		}
	}
	if err := m.putGradients(); err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	// Per-rank BatchNorm statistics, as PyTorch DDP keeps them.
	return m.finishStep(loss, logits, in.Labels, n, lr)
}

// handOverZeros is a step without samples on this rank (n = 0): no
// backward runs, and every gradient handed over is zero, the output
// layer's first, as backward would hand them over.
func (m *Model) handOverZeros() error {
	var err error
	for i := len(m.params) - 1; i >= 0; i-- {
		p := m.params[i]
		v := p.gradValue()
		if v == nil {
			err = errors.Join(err, fmt.Errorf("gradient of %s has no value of its own before backward has run", p.name))
			continue
		}
		if ds, ok := m.sync.(DeviceGradSync); ok {
			err = errors.Join(err, ds.ReadyValue(i, v)) // the sync writes the zeros
			continue
		}
		h, rerr := m.eng.Read(m.grads[i], v)
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("reading the gradient of %s: %w", p.name, rerr))
			continue
		}
		m.grads[i] = h
		clear(h)
		m.sync.Ready(i, h)
	}
	return err
}

// putGradients writes the synchronized gradients back into the values the
// update reads (Values.Upload: nothing to copy on the CPU, where they are
// those values' own memory).
func (m *Model) putGradients() error {
	for i, p := range m.params {
		if err := m.eng.Upload(p.gradValue(), m.grads[i]); err != nil {
			return fmt.Errorf("writing the synchronized gradient of %s: %w", p.name, err)
		}
	}
	return nil
}

func finite(v []float32) bool {
	var s float32
	for _, x := range v {
		s += x * 0
	}
	return !math.IsNaN(float64(s))
}
