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
var (
	graphSpec = model.Spec{InputSize: 12, Classes: 5, Conv: []model.ConvSpec{
		{Channels: 6, Kernel: 3, Pool: true}, {Channels: 8, Kernel: 5}, {Channels: 8, Kernel: 3, Pool: true}}}
	oddSpec = model.Spec{InputSize: 10, Classes: 4, Conv: []model.ConvSpec{
		{Channels: 4, Kernel: 3, Pool: true},  // 10 -> 5
		{Channels: 6, Kernel: 5, Pool: true},  // 5 -> 2 (floor: the last row and column are dropped)
		{Channels: 5, Kernel: 1, Pool: false}, // 1x1
	}}
	// skipSpec has two residual blocks in a row (model.Spec.Skip): the
	// pooled activations feed conv1 and the first skip's Add, conv1's
	// output feeds conv2 and the second's, so backward sums two gradients
	// twice with gorgonia's built-in Add, which runs on the device through
	// the GraphEngine's TensorEngine (as does the forward Add).
	skipSpec = model.Spec{InputSize: 8, Classes: 4, Conv: []model.ConvSpec{
		{Channels: 6, Kernel: 3, Pool: true}, {Channels: 6, Kernel: 3}, {Channels: 6, Kernel: 1}, {Channels: 5, Kernel: 3}},
		Skip: []int{1, 2}}
)

func TestGPUGraphMatchesCPU(t *testing.T) {
	d := openOrSkip(t)
	eng, err := NewGraphEngine(d)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	opt := model.Options{Batch: 6, Seed: 3, Momentum: 0.9, WeightDecay: 5e-4}
	for _, tc := range []struct {
		spec model.Spec
		n    int
	}{{graphSpec, 6}, {graphSpec, 4}, {oddSpec, 6}, {oddSpec, 1}, {skipSpec, 6}, {skipSpec, 3}} {
		spec, n := tc.spec, tc.n
		S := spec.InputSize
		cpu, err := model.New(spec, opt)
		if err != nil {
			t.Fatal(err)
		}
		gpu, err := model.NewOn(eng.Engine(), spec, opt)
		if err != nil {
			t.Fatal(err)
		}
		adds := eng.te.adds
		rng := rand.New(rand.NewPCG(7, uint64(n)))
		for step := range 3 {
			x := randBatch(rng, opt.Batch*3*S*S)
			for i := n * 3 * S * S; i < len(x); i++ {
				x[i] = float32(math.NaN()) // padding must not leak in
			}
			labels := make([]int32, opt.Batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(spec.Classes))
			}
			want, err1 := trainStep(cpu, x, labels, n, 0.05)
			got, err2 := trainStep(gpu, x, labels, n, 0.05)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Loss-want.Loss) > 1e-5*(1+math.Abs(want.Loss)) || got.Correct != want.Correct {
				t.Fatalf("input %d, n=%d step %d: GPU graph %+v, CPU graph %+v", S, n, step, got, want)
			}
			wl, err1 := logits(cpu, x, n)
			gl, err2 := logits(gpu, x, n)
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
		if got := eng.te.adds - adds; len(spec.Skip) > 0 && got == 0 {
			t.Errorf("the skip graph ran no Add on the device engine")
		} else if len(spec.Skip) == 0 && got != 0 {
			t.Errorf("the plain cnn ran %d device Adds", got)
		}
		t.Logf("input %d, n=%d, skips %v: 3 steps, loss, logits, %d params and momentum buffers agree (%d device Adds)", S, n, spec.Skip, len(spec.Conv)*2+2, eng.te.adds-adds)
		cpu.Close()
		gpu.Close()
	}
}

// TestGPUGraphU8MatchesCPU: uint8 batches (garbage in the padded rows),
// copied as bytes and normalized on the device by the Backend, then the
// graph on the GPU engine; against the CPU graph on the host-normalized
// float32 batch (augment.NormalizeU8, the trainer's CPU path): loss, hits
// and every weight and momentum buffer after 3 steps (tolerances as above).
func TestGPUGraphU8MatchesCPU(t *testing.T) {
	d := openOrSkip(t)
	opt := model.Options{Batch: 6, Seed: 4, Momentum: 0.9, WeightDecay: 1e-4}
	for _, nonBlocking := range []bool{false, true} {
		b, err := NewBackend(d, graphSpec, opt, nonBlocking, imageNet)
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := model.New(graphSpec, opt)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(9, 9))
		for step, n := range []int{6, 5, 2} {
			u8, x, labels := u8Batch(rng, graphSpec, opt.Batch, n, true)
			want, err1 := trainStep(cpu, x, labels, n, 0.05)
			got, _, err2 := runStep(b, model.Input{U8: u8, Labels: labels, N: n}, 0.05)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Loss-want.Loss) > 1e-5*(1+math.Abs(want.Loss)) || got.Correct != want.Correct {
				t.Fatalf("non_blocking=%v step %d n=%d: uint8 on the GPU graph %+v, CPU graph %+v", nonBlocking, step, n, got, want)
			}
			wp, wv, err1 := cpu.State()
			gp, gv, err2 := b.State()
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
		b.Close()
		cpu.Close()
	}
}
