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
// that Params and State also list.
func (m *Model) GradSizes() []int {
	sizes := make([]int, len(m.params))
	for i, p := range m.params {
		sizes[i] = len(p.data)
	}
	return sizes
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
	m.sync.Begin(n)
	var (
		loss   float32
		logits []float32
		grads  [][]float32
		err    error
	)
	if m.dev {
		loss, logits, grads, err = m.stagedGradients(x, labels, n)
	} else {
		loss, logits, grads, err = m.hostGradients(x, labels, n)
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
	if m.dev {
		if err := m.uploadGradients(grads); err != nil {
			return StepResult{}, fmt.Errorf("model.TrainStep: %w", err)
		}
	}
	// Per-rank BatchNorm statistics, as PyTorch DDP keeps them.
	return m.finishStep(loss, logits, grads, labels, n, lr)
}

// hostGradients is backward on the host engine, each gradient handed to
// the GradSync by its op as soon as it has run (hookGradients); n = 0 hands
// over zeros.
func (m *Model) hostGradients(x []float32, labels []int32, n int) (loss float32, logits []float32, grads [][]float32, err error) {
	if n > 0 {
		loss, logits, grads, err = m.backward(x, labels, n)
		if err == nil {
			for i, p := range m.params {
				if p.gradData == nil { // not hooked: hand it over now
					m.sync.Ready(i, grads[i])
				}
			}
		}
		return loss, logits, grads, err
	}
	grads = make([][]float32, len(m.params))
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
	return 0, nil, grads, err
}

// stagedGradients is backward on a device engine with the GradSync on host
// copies of the gradients: once backward has run, each is downloaded
// (output layer first) and handed over; uploadGradients puts the
// synchronized sums back before the update. The collectives do not
// overlap backward here, as they do on the host; n = 0 hands over zeros.
func (m *Model) stagedGradients(x []float32, labels []int32, n int) (loss float32, logits []float32, grads [][]float32, err error) {
	if m.staged == nil {
		m.staged = make([][]float32, len(m.params))
		for i, p := range m.params {
			m.staged[i] = make([]float32, len(p.data))
		}
	}
	if n > 0 {
		if loss, logits, _, err = m.backward(x, labels, n); err != nil {
			return 0, nil, m.staged, err // every rank still calls the collectives (Wait)
		}
	}
	for i := len(m.params) - 1; i >= 0; i-- {
		h := m.staged[i]
		if n == 0 {
			clear(h)
		} else if err = m.eng.Download(h, m.params[i].grad.Value()); err != nil {
			return 0, nil, m.staged, fmt.Errorf("downloading the gradient of %s: %w", m.params[i].name, err)
		}
		m.sync.Ready(i, h)
	}
	return loss, logits, m.staged, nil
}

// uploadGradients writes the synchronized gradients into the device
// gradient values the update reads.
func (m *Model) uploadGradients(grads [][]float32) error {
	for i, p := range m.params {
		g := p.grad.Value()
		if g == nil { // backward never ran: the first step had no samples
			return fmt.Errorf("gradient of %s: this rank's first step had no samples, so the device holds no gradient buffer yet (use a smaller data.batch_size or fewer ranks)", p.name)
		}
		if err := m.eng.Upload(g, grads[i]); err != nil {
			return fmt.Errorf("uploading the synchronized gradient of %s: %w", p.name, err)
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
