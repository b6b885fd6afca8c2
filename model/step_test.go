package model

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"stoke/augment"
)

var (
	stepMean = [3]float32{0.485, 0.456, 0.406}
	stepStd  = [3]float32{0.229, 0.224, 0.225}
)

// u8Batch is a uint8 batch of B images of spec's size with n valid rows
// (the padding holds garbage, as a reused buffer may), its labels, and the
// same batch normalized on the host as the trainer's CPU path always did
// (augment.NormalizeU8).
func u8Batch(rng *rand.Rand, spec Spec, B, n int) ([]uint8, []float32, []int32) {
	S := spec.InputSize
	u8 := make([]uint8, B*3*S*S)
	for i := range u8 {
		u8[i] = uint8(rng.IntN(256))
	}
	x := make([]float32, len(u8))
	augment.NormalizeU8(x, u8, S, stepMean, stepStd)
	labels := make([]int32, B)
	for i := range labels[:n] {
		labels[i] = int32(rng.IntN(spec.Classes))
	}
	return u8, x, labels
}

// TestStartMatchesTrainStep: a step through the seam (Start, Wait) on a
// float32 batch and on the same pixels as uint8 gives, bit for bit, what
// TrainStep gives on the host-normalized float32 batch: loss, hits, every
// weight and momentum buffer after each of three steps (two padded), and
// Eval's figures too. On the CPU the step is done when Start returns.
func TestStartMatchesTrainStep(t *testing.T) {
	opt := Options{Batch: 5, Seed: 7, Momentum: 0.9, WeightDecay: 1e-3, Mean: stepMean, Std: stepStd}
	ref := newModel(t, tinySpec, opt)
	f32 := newModel(t, tinySpec, opt)
	u8m := newModel(t, tinySpec, opt)
	rng := rand.New(rand.NewPCG(3, 4))
	for step, n := range []int{5, 3, 1} {
		u8, x, labels := u8Batch(rng, tinySpec, opt.Batch, n)
		want, err := ref.TrainStep(x, labels, n, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			m    *Model
			in   Input
		}{
			{"float32", f32, Input{X: slices.Clone(x), Labels: labels, N: n}},
			{"uint8", u8m, Input{U8: u8, Labels: labels, N: n}},
		} {
			p, err := c.m.Start(c.in, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			if p.Queued() {
				t.Errorf("%s: a CPU step is queued after Start; it should be done", c.name)
			}
			got, times, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s step %d: %+v, TrainStep %+v", c.name, step, got, want)
			}
			if times.Copy != 0 || times.Compute <= 0 {
				t.Errorf("%s step %d: times %+v, want no copy and the whole step as compute", c.name, step, times)
			}
			if !equalTensors(c.m.Params(), ref.Params()) || !equalTensors(c.m.OptimizerState(), ref.OptimizerState()) {
				t.Fatalf("%s step %d: weights or momentum differ from TrainStep's", c.name, step)
			}
		}
	}
	u8, x, labels := u8Batch(rng, tinySpec, opt.Batch, 4)
	want, err1 := ref.EvalStep(x, labels, 4)
	got32, err2 := f32.Eval(Input{X: x, Labels: labels, N: 4})
	got8, err3 := u8m.Eval(Input{U8: u8, Labels: labels, N: 4})
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	for _, got := range []EvalResult{got32, got8} {
		if got.LossSum != want.LossSum || got.Top1 != want.Top1 || got.Top5 != want.Top5 || !slices.Equal(got.Pred, want.Pred) {
			t.Fatalf("Eval %+v, EvalStep %+v", got, want)
		}
	}
}

// TestStartRefusesBadInputs: an input with no batch, with both kinds, a
// short uint8 batch, or a uint8 batch for a model without Mean and Std, is
// refused through Wait (the trainer reports a step's errors there), and
// the weights are unchanged.
func TestStartRefusesBadInputs(t *testing.T) {
	opt := Options{Batch: 2, Seed: 1, Mean: stepMean, Std: stepStd}
	m := newModel(t, tinySpec, opt)
	noNorm := newModel(t, tinySpec, Options{Batch: 2, Seed: 1})
	u8, x, labels := u8Batch(rand.New(rand.NewPCG(1, 1)), tinySpec, 2, 2)
	before := m.Params()
	for _, c := range []struct {
		name string
		m    *Model
		in   Input
	}{
		{"no batch", m, Input{Labels: labels, N: 2}},
		{"both kinds", m, Input{X: x, U8: u8, Labels: labels, N: 2}},
		{"short uint8", m, Input{U8: u8[1:], Labels: labels, N: 2}},
		{"uint8 without Std", noNorm, Input{U8: u8, Labels: labels, N: 2}},
		{"bad label", m, Input{U8: u8, Labels: []int32{0, 9}, N: 2}},
	} {
		p, err := c.m.Start(c.in, 0.1)
		if err != nil {
			t.Fatalf("%s: Start failed (%v); its errors should come from Wait", c.name, err)
		}
		if _, _, err := p.Wait(); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
		if _, err := c.m.Eval(c.in); err == nil {
			t.Errorf("%s: Eval accepted it", c.name)
		}
	}
	if !equalTensors(m.Params(), before) {
		t.Error("a refused input changed the weights")
	}
}
