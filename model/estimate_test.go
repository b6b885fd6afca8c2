package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// TestEstimateMemoryFollowsTheEngine: the estimate is within a factor of two
// of the live heap a built model holds after its first steps, for shapes
// where different terms dominate (activations, im2col scratch, parameters).
func TestEstimateMemoryFollowsTheEngine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		batch int
	}{
		{"quickstart", Spec{InputSize: 32, Classes: 10, Conv: []ConvSpec{{16, 3, true}, {32, 3, true}, {64, 3, false}}}, 64},
		{"wide kernel", Spec{InputSize: 24, Classes: 10, Conv: []ConvSpec{{32, 9, false}, {32, 9, true}}}, 16},
		{"many channels", Spec{InputSize: 8, Classes: 10, Conv: []ConvSpec{{256, 3, false}, {256, 3, false}}}, 8},
		{"resnet20", Spec{Arch: "resnet20", InputSize: 32, Classes: 10}, 32},
		{"resnet18 imagenet stem", Spec{Arch: "resnet18", InputSize: 64, Classes: 10}, 4},
		{"resnet50 imagenet stem", Spec{Arch: "resnet50", InputSize: 64, Classes: 10}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			threads := runtime.GOMAXPROCS(0)
			est := EstimateMemory(tc.spec, tc.batch, threads)
			before := heapAfterGC()
			m := newModel(t, tc.spec, Options{Batch: tc.batch, Seed: 1, Momentum: 0.9})
			rng := rand.New(rand.NewPCG(1, 2))
			x := randomInput(rng, tc.batch*3*tc.spec.InputSize*tc.spec.InputSize)
			labels := make([]int32, tc.batch)
			for i := 0; i < 2; i++ {
				if _, err := m.TrainStep(x, labels, tc.batch, 0.01); err != nil {
					t.Fatal(err)
				}
			}
			// a checkpoint's copies, which the estimate counts
			params, opt := m.Params(), m.OptimizerState()
			live := float64(heapAfterGC() - before)
			runtime.KeepAlive(params)
			runtime.KeepAlive(opt)
			runtime.KeepAlive(x)
			t.Logf("estimate %s; live heap %s", est, Bytes(live))
			if r := est.Total() / live; r < 0.5 || r > 2 {
				t.Errorf("estimate %s is %.2fx the live heap %s", Bytes(est.Total()), r, Bytes(live))
			}
		})
	}
}

func TestEstimateMemoryOfAbsurdShapesIsFiniteAndHuge(t *testing.T) {
	for _, tc := range []struct {
		spec  Spec
		batch int
		least float64
	}{
		{Spec{InputSize: 16, Classes: 10, Conv: []ConvSpec{{16, 10001, false}}}, 64, 1e11}, // kernel 10001 on 16 px
		{Spec{InputSize: 100000, Classes: 10, Conv: []ConvSpec{{16, 3, true}}}, 64, 1e13},
		{Spec{InputSize: 32, Classes: 10, Conv: []ConvSpec{{16, 3, true}}}, 1e9, 1e13},
	} {
		m := EstimateMemory(tc.spec, tc.batch, 2)
		if math.IsInf(m.Total(), 0) || math.IsNaN(m.Total()) || m.Total() < tc.least {
			t.Errorf("%+v batch %d: estimate %v, want a finite figure over %g", tc.spec, tc.batch, m.Total(), tc.least)
		}
	}
	if s := Bytes(7.5 * (1 << 40)); !strings.Contains(s, "7.5 TiB") {
		t.Errorf("Bytes = %q", s)
	}
}
