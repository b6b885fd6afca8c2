package model

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"weak"

	"stoke/internal/rss"
)

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rssBytes is the process's resident set size now (internal/rss), or 0.
func rssBytes() uint64 {
	cur, _ := rss.Now()
	return uint64(cur)
}

var memSpec = Spec{InputSize: 16, Classes: 10, Conv: []ConvSpec{{Channels: 16, Kernel: 3, Pool: true}, {Channels: 32, Kernel: 3}}}

// TestStepsDoNotGrowHeap: the live heap after many steps is what it was
// after a few; nothing accumulates per step.
func TestStepsDoNotGrowHeap(t *testing.T) {
	m := newModel(t, memSpec, Options{Batch: 8, Seed: 1, Momentum: 0.9})
	rng := rand.New(rand.NewPCG(1, 1))
	x := randomInput(rng, 8*3*16*16)
	labels := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	step := func(k int) {
		for i := 0; i < k; i++ {
			if _, err := m.TrainStep(x, labels, 8-i%3, 0.01); err != nil {
				t.Fatal(err)
			}
			if _, err := m.EvalStep(x, labels, 8); err != nil {
				t.Fatal(err)
			}
		}
	}
	step(3)
	before := heapAfterGC()
	step(40)
	after := heapAfterGC()
	t.Logf("live heap after 3 steps %.2f MiB, after 43 %.2f MiB", mib(before), mib(after))
	if after > before+256<<10 {
		t.Errorf("live heap grew by %.2f MiB over 40 steps", mib(after-before))
	}
}

// TestCloseFreesModel: closed models are collected. Without clearing the
// tape machine's finalizer (docs/gorgonia.md) every one of them stays alive.
func TestCloseFreesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	x := randomInput(rng, 8*3*16*16)
	labels := make([]int32, 8)
	cycle := func() {
		m, err := New(memSpec, Options{Batch: 8})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.TrainStep(x, labels, 8, 0.01); err != nil {
			t.Fatal(err)
		}
		if _, err := m.EvalStep(x, labels, 8); err != nil {
			t.Fatal(err)
		}
		m.Close()
	}
	base := heapAfterGC()
	// The size one live model holds, to scale the check.
	held, err := New(memSpec, Options{Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.TrainStep(x, labels, 8, 0.01); err != nil {
		t.Fatal(err)
	}
	one := heapAfterGC() - base
	held.Close()
	held = nil

	cycle() // warm-up: package-level caches
	before := heapAfterGC()
	const n = 8
	for i := 0; i < n; i++ {
		cycle()
	}
	after := heapAfterGC()
	grew := int64(after) - int64(before)
	t.Logf("one live model: %.2f MiB; heap change after %d closed models: %+.2f MiB", mib(one), n, float64(grew)/(1<<20))
	if grew > int64(one) {
		t.Errorf("heap grew by %.2f MiB after %d closed models (one model holds %.2f MiB): they are not freed", float64(grew)/(1<<20), n, mib(one))
	}
}

// TestCloseReleasesGraph: after Close, one GC cycle frees the graph. A
// tape machine still carrying gorgonia's finalizer keeps the graph and its
// values alive through the cycle that finds it unreachable (and forever
// when anything it reaches points back at it: docs/gorgonia.md).
func TestCloseReleasesGraph(t *testing.T) {
	m, err := New(tinySpec, Options{Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TrainStep(make([]float32, 2*3*6*6), []int32{0, 1}, 2, 0.1); err != nil {
		t.Fatal(err)
	}
	g := weak.Make(m.g)
	m.Close()
	m = nil
	runtime.GC()
	if g.Value() != nil {
		t.Error("the graph of a closed, dropped model survived a GC cycle")
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

type runtimeMemStats = runtime.MemStats

func readMemStats(ms *runtime.MemStats) { runtime.ReadMemStats(ms) }
