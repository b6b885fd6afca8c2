package data

import (
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMinSliceLeavesOutOnlyTheDegenerateSlice: with MinSlice 2 (a model
// whose smallest BatchNorm plane is 1x1 px), a short last batch of 1 image
// is not a batch, and a rank's slice of 1 image is empty; every other
// batch, on any number of workers and ranks, is bit-identical to the
// batches without MinSlice.
func TestMinSliceLeavesOutOnlyTheDegenerateSlice(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t) // 21 samples
	for _, tc := range []struct {
		batch, ranks int
		wantN        [][]int // per rank, the N of each batch with MinSlice 2
	}{
		{4, 1, [][]int{{4, 4, 4, 4, 4}}},                          // 21 = 5x4 + 1: the 1 is dropped
		{5, 2, [][]int{{5, 5}, {5, 5}}},                           // 21 = 2x10 + 1: dropped on both ranks
		{4, 2, [][]int{{4, 4, 4}, {4, 4, 0}}},                     // 21 = 2x8 + 5: rank 1's 1 is left out
		{8, 1, [][]int{{8, 8, 5}}},                                // nothing degenerate: unchanged
		{3, 2, [][]int{{3, 3, 3, 3}, {3, 3, 3, 0}}},               // 21 = 3x6 + 3: all on rank 0, unchanged
		{2, 3, [][]int{{2, 2, 2, 2}, {2, 2, 2, 0}, {2, 2, 2, 0}}}, // 21 = 3x6 + 3: rank 1's 1 is left out
	} {
		for _, workers := range []int{0, 2} {
			for r := range tc.ranks {
				base := LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: tc.batch, Workers: workers, Prefetch: 1,
					Shuffle: true, Seed: 3, Split: Split{Rank: r, Ranks: tc.ranks}}
				if tc.ranks == 1 {
					base.Split = Split{}
				}
				l0, err := NewLoader(base)
				if err != nil {
					t.Fatal(err)
				}
				plain := drain(t, l0, 1)
				l0.Close()
				c := base
				c.MinSlice = 2
				l, err := NewLoader(c)
				if err != nil {
					t.Fatal(err)
				}
				if l.NumBatches() != len(tc.wantN[r]) {
					t.Errorf("batch %d, rank %d of %d: %d batches, want %d", tc.batch, r, tc.ranks, l.NumBatches(), len(tc.wantN[r]))
				}
				got := drain(t, l, 1)
				l.Close()
				var ns []int
				for j, b := range got {
					ns = append(ns, b.N)
					if b.N == 0 {
						continue
					}
					p := plain[j]
					if b.N != p.N || !slices.Equal(b.Samples, p.Samples) || !slices.Equal(b.X, p.X) || !slices.Equal(b.Labels, p.Labels) {
						t.Errorf("batch %d, rank %d of %d, workers %d: batch %d differs from the one without MinSlice", tc.batch, r, tc.ranks, workers, j)
					}
				}
				if !slices.Equal(ns, tc.wantN[r]) {
					t.Errorf("batch %d, rank %d of %d, workers %d: batch sizes %v, want %v", tc.batch, r, tc.ranks, workers, ns, tc.wantN[r])
				}
			}
		}
	}
	if _, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 1, MinSlice: 2}); err == nil || !strings.Contains(err.Error(), "MinSlice") {
		t.Errorf("MinSlice above BatchSize: %v, want an error naming MinSlice", err)
	}
}
