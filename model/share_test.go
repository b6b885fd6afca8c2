package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSharedGradientsChangeNoBit: a model whose activation gradients share
// buffers by liveness (share.go) trains to the bits of one whose gradients
// keep a buffer each, with every shared buffer filled with NaN before each
// step (an op reading a gradient after another took its buffer, or one
// relying on a zeroed buffer, would spread it): BasicBlocks with a
// cifar stem, the imagenet stem's max-pool, Bottlenecks with strided
// downsampling, grouped convs, on a padded batch too (n < B). The shared
// buffers also hold less than the gradients they replace.
func TestSharedGradientsChangeNoBit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		batch int
	}{
		{"resnet20", Spec{Arch: "resnet20", InputSize: 16, Classes: 10}, 4},
		{"resnet18 imagenet stem", Spec{Arch: "resnet18", InputSize: 32, Classes: 5}, 3},
		{"resnet50", Spec{Arch: "resnet50", InputSize: 32, Classes: 4}, 3},
		{"resnext50_32x4d", Spec{Arch: "resnext50_32x4d", InputSize: 32, Classes: 4}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.spec.Arch != "resnet20" {
				t.Skip("-short: the Bottleneck ResNets")
			}
			opt := Options{Batch: tc.batch, Seed: 3, Momentum: 0.9}
			shared := newModel(t, tc.spec, opt)
			noSharing = true
			own := newModel(t, tc.spec, opt)
			noSharing = false
			if len(shared.shared) == 0 || len(own.shared) != 0 {
				t.Fatalf("%d shared buffers with sharing, %d without; want some and none", len(shared.shared), len(own.shared))
			}
			var sharedFloats int
			for _, b := range shared.shared {
				sharedFloats += len(b)
			}
			t.Logf("%d shared buffers, %d floats", len(shared.shared), sharedFloats)
			rng := rand.New(rand.NewPCG(5, 8))
			S := tc.spec.InputSize
			for step, n := range []int{tc.batch, tc.batch - 1, tc.batch} {
				x := randomInput(rng, tc.batch*3*S*S)
				labels := make([]int32, tc.batch)
				for i := range labels {
					labels[i] = int32(rng.IntN(tc.spec.Classes))
				}
				for _, b := range shared.shared {
					for i := range b {
						b[i] = float32(math.NaN())
					}
				}
				a, err := shared.TrainStep(x, labels, n, 0.01)
				if err != nil {
					t.Fatalf("step %d, shared: %v", step, err)
				}
				b, err := own.TrainStep(x, labels, n, 0.01)
				if err != nil {
					t.Fatalf("step %d, own buffers: %v", step, err)
				}
				if math.Float64bits(a.Loss) != math.Float64bits(b.Loss) {
					t.Fatalf("step %d: loss %v shared, %v own", step, a.Loss, b.Loss)
				}
				pa, pb := shared.Params(), own.Params()
				for i := range pa {
					if !slices.Equal(bitsOf(pa[i].Data), bitsOf(pb[i].Data)) {
						t.Fatalf("step %d: %s differs", step, pa[i].Name)
					}
				}
			}
		})
	}
}

func bitsOf(s []float32) []uint32 {
	b := make([]uint32, len(s))
	for i, v := range s {
		b[i] = math.Float32bits(v)
	}
	return b
}
