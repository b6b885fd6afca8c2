package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Every input node is named: gorgonia hash-conses nodes, so two unnamed
// inputs of the same shape become one node (x and w, or x and r, silently
// aliased).
//
// These tests check gorgonia's own layers, which the graph no longer uses
// (ops.go replaces them): they stay as the evidence behind docs/gorgonia.md and
// model/doc.go's account of which built-ins are right. The graph's own ops
// are checked in ../cpuops (each kernel) and model_test.go (the whole
// graph's gradients against finite differences).
//
// gorgonia's ops are checked one at a time, in float64, on tiny inputs:
// loss = Σ r ⊙ op(inputs) for a fixed random r, whose gradient gorgonia
// derives symbolically, against central differences of the float64
// reference op (ref_test.go).

func TestConv2dGradient(t *testing.T) {
	for _, tc := range []struct{ cin, cout, size, k int }{
		{2, 3, 5, 3}, {1, 2, 4, 1}, {2, 2, 6, 5},
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.k), 1))
		const batch = 2
		xv := randF64(rng, batch*tc.cin*tc.size*tc.size)
		wv := randF64(rng, tc.cout*tc.cin*tc.k*tc.k)
		r := randF64(rng, batch*tc.cout*tc.size*tc.size)
		p := tc.k / 2

		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(batch, tc.cin, tc.size, tc.size), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(batch, tc.cin, tc.size, tc.size), tensor.WithBacking(xv))))
		w := G.NewTensor(g, tensor.Float64, 4, G.WithShape(tc.cout, tc.cin, tc.k, tc.k), G.WithName("w"), G.WithValue(tensor.New(tensor.WithShape(tc.cout, tc.cin, tc.k, tc.k), tensor.WithBacking(wv))))
		y, err := G.Conv2d(x, w, tensor.Shape{tc.k, tc.k}, []int{p, p}, []int{1, 1}, []int{1, 1})
		if err != nil {
			t.Fatal(err)
		}
		grads := weightedSumGrads(t, g, y, r, x, w)

		loss := func() float64 {
			var s float64
			per := tc.cin * tc.size * tc.size
			out := tc.cout * tc.size * tc.size
			for b := 0; b < batch; b++ {
				o := refConv(refTensor{tc.cin, tc.size, tc.size, xv[b*per : (b+1)*per]}, wv, make([]float64, tc.cout), tc.cout, tc.k)
				for i, v := range o.v {
					s += r[b*out+i] * v
				}
			}
			return s
		}
		checkFD(t, "conv2d x", xv, grads[0], loss)
		checkFD(t, "conv2d w", wv, grads[1], loss)
	}
}

func TestMaxPool2DGradient(t *testing.T) {
	for _, size := range []int{4, 5, 6} { // odd: the last row and column are dropped
		rng := rand.New(rand.NewPCG(uint64(size), 2))
		const batch, ch = 2, 3
		xv := randF64(rng, batch*ch*size*size)
		out := size / 2
		r := randF64(rng, batch*ch*out*out)

		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(batch, ch, size, size), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(batch, ch, size, size), tensor.WithBacking(xv))))
		y, err := G.MaxPool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := y.Shape(); got[2] != out || got[3] != out {
			t.Fatalf("MaxPool2D of %dx%d: shape %v, want %dx%d", size, size, got, out, out)
		}
		grads := weightedSumGrads(t, g, y, r, x)

		loss := func() float64 {
			var s float64
			per := ch * size * size
			for b := 0; b < batch; b++ {
				o := refMaxPool(refTensor{ch, size, size, xv[b*per : (b+1)*per]})
				for i, v := range o.v {
					s += r[b*ch*out*out+i] * v
				}
			}
			return s
		}
		checkFD(t, "maxpool x", xv, grads[0], loss)
	}
}

// TestGlobalAveragePoolGradient checks the reshape + one-axis Mean form
// used in place of GlobalAveragePool2D (docs/gorgonia.md).
func TestGlobalAveragePoolGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const batch, ch, size = 2, 3, 3
	xv := randF64(rng, batch*ch*size*size)
	r := randF64(rng, batch*ch)
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(batch, ch, size, size), G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(batch, ch, size, size), tensor.WithBacking(xv))))
	h, err := G.Reshape(x, tensor.Shape{batch, ch, size * size})
	if err != nil {
		t.Fatal(err)
	}
	y, err := G.Mean(h, 2)
	if err != nil {
		t.Fatal(err)
	}
	grads := weightedSumGrads(t, g, y, r, x)
	loss := func() float64 {
		var s float64
		for i := 0; i < batch*ch; i++ {
			var m float64
			for _, v := range xv[i*size*size : (i+1)*size*size] {
				m += v
			}
			s += r[i] * m / (size * size)
		}
		return s
	}
	checkFD(t, "global average pool x", xv, grads[0], loss)
}

// weightedSumGrads returns d/dwrt of Σ r ⊙ y, computed by gorgonia.
func weightedSumGrads(t *testing.T, g *G.ExprGraph, y *G.Node, r []float64, wrt ...*G.Node) [][]float64 {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	rn := G.NewTensor(g, tensor.Float64, y.Dims(), G.WithShape(y.Shape()...), G.WithName("r"), G.WithValue(tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(r))))
	prod, err := G.HadamardProd(y, rn)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := G.Sum(prod)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := G.Grad(loss, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer func() { vm.Close(); runtimeSetFinalizerNil(vm) }()
	r0 := append([]float64(nil), r...)
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	for i := range r {
		if r[i] != r0[i] {
			t.Fatalf("running the graph overwrote the constant input r[%d]: %v -> %v", i, r0[i], r[i])
		}
	}
	out := make([][]float64, len(gs))
	for i, gn := range gs {
		out[i] = append([]float64(nil), gn.Value().Data().([]float64)...)
	}
	return out
}

func checkFD(t *testing.T, what string, v, grad []float64, loss func() float64) {
	t.Helper()
	if len(grad) != len(v) {
		t.Fatalf("%s: gradient has %d values, want %d", what, len(grad), len(v))
	}
	const eps = 1e-6
	for i := range v {
		orig := v[i]
		v[i] = orig + eps
		lp := loss()
		v[i] = orig - eps
		lm := loss()
		v[i] = orig
		fd := (lp - lm) / (2 * eps)
		if math.Abs(grad[i]-fd) > 1e-7+1e-6*math.Abs(fd) {
			t.Errorf("%s[%d]: gradient %.9g, finite difference %.9g", what, i, grad[i], fd)
		}
	}
}

func randF64(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

func runtimeSetFinalizerNil(vm G.VM) { runtime.SetFinalizer(vm, nil) }
