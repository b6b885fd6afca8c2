//go:build stokecuda

package cudaops

import (
	"stoke/internal/paritytest"
	"stoke/model"
)

// The model's steps on float32 slices, for the tests that line a
// model.Model up with a Backend or a GraphEngine.

func trainStep(m *model.Model, x []float32, labels []int32, n int, lr float32) (model.StepResult, error) {
	return paritytest.TrainStep(m, x, labels, n, lr)
}

func evalStep(m *model.Model, x []float32, labels []int32, n int) (model.EvalResult, error) {
	return m.Eval(model.Input{X: x, Labels: labels, N: n})
}

func logits(m *model.Model, x []float32, n int) ([]float32, error) {
	return m.Logits(model.Input{X: x, N: n})
}
