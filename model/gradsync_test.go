package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// scaleSync doubles every gradient in Wait, and records what it saw.
type scaleSync struct {
	t      *testing.T
	n      int
	ready  []int // parameter indices in the order handed over
	zeros  bool  // every gradient handed over was all zero
	waited bool
	grads  map[int][]float32
}

func (s *scaleSync) Begin(n int) {
	s.n, s.ready, s.zeros, s.waited, s.grads = n, nil, true, false, map[int][]float32{}
}
func (s *scaleSync) Ready(i int, g []float32) {
	if s.waited {
		s.t.Errorf("Ready(%d) after Wait", i)
	}
	s.ready = append(s.ready, i)
	s.grads[i] = g
	for _, v := range g {
		if v != 0 {
			s.zeros = false
		}
	}
}
func (s *scaleSync) Wait() error {
	s.waited = true
	for _, g := range s.grads {
		for j := range g {
			g[j] *= 2
		}
	}
	return nil
}

// TestGradSyncSitsBetweenBackwardAndUpdate: every gradient is handed over
// once per step, the output layer's before the first layer's (so that a
// bucket can start while backward goes on), and what Wait leaves is what
// the update applies: doubling the gradients is, bit for bit, doubling the
// learning rate (no weight decay).
func TestGradSyncSitsBetweenBackwardAndUpdate(t *testing.T) {
	opt := Options{Batch: 4, Seed: 3, Momentum: 0.9}
	synced, plain := newModel(t, tinySpec, opt), newModel(t, tinySpec, opt)
	s := &scaleSync{t: t}
	synced.SetGradSync(s)
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 3 {
		x := randomInput(rng, 4*3*6*6)
		labels := []int32{0, 1, 2, int32(step % 3)}
		r1, err := synced.TrainStep(x, labels, 3, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := plain.TrainStep(x, labels, 3, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if r1 != r2 {
			t.Fatalf("step %d: results %+v vs %+v", step, r1, r2)
		}
		if s.n != 3 || len(s.ready) != len(synced.params) || !s.waited {
			t.Fatalf("step %d: n=%d, handed over %v, waited %v", step, s.n, s.ready, s.waited)
		}
		sorted := slices.Clone(s.ready)
		slices.Sort(sorted)
		if sorted = slices.Compact(sorted); len(sorted) != len(synced.params) {
			t.Fatalf("step %d: handed over %v: not each parameter once", step, s.ready)
		}
		last := len(synced.params) - 1
		if slices.Index(s.ready, last) > slices.Index(s.ready, 0) {
			t.Fatalf("step %d: order %v: fc.bias (%d) after conv0.weight (0)", step, s.ready, last)
		}
	}
	if !equalTensors(synced.Params(), plain.Params()) { // (the momentum buffers are 2x)
		t.Fatal("doubling the gradients in Wait is not doubling the learning rate")
	}
}

// TestGradSyncEmptyStep: a rank whose slice of the batch is empty steps
// with zero gradients (and so, on a first step without weight decay, keeps
// its weights), and counts the step.
func TestGradSyncEmptyStep(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 2, Seed: 4, Momentum: 0.9})
	s := &scaleSync{t: t}
	m.SetGradSync(s)
	before := m.Params()
	r, err := m.TrainStep(make([]float32, 2*3*6*6), make([]int32, 2), 0, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if r != (StepResult{}) || !s.zeros || len(s.ready) != len(m.params) || s.n != 0 {
		t.Fatalf("empty step: result %+v, zero gradients %v, handed over %v", r, s.zeros, s.ready)
	}
	if !equalTensors(before, m.Params()) || m.steps != 1 {
		t.Fatalf("empty first step changed the weights, or was not counted (steps %d)", m.steps)
	}
	m.SetGradSync(nil)
	if _, err := m.TrainStep(make([]float32, 2*3*6*6), make([]int32, 2), 0, 0.1); err == nil {
		t.Fatal("n = 0 without a GradSync was accepted")
	}
}

// TestGradSizesMatchReady: for every layout, a step hands the GradSync
// exactly one gradient per entry of GradSizes, of that length, and none for
// the BatchNorm buffers that Params also lists (data-parallel set-up sizes
// its buckets from GradSizes: from Params, the ResNets' sample count was
// overwritten by gradients).
func TestGradSizesMatchReady(t *testing.T) {
	for _, spec := range []Spec{tinySpec,
		{Arch: "resnet20", InputSize: 8, Classes: 3},
		{Arch: "resnet18", Stem: StemImageNet, InputSize: 16, Classes: 3}} {
		m := newModel(t, spec, Options{Batch: 2, Seed: 1})
		sizes := m.GradSizes()
		s := &scaleSync{t: t}
		m.SetGradSync(s)
		S := spec.InputSize
		if _, err := m.TrainStep(randomInput(rand.New(rand.NewPCG(1, 1)), 2*3*S*S), []int32{0, 1}, 2, 0.01); err != nil {
			t.Fatal(err)
		}
		if len(s.ready) != len(sizes) {
			t.Errorf("%s: %d gradients handed over, GradSizes has %d (Params %d)", spec.Arch, len(s.ready), len(sizes), len(m.Params()))
		}
		for i, g := range s.grads {
			if i >= len(sizes) || len(g) != sizes[i] {
				t.Errorf("%s: gradient %d has %d floats; GradSizes %v", spec.Arch, i, len(g), sizes)
			}
		}
		if spec.Arch != "" && len(m.Params()) == len(sizes) {
			t.Errorf("%s: Params lists no buffers beside the %d gradients: the test no longer tells them apart", spec.Arch, len(sizes))
		}
	}
}
