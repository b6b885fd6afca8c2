//go:build stokecuda

package cudaops

import (
	"math"
	"strings"
	"testing"

	"stoke/model"
)

// graphStepCases are the models the graph tests train: the quickstart's
// CNN with SGD (its bias + ReLU convs, max-pool and label smoothing), and
// a resnet20 with AdamW (BatchNorm, whose kernels take the valid rows as a
// launch argument, and AdamW's bias corrections, which change every step).
var graphStepCases = []struct {
	name string
	c    devLossCase
}{
	{"cnn-sgd", devLossCase{steps: 2*flushEvery + 1}},
	{"resnet20-adamw", devLossCase{steps: 15, spec: model.Spec{Arch: "resnet20", InputSize: 8, Classes: 4},
		opt: model.Options{Batch: 16, Seed: 6, Optimizer: model.OptimizerAdamW, WeightDecay: 0.05, LabelSmoothing: 0.1}}},
}

// oneHostThread skips t unless the steps are deterministic: on several
// stand-in host threads (and on a GPU) sgemm's split-K slices add in timing
// order, so two runs of the same launches part in the last bits, and a
// max-pool or ReLU near a tie then takes the other branch.
func oneHostThread(t *testing.T, d *Device) {
	t.Helper()
	if !d.Simulated() || !strings.Contains(d.String(), "1 host threads") {
		t.Skipf("%s: two runs of the same launches are bit-equal only on one stand-in host thread (STOKE_CUDASIM_THREADS=1, as scripts/gpu-sim.sh runs this test)", d)
	}
}

// sameState is the largest difference between two runs' weights and
// optimizer state, and whether every value has the same bits.
func sameState(a, b devLossRun) (worst float64, bits bool) {
	bits = true
	for _, pair := range [][2][]model.NamedTensor{{a.params, b.params}, {a.optState, b.optState}} {
		for i := range pair[0] {
			for j, v := range pair[0][i].Data {
				w := pair[1][i].Data[j]
				worst = max(worst, math.Abs(float64(v-w)))
				bits = bits && math.Float32bits(v) == math.Float32bits(w)
			}
		}
	}
	return worst, bits
}

// TestGPUGraphStepsEqualLaunches: with cuda.graphs on, every step after the
// first replays a graph captured once per slot and batch shape (the full
// batch in both slots, and the short batches of 11 rows in both): one
// launch a step, where the steps launched one by one take dozens; the losses,
// hits, weights and optimizer state are bit for bit those of the same steps
// with graphs off.
func TestGPUGraphStepsEqualLaunches(t *testing.T) {
	d := openOrSkip(t)
	oneHostThread(t, d)
	for _, tc := range graphStepCases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			c.graphs = GraphsOff
			off := runDevLossCase(t, d, c)
			c.graphs = GraphsOn
			on := runDevLossCase(t, d, c)
			lOff, sOff, aOff, _, _ := off.perStep()
			lOn, sOn, aOn, _, _ := on.perStep()
			t.Logf("graphs off: %s; %.2f launches, %.3f host syncs, %.2f allocs a step", off.graphs, lOff, sOff, aOff)
			t.Logf("graphs on:  %s; %.2f launches, %.3f host syncs, %.2f allocs a step", on.graphs, lOn, sOn, aOn)
			if on.captured != 4 || on.replays != c.steps-1 {
				t.Errorf("graphs on: %d graphs captured and %d of %d steps run as graphs, want 4 (2 slots x 2 batch sizes) and every step but the first", on.captured, on.replays, c.steps)
			}
			if off.captured != 0 || off.replays != 0 {
				t.Errorf("graphs off: %d captured, %d replayed", off.captured, off.replays)
			}
			// A capture launches what a step launched one by one does (into
			// the graph) and then the graph; every other step is one launch.
			perStep := off.counted.Launches / uint64(off.steps)
			if want := uint64(on.captured)*perStep + uint64(on.replays); on.counted.Launches != want || off.counted.Launches != perStep*uint64(off.steps) {
				t.Errorf("graphs on: %d launches in %d steps, want %d (%d captures of %d launches, then 1 a step)", on.counted.Launches, on.steps, want, on.captured, perStep)
			}
			if aOn != 0 || sOn > sOff {
				t.Errorf("graphs on: %.2f allocs, %.3f syncs a step against %.2f, %.3f off", aOn, sOn, aOff, sOff)
			}
			for k := 1; k < c.steps; k++ {
				g, w := on.res[k], off.res[k]
				if math.Float64bits(g.Loss) != math.Float64bits(w.Loss) || g.Correct != w.Correct {
					t.Fatalf("step %d: loss %v (%d hits) replayed, %v (%d hits) launched", k, g.Loss, g.Correct, w.Loss, w.Correct)
				}
			}
			if worst, bits := sameState(on, off); !bits {
				t.Errorf("after %d steps the weights or optimizer state differ (by up to %g) between graphs on and off", c.steps, worst)
			}
		})
	}
}

// TestGPUGraphCaptureFailure: a capture that the driver invalidates (here
// a stream synchronization inside it) is not a lost step. With cuda.graphs
// auto the step's host side is undone and it and every later step launch
// one by one, ending bit for bit where graphs off does, and GraphsNote says
// why; with on the step fails, naming cuda.graphs and the driver's error.
func TestGPUGraphCaptureFailure(t *testing.T) {
	d := openOrSkip(t)
	oneHostThread(t, d)
	c := devLossCase{steps: 6, graphs: GraphsOff}
	off := runDevLossCase(t, d, c)
	testBreakCapture = true
	defer func() { testBreakCapture = false }()
	c.graphs = GraphsAuto
	auto := runDevLossCase(t, d, c)
	if auto.captured != 0 || auto.replays != 0 || !strings.Contains(auto.graphs, "capturing a step") || !strings.Contains(auto.graphs, "CUDA error 901") {
		t.Errorf("auto after a failed capture: %d captured, %d replayed, note %q", auto.captured, auto.replays, auto.graphs)
	}
	if worst, bits := sameState(auto, off); !bits {
		t.Errorf("auto after a failed capture ends up to %g from graphs off", worst)
	}
	if auto.fallback == "" || !strings.Contains(auto.graphs, auto.fallback) {
		t.Errorf("auto after a failed capture: GraphsFallback %q, note %q", auto.fallback, auto.graphs)
	}
	t.Logf("auto: %s", auto.graphs)

	opt := model.Options{Batch: 4, Seed: 2, Momentum: 0.9}
	b, err := NewBackendWith(d, gpuSpec, opt, true, imageNet, EngineOptions{Gemm: GemmOwn, Graphs: GraphsOn})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	S := gpuSpec.InputSize
	x := make([]float32, opt.Batch*3*S*S)
	labels := []int32{0, 1, 2, 3}
	var stepErr error
	for k := 0; k < 2 && stepErr == nil; k++ {
		pd, err := b.Start(model.Input{X: x, Labels: labels, N: opt.Batch}, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		_, _, stepErr = settle(b, pd)
	}
	if stepErr == nil || !strings.Contains(stepErr.Error(), "cuda.graphs on") || !strings.Contains(stepErr.Error(), "901") {
		t.Fatalf("graphs on, a capture invalidated: step error %v, want one naming cuda.graphs on and error 901", stepErr)
	}
	t.Logf("on: %v", stepErr)
}

// TestGPUGraphStepTimes (a lent GPU only: under the stand-in a step's time
// is its kernels' on the host, not the launches a graph saves) times the
// steps of the quickstart's CNN (batch 64, 32 px, SGD) and of resnet50 at
// 224 px, batch 4 (pytorch/benchmark#706's small-batch case), with
// cuda.graphs off and on in alternating rounds: ms per step from the end of
// the first step to the last result read, and the launches per step. It
// reports; the speed-up is for the closing note, not a pass mark.
func TestGPUGraphStepTimes(t *testing.T) {
	d := openOrSkip(t)
	skipOnStandIn(t, d, "graph step times")
	for _, tc := range []struct {
		name string
		c    devLossCase
	}{
		{"cnn b64 32px sgd", devLossCase{steps: 201, timed: true, spec: gpuSpec,
			opt: model.Options{Batch: 64, Seed: 5, Momentum: 0.9, WeightDecay: 5e-4}}},
		{"resnet50 b4 224px sgd", devLossCase{steps: 31, timed: true,
			spec: model.Spec{Arch: "resnet50", Stem: model.StemImageNet, InputSize: 224, Classes: 1000},
			opt:  model.Options{Batch: 4, Seed: 5, Momentum: 0.9, WeightDecay: 1e-4}}},
	} {
		ms := map[string][]float64{}
		for round := range 2 {
			for _, g := range []string{GraphsOff, GraphsOn} {
				c := tc.c
				c.graphs = g
				r := runDevLossCase(t, d, c)
				per := float64(r.wall.Microseconds()) / 1e3 / float64(r.steps)
				ms[g] = append(ms[g], per)
				launches, syncs, _, _, _ := r.perStep()
				t.Logf("%s, round %d, graphs %s: %.3f ms a step, %.2f launches, %.3f host syncs a step (%s)", tc.name, round+1, g, per, launches, syncs, r.graphs)
			}
		}
		t.Logf("%s: graphs on / off, ms a step, round by round: %.3f, %.3f", tc.name, ms[GraphsOn][0]/ms[GraphsOff][0], ms[GraphsOn][1]/ms[GraphsOff][1])
	}
}
