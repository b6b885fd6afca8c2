package data

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeShards is an Index of n samples in shards of the given sizes.
func fakeShards(sizes ...int) *Index {
	ix := &Index{}
	for k, n := range sizes {
		ix.Shards = append(ix.Shards, Shard{})
		for range n {
			ix.Samples = append(ix.Samples, Sample{Member: &Member{Shard: k}})
		}
	}
	return ix
}

// TestShardOrder: sequential mode's order is a permutation drawn from
// (seed, epoch) alone; with a buffer of 1 it reads each shard front to
// back, in a shuffled shard order; with a buffer of B every sample comes
// out less than B places after it was read.
func TestShardOrder(t *testing.T) {
	ix := fakeShards(7, 0, 5, 9, 3)
	n := len(ix.Samples)
	if got := ShardOrder(ix, 1, 0, false, 4); !slices.Equal(got, Permutation(n, 1, 0, false)) {
		t.Errorf("no shuffle: %v, want the identity", got)
	}
	for _, buffer := range []int{1, 4, 100} {
		a, b, c := ShardOrder(ix, 1, 0, true, buffer), ShardOrder(ix, 1, 0, true, buffer), ShardOrder(ix, 1, 1, true, buffer)
		if !slices.Equal(a, b) || slices.Equal(a, c) {
			t.Errorf("buffer %d: epoch 0 gave %v then %v, epoch 1 %v: want one order per (seed, epoch)", buffer, a, b, c)
		}
		if s := slices.Sorted(slices.Values(a)); !slices.Equal(s, Permutation(n, 0, 0, false)) {
			t.Fatalf("buffer %d: %v is not a permutation of %d samples", buffer, a, n)
		}
		// the stream: shards in the order their first sample comes out
		var stream []int
		seen := map[int]bool{}
		for _, i := range a {
			if k := ix.Samples[i].Member.Shard; !seen[k] && buffer == 1 {
				seen[k] = true
				for j := range ix.Samples {
					if ix.Samples[j].Member.Shard == k {
						stream = append(stream, j)
					}
				}
			}
		}
		if buffer == 1 && !slices.Equal(stream, a) {
			t.Errorf("buffer 1: %v, want each shard front to back", a)
		}
	}
	// With a buffer of 4, sample a[t] was read at most 3 places ahead:
	// it lies within the first t+4 of the stream, so among the samples
	// of the shards begun by then.
	a := ShardOrder(ix, 3, 2, true, 4)
	started := map[int]int{} // shard -> how many of its samples came out
	for t0, i := range a {
		started[ix.Samples[i].Member.Shard]++
		if len(started) > 1+(t0+4)/3 { // shards hold at least 3 samples
			t.Fatalf("after %d samples, %d shards begun: the buffer reads ahead too far", t0+1, len(started))
		}
	}
}

// TestSequentialModeIsTheSameForAnyWorkerCount: in sequential mode a
// loader's batches are the same with 0 and 3 workers, and differ from the
// global permutation's; an ImageFolder refuses the mode.
func TestSequentialModeIsTheSameForAnyWorkerCount(t *testing.T) {
	_, train, val := smallFolder(t)
	out := filepath.Join(t.TempDir(), "shards")
	if _, err := Pack(context.Background(), train, val, out, 2<<10); err != nil {
		t.Fatal(err)
	}
	st, _, err := Scan(out)
	if err != nil {
		t.Fatal(err)
	}
	batches := func(ix *Index, workers, buffer int) [][]int {
		t.Helper()
		l, err := NewLoader(LoaderConfig{Index: ix, Transform: testTransform{4}, BatchSize: 4, Workers: workers, Prefetch: 2, Shuffle: true, Seed: 5, ShuffleBuffer: buffer})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var got [][]int
		it := l.Epoch(context.Background(), 1)
		for {
			b, err := it.Next()
			if err != nil {
				break
			}
			got = append(got, slices.Clone(b.Samples))
			b.Release()
		}
		return got
	}
	seq0, seq3, global := batches(st, 0, 3), batches(st, 3, 3), batches(st, 0, 0)
	if !slices.EqualFunc(seq0, seq3, slices.Equal) {
		t.Errorf("sequential mode: 0 workers %v, 3 workers %v", seq0, seq3)
	}
	if slices.EqualFunc(seq0, global, slices.Equal) {
		t.Errorf("sequential mode gave the global permutation's batches %v", global)
	}
	if _, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 4, ShuffleBuffer: 3}); err == nil || !strings.Contains(err.Error(), "is an ImageFolder") {
		t.Errorf("sequential mode on an ImageFolder: %v", err)
	}
}
