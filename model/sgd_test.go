package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sgdUpdateRef is SGDUpdate as one loop with the branches inside, the
// reference its cases are tested and timed against.
func sgdUpdateRef(w, grad, v []float32, lr, momentum, wd float32, first bool) {
	for i := range w {
		g := grad[i] + wd*w[i]
		if momentum != 0 {
			if first {
				v[i] = g
			} else {
				v[i] = momentum*v[i] + g
			}
			g = v[i]
		}
		w[i] -= lr * g
	}
}

// TestSGDUpdateIsTheOneLoop: each of SGDUpdate's loops (no momentum, the
// first step, a later step) gives the one-loop reference's bits on values
// with weight decay, and a wrong lr or a swapped case would show.
func TestSGDUpdateIsTheOneLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 1001
	for _, c := range []struct {
		momentum float32
		first    bool
	}{{0, false}, {0, true}, {0.9, true}, {0.9, false}} {
		w, g, v := randomInput(rng, n), randomInput(rng, n), randomInput(rng, n)
		w2, v2 := slices.Clone(w), slices.Clone(v)
		SGDUpdate(w, g, v, 0.1, c.momentum, 1e-4, c.first)
		sgdUpdateRef(w2, g, v2, 0.1, c.momentum, 1e-4, c.first)
		if !slices.Equal(w, w2) || !slices.Equal(v, v2) {
			t.Errorf("momentum %v first %v: SGDUpdate differs from the one loop", c.momentum, c.first)
		}
	}
}

// BenchmarkSGDUpdate times SGDUpdate beside the one-loop reference on
// resnet50's 23.5M parameters with momentum (go test -bench SGDUpdate ./model).
func BenchmarkSGDUpdate(b *testing.B) {
	n := 23528522
	w, g, v := make([]float32, n), make([]float32, n), make([]float32, n)
	for _, f := range []struct {
		name string
		fn   func(w, grad, v []float32, lr, momentum, wd float32, first bool)
	}{{"loops", SGDUpdate}, {"one-loop", sgdUpdateRef}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(5 * 4 * n)) // w, grad, v read; w, v written
			for range b.N {
				f.fn(w, g, v, 1e-3, 0.9, 1e-4, false)
			}
		})
	}
}
