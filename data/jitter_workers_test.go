package data

import (
	"fmt"
	"testing"

	"stoke/augment"
)

// TestLoaderJitterSameWhateverWorkers is TestLoaderRegionSameWhateverWorkers
// at output sizes whose rows are not a whole number of vector registers
// (the kernels' Go tails run on every row) and one that is, with strong
// jitter: batches stay bit-identical across worker counts.
func TestLoaderJitterSameWhateverWorkers(t *testing.T) {
	_, idx := testDataset(t)
	for _, size := range []int{5, 13, 16} {
		for _, dtype := range []string{DTypeFloat32, DTypeUint8} {
			t.Run(fmt.Sprintf("%d/%s", size, dtype), func(t *testing.T) {
				p := augment.DefaultTrainParams(size)
				p.Brightness, p.Contrast, p.Saturation = 0.8, 0.8, 0.8
				tr, err := augment.NewTrain(p)
				if err != nil {
					t.Fatal(err)
				}
				cfg := LoaderConfig{Index: idx, Transform: tr, BatchSize: 3, Prefetch: 2, Shuffle: true, Seed: 21, DType: dtype}
				wantX, wantU, wantL := loadEpoch(t, cfg, 2)
				for _, w := range []int{1, 2, 5} {
					cfg.Workers = w
					x, u, l := loadEpoch(t, cfg, 2)
					if len(l) != len(wantL) {
						t.Fatalf("%d workers: %d batches, want %d", w, len(l), len(wantL))
					}
					for i := range wantL {
						if !equalBits(x[i], wantX[i]) || string(u[i]) != string(wantU[i]) || !slicesEqual(l[i], wantL[i]) {
							t.Fatalf("%d workers: batch %d differs from 0 workers", w, i)
						}
					}
				}
			})
		}
	}
}
