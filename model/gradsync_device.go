package model

import (
	"errors"
	"fmt"

	G "gorgonia.org/gorgonia"
)

// DeviceGradSync is a GradSync that takes the gradients where the engine
// keeps them (device memory on a GPU) instead of host copies: NCCL sums
// them on the device (cudaops.NCCLSync). The model hands it each gradient
// value with ReadyValue, in Ready's order, from the goroutine that runs the
// graph, right after the op that wrote it has been queued; Ready is not
// called. Wait must leave the synchronized gradient in each value before
// the update reads it, in the engine's order of work (on a GPU: the
// compute stream waits for the sums, the host need not), and report any
// failure it knows of; a failure it learns of later (an asynchronous one)
// it reports at a later Begin's Wait.
//
// Unlike the host path, the model does not check the synchronized
// gradients for non-finite values (that would read them on the host every
// step): a rank whose own loss is not finite still stops with
// ErrNonFiniteLoss, which ends the job on every rank.
type DeviceGradSync interface {
	GradSync
	// ReadyValue hands over trainable parameter i's gradient value. With
	// n = 0 at Begin its contents are not read: the sync writes zeros.
	ReadyValue(i int, grad G.Value) error
}

// trainStepDevice is trainStepSync for a DeviceGradSync: no gradient is
// read to the host or uploaded back.
func (m *Model) trainStepDevice(s DeviceGradSync, in Input, lr float32) (StepResult, error) {
	n := in.N
	if n < 0 || n > m.opt.Batch {
		return StepResult{}, fmt.Errorf("model.TrainStep: n = %d valid samples, want 0..%d", n, m.opt.Batch)
	}
	s.Begin(n)
	var (
		loss   float32
		logits []float32
		err    error
	)
	if n > 0 {
		loss, logits, err = m.backward(in)
		for i, p := range m.params {
			if err == nil && !p.hooked {
				err = s.ReadyValue(i, p.grad.Value())
			}
		}
	} else {
		// No backward: every gradient handed over (zeroed by the sync),
		// the output layer's first, as backward would hand them over.
		for i := len(m.params) - 1; i >= 0; i-- {
			v := m.params[i].gradValue()
			if v == nil {
				err = errors.Join(err, fmt.Errorf("gradient of %s has no value of its own before backward has run", m.params[i].name))
				continue
			}
			err = errors.Join(err, s.ReadyValue(i, v))
		}
	}
	if werr := s.Wait(); werr != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: synchronizing gradients: %w", werr)
	}
	if err != nil {
		return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
	}
	// Per-rank BatchNorm statistics, as PyTorch DDP keeps them.
	return m.finishStep(loss, logits, in.Labels, n, lr)
}
