package data

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

// A worker count changed mid-epoch (data.workers: auto switches after
// measuring) gives the same batches, bit for bit, as 0 workers all the way:
// no sample skipped or repeated, whichever counts it goes through, also
// while the caller still holds a batch, and the epochs after keep the new
// count.
func TestIterSetWorkersMidEpoch(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t)
	const bs = 2 // 21 samples: 11 batches, the last short
	cfg := LoaderConfig{Index: train, Transform: testTransform{8}, BatchSize: bs, Prefetch: 2, Shuffle: true, Seed: 3}
	ref, err := NewLoader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := [2][]snapshot{drain(t, ref, 0), drain(t, ref, 1)}
	ref.Close()
	for _, plan := range [][]int{
		{0, 0, 3, 3, 3, 3, 3, 3, 3, 3, 3}, // inline, then 3 workers (what auto does)
		{2, 2, 0, 0, 1, 1, 4, 4, 0, 2, 2}, // up and down
		{1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 0}, // every batch
	} {
		t.Run(fmt.Sprint(plan), func(t *testing.T) {
			ca := &countingAlloc{}
			c := cfg
			c.Workers, c.Alloc = plan[0], ca
			l, err := NewLoader(c)
			if err != nil {
				t.Fatal(err)
			}
			it := l.Epoch(context.Background(), 0)
			var got []snapshot
			var held *Batch
			for i := 0; ; i++ {
				if i > 0 && i < len(plan) && plan[i] != plan[i-1] {
					if err := it.SetWorkers(plan[i]); err != nil {
						t.Fatal(err)
					}
				}
				b, err := it.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, snap(b))
				held.Release() // one batch held across each switch
				held = b
			}
			held.Release()
			it.Close()
			compareEpochs(t, 0, got, want[0])
			if w := l.Workers(); w != plan[len(plan)-1] {
				t.Errorf("Workers() = %d after the epoch, want %d", w, plan[len(plan)-1])
			}
			compareEpochs(t, 1, drain(t, l, 1), want[1])
			top := slices.Max(plan)
			if n := l.PoolSize(); n != max(2, 2*top) || ca.allocs != n {
				t.Errorf("PoolSize %d, %d allocations, want %d (the most workers x prefetch)", n, ca.allocs, max(2, 2*top))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if ca.free != ca.allocs {
				t.Errorf("Close freed %d of %d buffers", ca.free, ca.allocs)
			}
		})
	}
}

func compareEpochs(t *testing.T, epoch int, got, want []snapshot) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("epoch %d: %d batches, want %d", epoch, len(got), len(want))
	}
	seen := map[int]bool{}
	for i := range got {
		for _, s := range got[i].Samples {
			if seen[s] {
				t.Errorf("epoch %d: sample %d twice", epoch, s)
			}
			seen[s] = true
		}
		if got[i].Index != i || !slices.Equal(got[i].Samples, want[i].Samples) || !slices.Equal(got[i].X, want[i].X) || !slices.Equal(got[i].Labels, want[i].Labels) {
			t.Errorf("epoch %d batch %d (index %d) differs from 0 workers' (samples %v, want %v)", epoch, i, got[i].Index, got[i].Samples, want[i].Samples)
		}
	}
}

// SetWorkers refuses a negative count and workers without prefetch, and
// Loader.SetWorkers between epochs sets the next epoch's count.
func TestSetWorkersChecks(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t)
	l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetWorkers(-1); err == nil {
		t.Error("SetWorkers(-1) accepted")
	}
	if err := l.SetWorkers(2); err == nil {
		t.Error("SetWorkers(2) with Prefetch 0 accepted")
	}
	l2, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 4, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := l2.SetWorkers(3); err != nil {
		t.Fatal(err)
	}
	if l2.Workers() != 3 || l2.PoolSize() != 3 {
		t.Errorf("after SetWorkers(3): Workers %d, PoolSize %d, want 3, 3", l2.Workers(), l2.PoolSize())
	}
	if n := len(drain(t, l2, 0)); n != l2.NumBatches() {
		t.Errorf("%d batches, want %d", n, l2.NumBatches())
	}
}
