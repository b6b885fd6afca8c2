//go:build stokecuda

package cudaops

import (
	"math/rand/v2"
	"testing"
	"time"

	"stoke/model"

	"stoke/gemm"
)

// TestGPUStepTimes: the training step of resnet18 at 224 px, batch 64, for
// each GEMM (our own, cuBLAS) and precision (fp32, tf32, bf16): the
// compute time of each step from its events and the wall time between
// steps, after one warm-up step, as lines for the first lent GPU's log
// (.gpu/run.sh). Skipped under the stand-in (the host's figures), and
// cuBLAS's rows where the GPU machine has no cuBLAS (the log says so).
func TestGPUStepTimes(t *testing.T) {
	d := openOrSkip(t)
	skipOnStandIn(t, d, "step times")
	const B, steps = 64, 4
	spec := model.Spec{InputSize: 224, Classes: 1000, Arch: "resnet18", Stem: model.StemImageNet}
	opt := model.Options{Batch: B, Seed: 1, Momentum: 0.9, WeightDecay: 5e-5}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]uint8, B*3*spec.InputSize*spec.InputSize)
	for i := range x {
		x[i] = uint8(rng.IntN(256))
	}
	labels := make([]int32, B)
	for i := range labels {
		labels[i] = int32(rng.IntN(spec.Classes))
	}
	for _, g := range []string{GemmOwn, GemmCublas} {
		for _, prec := range []gemm.Precision{gemm.FP32, gemm.TF32, gemm.BF16} {
			o := opt
			o.Precision = prec // the model's options name the engine's precision (model.NewOn checks)
			b, err := NewBackendWith(d, spec, o, true, imageNet, EngineOptions{Gemm: g, Precision: prec})
			if err != nil {
				t.Logf("%s %s: %v", g, prec, err)
				continue
			}
			var compute time.Duration
			var wall time.Duration
			for k := range steps + 1 {
				t0 := time.Now()
				_, times, err := runStep(b, model.Input{U8: x, Labels: labels, N: B}, 0.1)
				if err != nil {
					b.Close()
					t.Fatalf("%s %s step %d: %v", g, prec, k, err)
				}
				if k > 0 { // the first step warms up (JIT, cuBLAS's heuristics)
					compute += times.Compute
					wall += time.Since(t0)
				}
			}
			ms := func(v time.Duration) float64 { return float64(v.Microseconds()) / 1e3 / steps }
			t.Logf("resnet18 224px batch %d, %s: step compute %.1f ms, wall %.1f ms, %.0f img/s",
				B, b.Gemm(), ms(compute), ms(wall), float64(B)/(ms(wall)/1e3))
			b.Close()
		}
	}
}
