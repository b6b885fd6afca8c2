package model

import (
	"fmt"
	"math"
	"slices"
)

// Optimizers.
const (
	OptimizerSGD   = "sgd"
	OptimizerAdamW = "adamw"
)

// AdamW's state tensors, beside MomentumSuffix for SGD: PyTorch's names.
const (
	ExpAvgSuffix   = ".exp_avg"
	ExpAvgSqSuffix = ".exp_avg_sq"
)

func (o Options) validate() error {
	switch o.Optimizer {
	case "", OptimizerSGD, OptimizerAdamW:
	default:
		return fmt.Errorf("model.options.optimizer: must be %s or %s, got %q", OptimizerSGD, OptimizerAdamW, o.Optimizer)
	}
	if o.Nesterov && (o.Optimizer == OptimizerAdamW || o.Momentum == 0) {
		return fmt.Errorf("model.options.nesterov: needs SGD with momentum > 0")
	}
	for _, f := range []struct {
		name string
		v    float32
	}{{"beta1", o.Beta1}, {"beta2", o.Beta2}} {
		if !(f.v >= 0 && f.v < 1) {
			return fmt.Errorf("model.options.%s: must be in [0, 1), got %v", f.name, f.v)
		}
	}
	if !(o.Eps >= 0) || math.IsInf(float64(o.Eps), 0) {
		return fmt.Errorf("model.options.eps: must be finite and >= 0, got %v", o.Eps)
	}
	if !(o.LabelSmoothing >= 0 && o.LabelSmoothing < 1) {
		return fmt.Errorf("model.options.label_smoothing: must be in [0, 1), got %v", o.LabelSmoothing)
	}
	return nil
}

// adam returns β1, β2 and eps: PyTorch's defaults when all three are 0.
func (o Options) adam() (b1, b2, eps float32) {
	if o.Beta1 == 0 && o.Beta2 == 0 && o.Eps == 0 {
		return 0.9, 0.999, 1e-8
	}
	return o.Beta1, o.Beta2, o.Eps
}

// update takes one optimizer step on every parameter: on the host with
// grads, or on a device engine with the gradient nodes' values.
func (m *Model) update(grads [][]float32, lr float32) error {
	for i, p := range m.params {
		wd := m.opt.WeightDecay
		if m.opt.NoDecayNormAndBias && p.noDecay {
			wd = 0
		}
		switch {
		case m.dev:
			m.stale = true
			if err := m.devUpdate(p, lr, wd); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		case m.opt.Optimizer == OptimizerAdamW:
			b1, b2, eps := m.opt.adam()
			AdamWUpdate(p.data, grads[i], p.mom, p.mom2, lr, b1, b2, eps, wd, m.steps+1)
		case m.opt.Nesterov:
			SGDNesterovUpdate(p.data, grads[i], p.mom, lr, m.opt.Momentum, wd, m.steps == 0)
		default:
			SGDUpdate(p.data, grads[i], p.mom, lr, m.opt.Momentum, wd, m.steps == 0)
		}
	}
	return nil
}

// devUpdate is update's step on one parameter of a device engine, on the
// gradient node's value: the same three optimizers, the engine's kernels.
func (m *Model) devUpdate(p *param, lr, wd float32) error {
	w, g, n := p.node.Value(), p.grad.Value(), len(p.data)
	switch {
	case m.opt.Optimizer == OptimizerAdamW:
		b1, b2, eps := m.opt.adam()
		if err := m.re.AdamW(w, g, p.momV, p.mom2V, n, lr, b1, b2, eps, wd, m.steps+1); err != nil {
			return fmt.Errorf("AdamW: %w", err)
		}
	case m.opt.Nesterov:
		if err := m.re.SGDNesterov(w, g, p.momV, n, lr, m.opt.Momentum, wd, m.steps == 0); err != nil {
			return fmt.Errorf("SGD (Nesterov): %w", err)
		}
	default:
		if err := m.eng.SGD(w, g, p.momV, n, lr, m.opt.Momentum, wd, m.steps == 0); err != nil {
			return fmt.Errorf("SGD: %w", err)
		}
	}
	return nil
}

// SGDNesterovUpdate is torch.optim.SGD(nesterov=True, dampening 0):
//
//	g = grad + wd·w
//	v = g on the first step, else momentum·v + g
//	w = w − lr·(g + momentum·v)
func SGDNesterovUpdate(w, grad, v []float32, lr, momentum, wd float32, first bool) {
	for i := range w {
		g := grad[i] + wd*w[i]
		if first {
			v[i] = g
		} else {
			v[i] = momentum*v[i] + g
		}
		w[i] -= lr * (g + momentum*v[i])
	}
}

// AdamWUpdate is torch.optim.AdamW (amsgrad off) at step t (1 on the
// first), weight decay decoupled from the gradient:
//
//	w = w·(1 − lr·wd)
//	m = β1·m + (1−β1)·g,  v = β2·v + (1−β2)·g²
//	w = w − lr/(1−β1^t) · m / (√v/√(1−β2^t) + eps)
func AdamWUpdate(w, grad, m, v []float32, lr, b1, b2, eps, wd float32, t int64) {
	bc1 := 1 - math.Pow(float64(b1), float64(t))
	bc2 := 1 - math.Pow(float64(b2), float64(t))
	step := float32(float64(lr) / bc1)
	sq := float32(math.Sqrt(bc2))
	decay := 1 - lr*wd
	for i := range w {
		g := grad[i]
		w[i] *= decay
		m[i] = b1*m[i] + (1-b1)*g
		v[i] = b2*v[i] + (1-b2)*g*g
		w[i] -= step * m[i] / (float32(math.Sqrt(float64(v[i])))/sq + eps)
	}
}

// adamState returns the AdamW state, named as PyTorch's per-parameter state.
func (m *Model) adamState() []NamedTensor {
	out := make([]NamedTensor, 0, 2*len(m.params)+1)
	for _, p := range m.params {
		out = append(out,
			NamedTensor{Name: p.name + ExpAvgSuffix, Shape: slices.Clone(p.shape), Data: p.get(p.mom)},
			NamedTensor{Name: p.name + ExpAvgSqSuffix, Shape: slices.Clone(p.shape), Data: p.get(p.mom2)})
	}
	return append(out, NamedTensor{Name: StepName, Shape: []int{1}, Data: []float32{float32(m.steps)}})
}

// loadAdamState checks an AdamW state (empty: a fresh optimizer) and, when
// apply, restores it.
func (m *Model) loadAdamState(optState []NamedTensor, apply bool) error {
	if len(optState) == 0 {
		if apply {
			for _, p := range m.params {
				clear(p.mom)
				clear(p.mom2)
			}
			m.steps = 0
		}
		return nil
	}
	idx, err := index(optState, "optimizer state")
	if err != nil {
		return err
	}
	known := map[string]bool{StepName: true}
	for _, p := range m.params {
		for _, suf := range []string{ExpAvgSuffix, ExpAvgSqSuffix} {
			if err := check(idx, p.name+suf, p.shape); err != nil {
				return err
			}
			known[p.name+suf] = true
		}
	}
	if err := check(idx, StepName, []int{1}); err != nil {
		return err
	}
	s := float64(idx[StepName].Data[0])
	if s < 0 || s != math.Trunc(s) {
		return fmt.Errorf("%s = %v, want a whole number >= 0", StepName, s)
	}
	if name := unknown(idx, known); name != "" {
		return fmt.Errorf("unexpected tensor %q in optimizer state", name)
	}
	if apply {
		for _, p := range m.params {
			p.setInto(p.mom, idx[p.name+ExpAvgSuffix].Data)
			p.setInto(p.mom2, idx[p.name+ExpAvgSqSuffix].Data)
		}
		m.steps = int64(s)
	}
	return nil
}
