//go:build stokecuda

package cudaops

import (
	"math/rand/v2"
	"testing"

	"stoke/model"
)

// TestGPUBackendDriverCounters: a backend's readings move by what its steps
// did (launches, the batch's bytes up, some bytes down for the loss), say
// graph once its steps replay one (cuda.graphs auto, from the second
// step), and are refused once it is closed.
func TestGPUBackendDriverCounters(t *testing.T) {
	d := openOrSkip(t)
	opt := model.Options{Batch: 4, Seed: 1, Momentum: 0.9}
	b, err := NewBackend(d, gpuSpec, opt, true, imageNet)
	if err != nil {
		t.Fatal(err)
	}
	x := randBatch(rand.New(rand.NewPCG(1, 2)), opt.Batch*3*gpuSpec.InputSize*gpuSpec.InputSize)
	in := model.Input{X: x, Labels: []int32{0, 1, 2, 3}, N: opt.Batch}
	c0, ok0 := b.DriverCounters()
	const steps = 3
	for range steps {
		p, err := startStep(b, in, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Results(); err != nil { // the deferred losses come down here
		t.Fatal(err)
	}
	c1, ok1 := b.DriverCounters()
	if !ok0 || !ok1 {
		t.Fatalf("an open backend's readings refused: ok %v, %v", ok0, ok1)
	}
	got := c1.Sub(c0.DriverCounters)
	t.Logf("%d steps: %+v", steps, got)
	if got.Launches < steps || got.H2DBytes < uint64(steps*4*len(x)) || got.D2HBytes == 0 || got.HostSyncs == 0 {
		t.Errorf("%d steps of batch %d moved the counters by %+v: want launches, at least %d bytes up, some down, some waits",
			steps, opt.Batch, got, steps*4*len(x))
	}
	if c0.Graph || !c1.Graph { // cuda.graphs auto: steps 2 and 3 are graph launches
		t.Errorf("graph reported %v before the first step and %v after %d, want false and true", c0.Graph, c1.Graph, steps)
	}
	b.Close()
	if _, ok := b.DriverCounters(); ok {
		t.Errorf("a closed backend's reading is accepted")
	}
}
