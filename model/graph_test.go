package model

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestGraphRunsOnlyOurOps: every node that computes, forward or backward,
// is one of our ops; a built-in would allocate its output every run and
// (for the layers) is slow or wrong (doc.go).
func TestGraphRunsOnlyOurOps(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 2})
	n := 0
	for _, node := range m.g.AllNodes() {
		if node.Op() == nil {
			continue // an input
		}
		if strings.HasPrefix(node.Op().String(), "const ") {
			continue // the gradient seed Grad adds: a constant, not a computation
		}
		if _, ok := node.Op().(*kernelOp); !ok {
			t.Errorf("node %v runs gorgonia's %T (%v)", node.Name(), node.Op(), node.Op())
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d op nodes: forward and backward should both be in the graph", n)
	}
}

// TestTrainStepAllocations: a step allocates only gorgonia's own per-run
// bookkeeping (about 100 small objects, 10–20 KB), never tensors: the
// smallest one here, a pooled activation, is 256 KiB.
func TestTrainStepAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	spec := Spec{InputSize: 32, Classes: 10, Conv: []ConvSpec{{Channels: 16, Kernel: 3, Pool: true}, {Channels: 32, Kernel: 3}}}
	const B = 16
	// One P: sync.Pool keeps an item private to the P that put it, so a
	// step whose goroutines land on the other P misses the pool and
	// allocates (862864 bytes seen once on 2 cores); that is the
	// scheduler, not a tensor allocated per step.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m := newModel(t, spec, Options{Batch: B, Seed: 1, Momentum: 0.9})
	x := make([]float32, B*3*32*32)
	labels := make([]int32, B)
	if _, err := m.TrainStep(x, labels, B, 0.01); err != nil {
		t.Fatal(err)
	}
	// A collection empties the GEMM's scratch pool by design (4 MB back on
	// the next step); what must not happen is a tensor allocated per step.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var ms0, ms1 runtimeMemStats
	readMemStats(&ms0)
	const steps = 5
	for i := 0; i < steps; i++ {
		if _, err := m.TrainStep(x, labels, B, 0.01); err != nil {
			t.Fatal(err)
		}
	}
	readMemStats(&ms1)
	perStep := (ms1.TotalAlloc - ms0.TotalAlloc) / steps
	t.Logf("%d bytes, %d objects allocated per step", perStep, (ms1.Mallocs-ms0.Mallocs)/steps)
	if perStep > 64<<10 {
		t.Errorf("a step allocates %d bytes; the ops should reuse their buffers", perStep)
	}
}
