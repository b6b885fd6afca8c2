package cpuops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBatchNormLargePlanes: BatchNorm's training forward and backward at a
// ResNet-sized plane (the vector loops' whole width), against the float64
// gradient formula from the float64 batch statistics.
func TestBatchNormLargePlanes(t *testing.T) {
	const B, C, HW = 32, 3, 1024
	rng := rand.New(rand.NewPCG(1, 5))
	for _, relu := range []bool{false, true} {
		bn, _ := NewBatchNorm(B, C, HW, relu)
		x, dy := randF32(rng, bn.Len()), randF32(rng, bn.Len())
		for i := range x {
			x[i] = x[i]*0.5 + 0.3
		}
		gamma, beta := []float32{1, 0.5, 2}, []float32{0.1, -0.2, 0}
		rm, rv := make([]float32, C), []float32{1, 1, 1}
		y, dx := make([]float32, bn.Len()), make([]float32, bn.Len())
		dg, db := make([]float32, C), make([]float32, C)
		bn.Forward(x, gamma, beta, y, rm, rv, B, true)
		bn.Backward(x, gamma, y, dy, dx, dg, db)
		for c := 0; c < C; c++ {
			var s, n float64
			for i := 0; i < B; i++ {
				for j := 0; j < HW; j++ {
					s += float64(x[(i*C+c)*HW+j])
					n++
				}
			}
			m := s / n
			var v float64
			for i := 0; i < B; i++ {
				for j := 0; j < HW; j++ {
					d := float64(x[(i*C+c)*HW+j]) - m
					v += d * d
				}
			}
			v /= n
			is := 1 / math.Sqrt(v+1e-5)
			var sg, sgx float64
			g := func(k int) float64 {
				yy := (float64(x[k])-m)*is*float64(gamma[c]) + float64(beta[c])
				if relu && yy <= 0 {
					return 0
				}
				return float64(dy[k])
			}
			for i := 0; i < B; i++ {
				for j := 0; j < HW; j++ {
					k := (i*C+c)*HW + j
					sg += g(k)
					sgx += g(k) * (float64(x[k]) - m) * is
				}
			}
			if math.Abs(float64(db[c])-sg) > 1e-5*n || math.Abs(float64(dg[c])-sgx) > 1e-5*n {
				t.Errorf("relu=%v channel %d: dbeta %v, dgamma %v; want %v, %v", relu, c, db[c], dg[c], sg, sgx)
			}
			var worst, maxRef float64
			for i := 0; i < B; i++ {
				for j := 0; j < HW; j++ {
					k := (i*C+c)*HW + j
					want := float64(gamma[c]) * is / n * (n*g(k) - sg - (float64(x[k])-m)*is*sgx)
					worst = math.Max(worst, math.Abs(float64(dx[k])-want))
					maxRef = math.Max(maxRef, math.Abs(want))
				}
			}
			if worst > 1e-5*maxRef {
				t.Errorf("relu=%v channel %d: dx off by %v, of at most %v", relu, c, worst, maxRef)
			}
		}
	}
}
