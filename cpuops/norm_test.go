package cpuops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
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

// TestBatchNormAddReLUMatchesComposition: the fused BasicBlock end,
// ReLU(BatchNorm(x) + s), gives the bits of BatchNorm (no ReLU) then
// AddReLU, forward, and of ReLUBackward then BatchNorm's backward from the
// masked gradient, whose mask is also the shortcut's gradient: in training
// and evaluation, on padded batches (statistics of the first n samples
// only), at plane sizes on and off the vector widths, on this CPU's loops
// and on the portable ones.
func TestBatchNormAddReLUMatchesComposition(t *testing.T) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	for _, avx := range []bool{useAVX2, false} {
		useAVX2 = avx
		for _, s := range []struct{ B, C, HW, n int }{
			{4, 3, 5, 4}, {4, 3, 5, 3}, {2, 5, 1, 1}, {6, 2, 9, 4}, {3, 2, 67, 3}, {5, 3, 64, 2}, {8, 4, 256, 7},
			{3, 2, fusedPlane, 2}, {2, 3, fusedPlane + 13, 2}, {4, 2, fusedPlane, 4}, // BackwardAdd's fused pass
		} {
			testBatchNormAddReLU(t, s.B, s.C, s.HW, s.n, avx)
		}
	}
}

func testBatchNormAddReLU(t *testing.T, B, C, HW, n int, avx bool) {
	t.Helper()
	what := fmt.Sprintf("B=%d C=%d HW=%d n=%d avx2=%v", B, C, HW, n, avx)
	rng := rand.New(rand.NewPCG(uint64(B*1000+HW), uint64(n)))
	fused, err := NewBatchNormAddReLU(B, C, HW)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := NewBatchNorm(B, C, HW, false)
	N := fused.Len()
	x, sc, gamma, beta := randF32(rng, N), randF32(rng, N), randF32(rng, C), randF32(rng, C)
	for i := range x {
		x[i] = 2*x[i] + 0.5
	}
	rm, rv := randF32(rng, C), randF32(rng, C)
	for i := range rv {
		rv[i] = float32(math.Abs(float64(rv[i]))) + 0.5
	}
	dy := randF32(rng, N)
	dy[N-1] = float32(math.Copysign(0, -1)) // a −0 in the padding: the mask must keep its sign as ReLUBackward does
	for _, training := range []bool{false, true} {
		rmA, rvA, rmB, rvB := slices.Clone(rm), slices.Clone(rv), slices.Clone(rm), slices.Clone(rv)
		bnOut, want, got := make([]float32, N), make([]float32, N), make([]float32, N)
		for i := range got {
			got[i] = float32(math.NaN()) // every value must be written
		}
		plain.Forward(x, gamma, beta, bnOut, rmA, rvA, n, training)
		AddReLU(bnOut, sc, want)
		fused.ForwardAdd(x, gamma, beta, sc, got, rmB, rvB, n, training)
		sameBits(t, what+" y", got, want)
		sameBits(t, what+" running_mean", rmB, rmA)
		sameBits(t, what+" running_var", rvB, rvA)
	}
	// Backward of the last (training) forward.
	y := make([]float32, N)
	fused.ForwardAdd(x, gamma, beta, sc, y, slices.Clone(rm), slices.Clone(rv), n, true)
	d := make([]float32, N)
	ReLUBackward(y, dy, d)
	dxA, dgA, dbA := make([]float32, N), make([]float32, C), make([]float32, C)
	plain.Backward(x, gamma, y, d, dxA, dgA, dbA)
	dxB, dsB, dgB, dbB := make([]float32, N), make([]float32, N), make([]float32, C), make([]float32, C)
	for i := range dxB {
		dxB[i], dsB[i] = float32(math.NaN()), float32(math.NaN())
	}
	fused.BackwardAdd(x, gamma, y, dy, dxB, dsB, dgB, dbB)
	sameBits(t, what+" ds", dsB, d)
	sameBits(t, what+" dx", dxB, dxA)
	sameBits(t, what+" dgamma", dgB, dgA)
	sameBits(t, what+" dbeta", dbB, dbA)
}

// sameBits fails unless got and want are the same float32 bits.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (the unfused ops')", what, i, got[i], want[i])
		}
	}
}

// TestBatchNormAddReLUGradients: the fused op's gradients (x, gamma, beta
// and the shortcut) against central differences of the float64 reference
// ReLU(BatchNorm(x) + s), on a padded batch.
func TestBatchNormAddReLUGradients(t *testing.T) {
	const B, C, HW, n = 4, 2, 9, 3
	rng := rand.New(rand.NewPCG(4, 4))
	bn, _ := NewBatchNormAddReLU(B, C, HW)
	N := bn.Len()
	x, sc, gamma, beta, r := randF32(rng, N), randF32(rng, N), randF32(rng, C), randF32(rng, C), randF32(rng, N)
	rm, rv := make([]float32, C), []float32{1, 1}
	y := make([]float32, N)
	bn.ForwardAdd(x, gamma, beta, sc, y, rm, rv, n, true)
	x64, s64, g64, b64, r64 := f64(x), f64(sc), f64(gamma), f64(beta), f64(r)
	ref := func() []float64 {
		out, _, _ := refBN(B, C, HW, n, x64, g64, b64, nil, nil, true, false)
		for i := range out {
			out[i] = math.Max(out[i]+s64[i], 0)
		}
		return out
	}
	checkClose(t, "y", y, ref())
	dx, ds, dg, db := make([]float32, N), make([]float32, N), make([]float32, C), make([]float32, C)
	bn.BackwardAdd(x, gamma, y, r, dx, ds, dg, db)
	loss := func() float64 {
		var l float64
		for i, v := range ref() {
			if i < n*C*HW { // padded rows carry no loss
				l += r64[i] * v
			}
		}
		return l
	}
	checkClose(t, "dx", dx, finiteDiff(x64, loss))
	checkClose(t, "ds", ds[:n*C*HW], finiteDiff(s64, loss)[:n*C*HW])
	checkClose(t, "dgamma", dg, finiteDiff(g64, loss))
	checkClose(t, "dbeta", db, finiteDiff(b64, loss))
}

// TestBatchNormSameOnAnyCoreCount: a pass's runs of planes follow the core
// count, its sums are added per channel in sample order whatever the runs,
// so every output (y, the running statistics, dx, dγ, dβ, ds) has the same
// bits on 1, 2, 3 and 8 cores: plain, with ReLU and with Add, on a padded
// batch (n < B), on planes below and above fusedPlane, in training and in
// evaluation.
func TestBatchNormSameOnAnyCoreCount(t *testing.T) {
	for _, s := range []struct{ B, C, HW, n int }{{5, 7, 9, 4}, {3, 5, fusedPlane + 3, 3}, {9, 2, 64, 7}} {
		for _, kind := range []string{"plain", "relu", "add"} {
			rng := rand.New(rand.NewPCG(uint64(s.C), uint64(s.HW)))
			var bn *BatchNorm
			if kind == "add" {
				bn, _ = NewBatchNormAddReLU(s.B, s.C, s.HW)
			} else {
				bn, _ = NewBatchNorm(s.B, s.C, s.HW, kind == "relu")
			}
			x, sc, dy := randF32(rng, bn.Len()), randF32(rng, bn.Len()), randF32(rng, bn.Len())
			gamma, beta := randF32(rng, s.C), randF32(rng, s.C)
			run := func(procs int, training bool) [][]float32 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				rm, rv := make([]float32, s.C), make([]float32, s.C)
				for i := range rv {
					rm[i], rv[i] = 0.1*float32(i), 1+0.2*float32(i)
				}
				y, dx, ds := make([]float32, bn.Len()), make([]float32, bn.Len()), make([]float32, bn.Len())
				dg, db := make([]float32, s.C), make([]float32, s.C)
				if kind == "add" {
					bn.ForwardAdd(x, gamma, beta, sc, y, rm, rv, s.n, training)
				} else {
					bn.Forward(x, gamma, beta, y, rm, rv, s.n, training)
				}
				if !training {
					return [][]float32{y, rm, rv}
				}
				if kind == "add" {
					bn.BackwardAdd(x, gamma, y, dy, dx, ds, dg, db)
				} else {
					bn.Backward(x, gamma, y, dy, dx, dg, db)
				}
				return [][]float32{y, rm, rv, dx, dg, db, ds}
			}
			for _, training := range []bool{true, false} {
				one := run(1, training)
				for _, procs := range []int{2, 3, 8} {
					got := run(procs, training)
					for i := range one {
						if !slices.Equal(math32Bits(one[i]), math32Bits(got[i])) {
							t.Errorf("%v %s training=%v: output %d differs between 1 and %d cores", s, kind, training, i, procs)
						}
					}
				}
			}
		}
	}
}

func math32Bits(s []float32) []uint32 {
	b := make([]uint32, len(s))
	for i, v := range s {
		b[i] = math.Float32bits(v)
	}
	return b
}
