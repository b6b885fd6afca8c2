package model

import (
	"errors"
	"fmt"
	"math"
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
	// Ready hands over parameter i's gradient (i in Params order).
	Ready(i int, grad []float32)
	// Wait returns once every gradient holds its synchronized value. It is
	// called also when backward failed, so that every rank calls the same
	// collectives; gradients never handed over are then as they are.
	Wait() error
}

// SetGradSync installs s (nil removes it) for the following TrainSteps.
// With one installed, TrainStep also accepts n = 0.
func (m *Model) SetGradSync(s GradSync) { m.sync = s }

// hookGradients makes each parameter's gradient op report to the GradSync
// the moment it has run. Gradients that are not an op of ours (none today)
// are handed over after backward instead.
func (m *Model) hookGradients() {
	for i, p := range m.params {
		op, ok := p.grad.Op().(*kernelOp)
		if !ok || op.outData == nil || len(op.outData) != len(p.data) {
			continue
		}
		p.gradData = op.outData
		op.after = func() {
			if m.sync != nil {
				m.sync.Ready(i, op.outData)
			}
		}
	}
}

// trainStepSync is TrainStep with a GradSync between backward and update.
func (m *Model) trainStepSync(x []float32, labels []int32, n int, lr float32) (StepResult, error) {
	if n < 0 || n > m.opt.Batch {
		return StepResult{}, fmt.Errorf("model.TrainStep: n = %d valid samples, want 0..%d", n, m.opt.Batch)
	}
	if m.dev {
		return StepResult{}, errors.New("model.TrainStep: a gradient hook runs on the CPU engine only")
	}
	m.sync.Begin(n)
	var (
		loss   float32
		logits []float32
		grads  = make([][]float32, len(m.params))
		err    error
	)
	if n == 0 {
		for i := len(m.params) - 1; i >= 0; i-- {
			p := m.params[i]
			if p.gradData == nil {
				err = errors.Join(err, fmt.Errorf("gradient of %s has no buffer of its own", p.name))
				continue
			}
			clear(p.gradData)
			grads[i] = p.gradData
			m.sync.Ready(i, p.gradData)
		}
	} else {
		loss, logits, grads, err = m.backward(x, labels, n)
		if err == nil {
			for i, p := range m.params {
				if p.gradData == nil { // not hooked: hand it over now
					m.sync.Ready(i, grads[i])
				}
			}
		}
	}
	if werr := m.sync.Wait(); werr != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: synchronizing gradients: %w", werr)
	}
	if err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	for i, p := range m.params {
		if g := grads[i]; !finite(g) {
			return StepResult{}, fmt.Errorf("model.TrainStep: %w in the synchronized gradient of %s (another rank's loss diverged); parameters not updated", ErrNonFiniteLoss, p.name)
		}
	}
	if n > 0 { // per-rank BatchNorm statistics, as PyTorch DDP keeps them
		m.commitBN()
	}
	if err := m.update(grads, lr); err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	m.steps++
	r := StepResult{Loss: float64(loss)}
	K := m.spec.Classes
	for i := 0; i < n; i++ {
		if Rank(logits[i*K:(i+1)*K], int(labels[i])) == 0 {
			r.Correct++
		}
	}
	return r, nil
}

func finite(v []float32) bool {
	var s float32
	for _, x := range v {
		s += x * 0
	}
	return !math.IsNaN(float64(s))
}
