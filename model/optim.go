package model

import (
	"fmt"
	"math"
	"slices"

	G "gorgonia.org/gorgonia"

	"stoke/gemm"
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

// Optimizer is an update rule of torch.optim, applied to one parameter at a
// time through an engine's Updater, so that every arch uses every
// optimizer on every engine. Options.Optimizer, Momentum, Nesterov and the
// Adam settings choose one, once (Options.optimizer).
type Optimizer interface {
	// Slots are the suffixes of the per-parameter state tensors, in
	// PyTorch's names and in the order the optimizer state lists them.
	Slots() []string
	// Step updates w (n elements) from grad and the Slots' values at step
	// t (1 on the first); all are values of u's engine.
	Step(u Updater, w, grad G.Value, slots []G.Value, n int, lr, wd float32, t int64) error
}

// Updater is an engine's optimizer kernels, on its values: SGDUpdate,
// SGDNesterovUpdate and AdamWUpdate on n elements.
type Updater interface {
	SGD(w, grad, v G.Value, n int, lr, momentum, wd float32, first bool) error
	SGDNesterov(w, grad, v G.Value, n int, lr, momentum, wd float32, first bool) error
	AdamW(w, grad, m, v G.Value, n int, lr, b1, b2, eps, wd float32, t int64) error
}

// SGD is torch.optim.SGD (dampening 0): SGDUpdate.
type SGD struct{ Momentum float32 }

// Nesterov is torch.optim.SGD(nesterov=True): SGDNesterovUpdate.
type Nesterov struct{ Momentum float32 }

// AdamW is torch.optim.AdamW (amsgrad off): AdamWUpdate.
type AdamW struct{ Beta1, Beta2, Eps float32 }

func (SGD) Slots() []string      { return []string{MomentumSuffix} }
func (Nesterov) Slots() []string { return []string{MomentumSuffix} }
func (AdamW) Slots() []string    { return []string{ExpAvgSuffix, ExpAvgSqSuffix} }

func (o SGD) Step(u Updater, w, grad G.Value, s []G.Value, n int, lr, wd float32, t int64) error {
	if err := u.SGD(w, grad, s[0], n, lr, o.Momentum, wd, t == 1); err != nil {
		return fmt.Errorf("SGD: %w", err)
	}
	return nil
}

func (o Nesterov) Step(u Updater, w, grad G.Value, s []G.Value, n int, lr, wd float32, t int64) error {
	if err := u.SGDNesterov(w, grad, s[0], n, lr, o.Momentum, wd, t == 1); err != nil {
		return fmt.Errorf("SGD (Nesterov): %w", err)
	}
	return nil
}

func (o AdamW) Step(u Updater, w, grad G.Value, s []G.Value, n int, lr, wd float32, t int64) error {
	if err := u.AdamW(w, grad, s[0], s[1], n, lr, o.Beta1, o.Beta2, o.Eps, wd, t); err != nil {
		return fmt.Errorf("AdamW: %w", err)
	}
	return nil
}

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
	if _, err := gemm.ParsePrecision(o.Precision.String()); err != nil {
		return fmt.Errorf("model.options.precision: %w", err)
	}
	return nil
}

// optimizer is the one place the options choose the update rule: AdamW
// with PyTorch's defaults (0.9, 0.999, 1e-8) when its three settings are 0,
// Nesterov, or plain SGD.
func (o Options) optimizer() Optimizer {
	switch {
	case o.Optimizer == OptimizerAdamW:
		if o.Beta1 == 0 && o.Beta2 == 0 && o.Eps == 0 {
			return AdamW{0.9, 0.999, 1e-8}
		}
		return AdamW{o.Beta1, o.Beta2, o.Eps}
	case o.Nesterov:
		return Nesterov{o.Momentum}
	}
	return SGD{o.Momentum}
}

// update takes one optimizer step on every parameter, on the engine's
// values: the weights, the gradient nodes' values (left there by backward,
// or by a GradSync) and the optimizer's slots.
func (m *Model) update(lr float32) error {
	for _, p := range m.params {
		wd := m.opt.WeightDecay
		if m.opt.NoDecayNormAndBias && p.noDecay {
			wd = 0
		}
		if err := m.optim.Step(m.eng, p.node.Value(), p.gradValue(), p.slotV, len(p.data), lr, wd, m.steps+1); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// gradValue is the parameter's gradient value: its node's, or, before
// backward first ran (a data-parallel rank's empty first step), its op's
// own output, which the GradSync filled.
func (p *param) gradValue() G.Value {
	if v := p.grad.Value(); v != nil {
		return v
	}
	if op, ok := p.grad.Op().(*kernelOp); ok {
		return op.out
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
	step, sq := AdamWScalars(lr, b1, b2, t)
	decay := 1 - lr*wd
	for i := range w {
		g := grad[i]
		w[i] *= decay
		m[i] = b1*m[i] + (1-b1)*g
		v[i] = b2*v[i] + (1-b2)*g*g
		w[i] -= step * m[i] / (float32(math.Sqrt(float64(v[i])))/sq + eps)
	}
}

// AdamWScalars are AdamWUpdate's bias-corrected step lr/(1−β1^t) and
// √(1−β2^t) at step t, computed in float64 and rounded to float32: the
// same on every engine.
func AdamWScalars(lr, b1, b2 float32, t int64) (step, sq float32) {
	bc1 := 1 - math.Pow(float64(b1), float64(t))
	bc2 := 1 - math.Pow(float64(b2), float64(t))
	return float32(float64(lr) / bc1), float32(math.Sqrt(bc2))
}

// NextStepScalars are the scalars the next training step's update at
// learning rate lr computes once for every parameter: AdamWScalars at the
// next step's t for AdamW, zeros for SGD (which needs lr alone). A device
// backend puts them in device memory before the step, where its update
// kernels read them (so that a step replayed from a captured graph uses
// its own).
func (m *Model) NextStepScalars(lr float32) (adamStep, adamSq float32) {
	if a, ok := m.optim.(AdamW); ok {
		return AdamWScalars(lr, a.Beta1, a.Beta2, m.steps+1)
	}
	return 0, 0
}

// Steps is the number of optimizer steps taken (optimizer.step).
func (m *Model) Steps() int64 { return m.steps }

// SGDUpdate is one step of PyTorch's SGD (torch.optim.SGD, dampening 0,
// no Nesterov) on one parameter:
//
//	g = grad + wd·w
//	v = g on the first step, else momentum·v + g
//	w = w − lr·v
//
// With momentum 0 the buffer is left alone and w −= lr·g.
//
// Each case is a loop of its own over slices of one length, with no branch
// or bounds check inside: the update streams three of a model's arrays
// (resnet50's 94 MB each) and was 5% of its step as one loop with both
// branches in it. The arithmetic is the same, operation for operation.
func SGDUpdate(w, grad, v []float32, lr, momentum, wd float32, first bool) {
	grad = grad[:len(w)]
	switch {
	case momentum == 0:
		for i, x := range w {
			w[i] = x - lr*(grad[i]+wd*x)
		}
	case first:
		v = v[:len(w)]
		for i, x := range w {
			g := grad[i] + wd*x
			v[i] = g
			w[i] = x - lr*g
		}
	default:
		v = v[:len(w)]
		for i, x := range w {
			g := momentum*v[i] + (grad[i] + wd*x)
			v[i] = g
			w[i] = x - lr*g
		}
	}
}

// optimizerTensors returns copies of the optimizer state needed for an
// exact resume, named as PyTorch's per-parameter state: each parameter's
// slots ("<param>.momentum_buffer" for SGD; ".exp_avg", ".exp_avg_sq" for
// AdamW), in the parameter's layout, then "optimizer.step" (shape [1]), the
// number of steps taken. They are the host copies, as of the last pull or
// Load.
func (m *Model) optimizerTensors() []NamedTensor {
	slots := m.optim.Slots()
	out := make([]NamedTensor, 0, len(slots)*len(m.params)+1)
	for _, p := range m.params {
		for i, suf := range slots {
			out = append(out, NamedTensor{Name: p.name + suf, Shape: slices.Clone(p.shape), Data: p.get(p.slots[i])})
		}
	}
	return append(out, NamedTensor{Name: StepName, Shape: []int{1}, Data: []float32{float32(m.steps)}})
}
