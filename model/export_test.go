package model

import "fmt"

// What only the tests call: the steps on float32 slices, and the model's
// parts read on the host.

// engineOf is an Engine whose three roles are e's.
func engineOf(e interface {
	Values
	Layers
	Updater
}) Engine {
	return Engine{Values: e, Layers: e, Updater: e}
}

// backwardGrads is backward and each parameter's gradient on the host, in
// the graph's layout; the slices are valid until the next run.
func (m *Model) backwardGrads(x []float32, labels []int32, n int) (loss float32, logits []float32, grads [][]float32, err error) {
	if loss, logits, err = m.backward(Input{X: x, Labels: labels, N: n}); err != nil {
		return 0, nil, nil, err
	}
	grads = make([][]float32, len(m.params))
	for i, p := range m.params {
		if grads[i], err = m.eng.Read(nil, p.grad.Value()); err != nil {
			return 0, nil, nil, fmt.Errorf("gradient of %s: %w", p.name, err)
		}
	}
	return loss, logits, grads, nil
}

// TrainStep is a training step on a float32 batch (Start, then Wait).
func (m *Model) TrainStep(x []float32, labels []int32, n int, lr float32) (StepResult, error) {
	return m.trainStep(Input{X: x, Labels: labels, N: n}, lr)
}

// EvalStep is Eval on a float32 batch.
func (m *Model) EvalStep(x []float32, labels []int32, n int) (EvalResult, error) {
	return m.evalStep(Input{X: x, Labels: labels, N: n})
}

// Params is State's params, OptimizerState its optState: on the CPU, where
// reading them cannot fail.
func (m *Model) Params() []NamedTensor { return m.paramTensors() }

func (m *Model) OptimizerState() []NamedTensor { return m.optimizerTensors() }
