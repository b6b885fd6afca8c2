package model

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestEstimateMemoryFollowsResNeXt is TestEstimateMemoryFollowsTheEngine
// for resnext50_32x4d (grouped 3x3 convs of Cout·Cin/32·3·3 weights, 25M
// parameters in all), imagenet stem, 64 px, batch 2: the estimate within a
// factor of two of the live heap after two steps.
func TestEstimateMemoryFollowsResNeXt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a 25M-parameter model")
	}
	spec, batch := Spec{Arch: "resnext50_32x4d", Stem: StemImageNet, InputSize: 64, Classes: 10}, 2
	est := EstimateMemory(spec, batch, runtime.GOMAXPROCS(0))
	before := heapAfterGC()
	m := newModel(t, spec, Options{Batch: batch, Seed: 1, Momentum: 0.9})
	x := randomInput(rand.New(rand.NewPCG(1, 2)), batch*3*spec.InputSize*spec.InputSize)
	labels := make([]int32, batch)
	for i := 0; i < 2; i++ {
		if _, err := m.TrainStep(x, labels, batch, 0.01); err != nil {
			t.Fatal(err)
		}
	}
	params, opt := m.Params(), m.OptimizerState() // a checkpoint's copies, which the estimate counts
	live := float64(heapAfterGC() - before)
	runtime.KeepAlive(params)
	runtime.KeepAlive(opt)
	runtime.KeepAlive(x)
	t.Logf("estimate %s; live heap %s", est, Bytes(live))
	if r := est.Total() / live; r < 0.5 || r > 2 {
		t.Errorf("estimate %s is %.2fx the live heap %s", Bytes(est.Total()), r, Bytes(live))
	}
}
