package model

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// TestInputValueIsTheSameStep: a step and an eval on an Input whose batch
// is already an engine value (Input.Value, what cudaops's Backend gives)
// give the bits of the same calls on X; an Input holding two kinds of
// batch, or none, is refused.
func TestInputValueIsTheSameStep(t *testing.T) {
	opt := Options{Batch: 3, Seed: 2, Momentum: 0.9}
	a, b := newModel(t, tinySpec, opt), newModel(t, tinySpec, opt)
	S := tinySpec.InputSize
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 3*3*S*S)
	for i := range x[:2*3*S*S] { // 2 valid rows, the padding zero
		x[i] = float32(rng.NormFloat64())
	}
	v, err := b.eng.NewValue(tensor.Shape{3, 3, S, S})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.eng.Upload(v, x); err != nil {
		t.Fatal(err)
	}
	labels := []int32{0, 2, 1}
	for step := range 2 {
		pa, _ := a.Start(Input{X: x, Labels: labels, N: 2}, 0.1)
		pb, _ := b.Start(Input{Value: v, Labels: labels, N: 2}, 0.1)
		ra, _, erra := pa.Wait()
		rb, _, errb := pb.Wait()
		if erra != nil || errb != nil || ra != rb {
			t.Fatalf("step %d: X %+v %v, Value %+v %v", step, ra, erra, rb, errb)
		}
	}
	ea, erra := a.Eval(Input{X: x, Labels: labels, N: 2})
	eb, errb := b.Eval(Input{Value: v, Labels: labels, N: 2})
	if erra != nil || errb != nil || ea.LossSum != eb.LossSum || ea.Top1 != eb.Top1 {
		t.Fatalf("eval: X %+v %v, Value %+v %v", ea, erra, eb, errb)
	}
	pa, _, _ := a.State()
	pb, _, _ := b.State()
	if !equalTensors(pa, pb) {
		t.Error("the weights differ after two steps")
	}
	for _, in := range []Input{{X: x, Value: v, Labels: labels, N: 2}, {Labels: labels, N: 2}} {
		if _, err := b.Eval(in); err == nil || !strings.Contains(err.Error(), "an input holds one of") {
			t.Errorf("Eval(%d kinds of batch): error %v", map[bool]int{true: 2, false: 0}[in.X != nil], err)
		}
	}
}
