//go:build stokecuda

package cudaops

import (
	"math"
	"math/rand/v2"
	"testing"

	"stoke/model"

	"stoke/gemm"
)

// TestGPUGemmPrecisionSteps: the precision reaches every GEMM of a training
// step on both paths. Three steps of the cnn from the same weights on the
// same batches, at tf32 and at bf16, on our own GEMM and on cuBLAS, and on
// our own at fp32: the two engines at one precision round the same inputs
// the same way and differ only by float32 summation order (and the rare
// input that order moves across a rounding boundary), while that precision
// against fp32 moves every GEMM input by up to 2^-11 (2^-8) of itself. So the
// own-vs-cuBLAS difference of the weights must be well below (a quarter of)
// the precision-vs-fp32 one; a GEMM that ignored the precision on either
// path would make the two alike. (The comparison with the CPU engine at the
// same precision waits for train.precision there.)
func TestGPUGemmPrecisionSteps(t *testing.T) {
	d := openOrSkip(t)
	setting := cublasOrSkip(t, d)
	opt := model.Options{Batch: 8, Seed: 7, Momentum: 0.9}
	ref, err := model.New(gpuSpec, opt)
	if err != nil {
		t.Fatal(err)
	}
	p0, v0 := state(t, ref)
	ref.Close()
	run := func(g string, prec gemm.Precision) [][]float32 {
		o := opt
		o.Precision = prec // the model's options name the engine's precision (model.NewOn checks)
		b, err := NewBackendWith(d, gpuSpec, o, true, imageNet, EngineOptions{Gemm: g, Cublas: setting, Precision: prec})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := b.Load(p0, v0); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(4, 4))
		S := gpuSpec.InputSize
		for range 3 {
			x := randBatch(rng, opt.Batch*3*S*S)
			labels := make([]int32, opt.Batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(gpuSpec.Classes))
			}
			if _, _, err := runStep(b, model.Input{X: x, Labels: labels, N: opt.Batch}, 0.05); err != nil {
				t.Fatal(err)
			}
		}
		ps, _ := state(t, b)
		out := make([][]float32, len(ps))
		for i := range ps {
			out[i] = ps[i].Data
		}
		return out
	}
	// diff is the largest relative difference of any weight between two runs.
	diff := func(a, b [][]float32) float64 {
		worst := 0.0
		for i := range a {
			for j := range a[i] {
				d := math.Abs(float64(a[i][j]-b[i][j])) / (1 + math.Abs(float64(b[i][j])))
				if math.IsNaN(d) {
					return math.Inf(1)
				}
				worst = max(worst, d)
			}
		}
		return worst
	}
	fp32 := run(GemmOwn, gemm.FP32)
	for _, prec := range []gemm.Precision{gemm.TF32, gemm.BF16} {
		own, cub := run(GemmOwn, prec), run(GemmCublas, prec)
		engines, ownVsFP32, cubVsFP32 := diff(own, cub), diff(own, fp32), diff(cub, fp32)
		t.Logf("%s: own vs cuBLAS %.3g; own vs fp32 %.3g; cuBLAS vs fp32 %.3g", prec, engines, ownVsFP32, cubVsFP32)
		if !d.Simulated() && !(ownVsFP32 > 4*engines) {
			// A real cuBLAS may round TF32/bf16 its own way (it is only allowed
			// reduced precision): there only our own kernel's rounding is held.
			t.Logf("%s: on this GPU cuBLAS rounds otherwise than round-to-nearest-even", prec)
			if !(ownVsFP32 > 0) {
				t.Errorf("%s: our own GEMM gives the fp32 weights: it ignores the precision", prec)
			}
			continue
		}
		if !(engines < ownVsFP32/4) || !(engines < cubVsFP32/4) {
			t.Errorf("%s: own and cuBLAS differ by %.3g, not well below their distance from fp32 (%.3g, %.3g): a path ignores the precision",
				prec, engines, ownVsFP32, cubVsFP32)
		}
	}
}
