//go:build stokecuda

package cudaops

import (
	"math"
	"math/rand/v2"
	"testing"

	"stoke/model"
)

// TestGPUGraphMatchesCPU: the same gorgonia graph (model.NewOn) on the CPU
// engine and on the GPU engine gives the same loss, top-1 count and logits,
// and after 3 SGD steps (momentum, weight decay) the same weights and
// momentum buffers, for a full batch and a padded one. Tolerance: 1e-4
// relative (|got−want| ≤ 1e-4·(1+|want|)) on weights and logits, 1e-3 on
// momentum buffers (they hold raw gradient sums), 1e-5 on the loss: float32
// kernels that sum in another order (the GPU's tiled sgemm, its row and
// column sums) than cpuops.
func TestGPUGraphMatchesCPU(t *testing.T) {
	d := openOrSkip(t)
	eng, err := NewGraphEngine(d)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	spec := model.Spec{InputSize: 12, Classes: 5, Conv: []model.ConvSpec{
		{Channels: 6, Kernel: 3, Pool: true}, {Channels: 8, Kernel: 5}, {Channels: 8, Kernel: 3, Pool: true}}}
	opt := model.Options{Batch: 6, Seed: 3, Momentum: 0.9, WeightDecay: 5e-4}
	for _, n := range []int{6, 4} {
		cpu, err := model.New(spec, opt)
		if err != nil {
			t.Fatal(err)
		}
		gpu, err := model.NewOn(eng, spec, opt)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, uint64(n)))
		for step := range 3 {
			x := randBatch(rng, opt.Batch*3*12*12)
			for i := n * 3 * 144; i < len(x); i++ {
				x[i] = float32(math.NaN()) // padding must not leak in
			}
			labels := make([]int32, opt.Batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(spec.Classes))
			}
			want, err1 := cpu.TrainStep(x, labels, n, 0.05)
			got, err2 := gpu.TrainStep(x, labels, n, 0.05)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Loss-want.Loss) > 1e-5*(1+math.Abs(want.Loss)) || got.Correct != want.Correct {
				t.Fatalf("n=%d step %d: GPU graph %+v, CPU graph %+v", n, step, got, want)
			}
			wl, err1 := cpu.Logits(x, n)
			gl, err2 := gpu.Logits(x, n)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			close32(t, "logits", gl, wl, 1e-4)
			wp, wv, err1 := cpu.State()
			gp, gv, err2 := gpu.State()
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			for i := range wp {
				close32(t, wp[i].Name, gp[i].Data, wp[i].Data, 1e-4)
			}
			for i := range wv {
				close32(t, wv[i].Name, gv[i].Data, wv[i].Data, 1e-3)
			}
		}
		t.Logf("n=%d: 3 steps, loss, logits, %d params and momentum buffers agree", n, len(spec.Conv)*2+2)
		cpu.Close()
		gpu.Close()
	}
}
