package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/tensor"
)

// TestCPUTensorAddIsTheStandardEngines: the CPU engine's Add gives the
// standard engine's bits, into the same tensor (the reuse one, a with
// UseUnsafe, a new one otherwise), on 1 and several parts, and leaves
// what it does not handle (a view) to the standard engine.
func TestCPUTensorAddIsTheStandardEngines(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 1000, 3*addPart + 17} {
		mk := func() *tensor.Dense {
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(rng.NormFloat64()) * float32(rng.IntN(1000))
			}
			return tensor.New(tensor.WithShape(n), tensor.WithBacking(d), tensor.WithEngine(cpuTensor{}))
		}
		a, b := mk(), mk()
		std := func(opts ...tensor.FuncOpt) []float32 {
			x := a.Clone().(*tensor.Dense)
			tensor.WithEngine(tensor.StdEng{})(x)
			r, err := tensor.StdEng{}.Add(x, b, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Clone(r.Data().([]float32))
		}
		want := std()

		reuse := mk()
		got, err := tensor.Add(a, b, tensor.WithReuse(reuse))
		if err != nil || got != tensor.Tensor(reuse) || !slices.Equal(reuse.Float32s(), want) {
			t.Fatalf("n=%d: Add with reuse: err %v, into the reuse tensor %v, same bits %v", n, err, got == tensor.Tensor(reuse), slices.Equal(reuse.Float32s(), want))
		}
		got, err = tensor.Add(a, b)
		if err != nil || got == tensor.Tensor(a) || !slices.Equal(got.Data().([]float32), want) {
			t.Fatalf("n=%d: safe Add: err %v, a new tensor %v, same bits", n, err, got != tensor.Tensor(a))
		}
		aa := a.Clone().(*tensor.Dense)
		got, err = tensor.Add(aa, b, tensor.UseUnsafe())
		if err != nil || got != tensor.Tensor(aa) || !slices.Equal(aa.Float32s(), want) {
			t.Fatalf("n=%d: unsafe Add: err %v, into a %v, same bits %v", n, err, got == tensor.Tensor(aa), slices.Equal(aa.Float32s(), want))
		}
	}
	// a strided view is the standard engine's, which reads it through its iterator
	m := tensor.New(tensor.WithShape(4, 6), tensor.WithBacking(make([]float32, 24)), tensor.WithEngine(cpuTensor{}))
	for i := range 24 {
		m.Float32s()[i] = float32(i)
	}
	v, err := m.Slice(nil, tensor.S(0, 3))
	if err != nil {
		t.Fatal(err)
	}
	if flat32(v) != nil {
		t.Fatal("flat32 of a strided view is not nil")
	}
	ones := tensor.New(tensor.WithShape(4, 3), tensor.WithBacking([]float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}), tensor.WithEngine(cpuTensor{}))
	r, err := tensor.Add(v, ones)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tensor.StdEng{}.Add(v, ones)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Data().([]float32), w.Data().([]float32)) {
		t.Fatalf("Add of a view: %v, the standard engine's %v", r.Data(), w.Data())
	}
}

// TestResNetValuesCarryTheCPUTensorEngine: after a step, every float32
// tensor bound to a ResNet's nodes (the ops' outputs, the shared
// gradients, gorgonia's fan-out sums) has the CPU engine's tensor engine,
// so that gorgonia's Adds run on all cores.
func TestResNetValuesCarryTheCPUTensorEngine(t *testing.T) {
	spec := Spec{Arch: "resnet20", InputSize: 16, Classes: 10}
	m := newModel(t, spec, Options{Batch: 4, Seed: 1, Momentum: 0.9})
	rng := rand.New(rand.NewPCG(1, 2))
	x := randomInput(rng, 4*3*16*16)
	if _, err := m.TrainStep(x, []int32{1, 2, 3, 4}, 4, 0.01); err != nil {
		t.Fatal(err)
	}
	n, other := 0, 0
	for _, node := range m.g.AllNodes() {
		d, ok := node.Value().(*tensor.Dense)
		if !ok || d.Dtype() != tensor.Float32 {
			continue
		}
		n++
		if _, ok := d.Engine().(cpuTensor); !ok {
			other++
			t.Logf("%v: engine %T", node, d.Engine())
		}
	}
	if n == 0 || other != 0 {
		t.Fatalf("%d of %d float32 values have another engine", other, n)
	}
}
