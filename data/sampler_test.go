package data

import (
	"fmt"
	"slices"
	"testing"
)

func TestPermutation(t *testing.T) {
	tests := []struct {
		n       int
		seed    uint64
		shuffle bool
	}{
		{0, 1, true}, {1, 1, true}, {2, 7, true}, {10, 1, true}, {1000, 42, true}, {1000, 42, false}, {5, 0, false},
	}
	for _, tc := range tests {
		p0 := Permutation(tc.n, tc.seed, 0, tc.shuffle)
		p1 := Permutation(tc.n, tc.seed, 1, tc.shuffle)
		again := Permutation(tc.n, tc.seed, 0, tc.shuffle)
		sorted := slices.Sorted(slices.Values(p0))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("n=%d: %v is not a permutation of 0..%d", tc.n, p0, tc.n-1)
			}
		}
		if !slices.Equal(p0, again) {
			t.Errorf("n=%d seed=%d: two calls for the same epoch differ", tc.n, tc.seed)
		}
		identity := slices.Equal(p0, sorted)
		switch {
		case !tc.shuffle && !identity:
			t.Errorf("n=%d: shuffle=false gave %v, want the identity", tc.n, p0)
		case tc.shuffle && tc.n >= 10 && (identity || slices.Equal(p0, p1)):
			t.Errorf("n=%d: epochs 0 and 1 give the same or an unshuffled order", tc.n)
		}
		if tc.shuffle && tc.n >= 10 && slices.Equal(p0, Permutation(tc.n, tc.seed+1, 0, true)) {
			t.Errorf("n=%d: seeds %d and %d give the same order", tc.n, tc.seed, tc.seed+1)
		}
	}
}

// Over many epochs every element should land in every position about
// equally often; a biased shuffle (the classic "swap with any index" bug)
// fails this.
func TestPermutationUniform(t *testing.T) {
	const n, epochs = 4, 24000
	var count [n][n]int
	for e := range epochs {
		for pos, v := range Permutation(n, 3, e, true) {
			count[v][pos]++
		}
	}
	for v := range n {
		for pos := range n {
			if c := count[v][pos]; c < epochs/n*9/10 || c > epochs/n*11/10 {
				t.Errorf("element %d at position %d %d times, want about %d", v, pos, c, epochs/n)
			}
		}
	}
}

func TestSampleRNG(t *testing.T) {
	first := func(seed uint64, epoch, index int) uint64 { return SampleRNG(seed, epoch, index).Uint64() }
	seen := map[uint64]string{}
	for _, k := range []struct {
		seed         uint64
		epoch, index int
	}{{1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}, {2, 0, 0}, {0, 0, 0}, {1, 0, 2}, {1, 2, 0}, {1, -1, 0}} {
		v := first(k.seed, k.epoch, k.index)
		if prev, dup := seen[v]; dup {
			t.Errorf("SampleRNG%v gives the same first draw as %s", k, prev)
		}
		seen[v] = fmt.Sprint(k)
		if v != first(k.seed, k.epoch, k.index) {
			t.Errorf("SampleRNG%v is not reproducible", k)
		}
	}
	// The reusable source yields exactly SampleRNG's stream, and no allocation.
	src := NewSampleSource()
	for _, idx := range []int{5, 6, 5} {
		a, b := SampleRNG(9, 3, idx), src.For(9, 3, idx)
		for range 10 {
			if x, y := a.Uint64(), b.Uint64(); x != y {
				t.Fatalf("SampleSource.For(9,3,%d) drew %d, SampleRNG %d", idx, y, x)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { src.For(1, 2, 3).Float64() }); n != 0 {
		t.Errorf("SampleSource.For allocates %v times", n)
	}
}

func TestPageable(t *testing.T) {
	var a Allocator = Pageable{}
	if a.Name() != "pageable" {
		t.Errorf("Name = %q", a.Name())
	}
	for _, n := range []int{0, 1, 4, 100, 4096 + 12} {
		b, err := a.Alloc(n)
		if err != nil || len(b) != n || cap(b) != n {
			t.Fatalf("Alloc(%d) = len %d cap %d, %v", n, len(b), cap(b), err)
		}
		if n > 0 && uintptrOf(b)%Align != 0 {
			t.Errorf("Alloc(%d) is not %d-byte aligned", n, Align)
		}
		f := Float32s(b)
		if len(f) != n/4 {
			t.Errorf("Float32s of %d bytes has %d floats", n, len(f))
		}
		if len(f) > 0 {
			f[0] = 1 // 0x3f800000, little or big endian: the bytes change in place
			if b[0]|b[1]|b[2]|b[3] == 0 {
				t.Error("Float32s copied instead of viewing the bytes")
			}
		}
		if err := a.Free(b); err != nil {
			t.Error(err)
		}
	}
}

// TestSplitCoversTheOneRankBatches: for every n, batch and rank count, the
// ranks' ranges of global batch j, in rank order, are exactly batch j of
// one rank with batch·ranks, and there are as many global batches.
func TestSplitCoversTheOneRankBatches(t *testing.T) {
	for _, n := range []int{1, 5, 21, 64, 100} {
		for _, b := range []int{1, 3, 8, 32} {
			for _, ranks := range []int{1, 2, 3, 4} {
				for _, dropLast := range []bool{false, true} {
					one := Split{}
					if dropLast && b*ranks > n {
						continue // refused by NewLoader
					}
					nb := Split{Ranks: ranks}.NumBatches(n, b, dropLast)
					if want := one.NumBatches(n, b*ranks, dropLast); nb != want {
						t.Fatalf("n=%d b=%d ranks=%d dropLast=%v: %d global batches, one rank has %d", n, b, ranks, dropLast, nb, want)
					}
					for j := range nb {
						wlo, whi := one.Range(j, b*ranks, n)
						at := wlo
						for r := range ranks {
							lo, hi := Split{Rank: r, Ranks: ranks}.Range(j, b, n)
							if lo != at || hi < lo || hi-lo > b {
								t.Fatalf("n=%d b=%d ranks=%d batch %d: rank %d has [%d,%d), want it to start at %d with at most %d", n, b, ranks, j, r, lo, hi, at, b)
							}
							at = hi
						}
						if at != whi {
							t.Fatalf("n=%d b=%d ranks=%d batch %d: ranks end at %d, one rank's batch at %d", n, b, ranks, j, at, whi)
						}
					}
				}
			}
		}
	}
	if err := (Split{Rank: 2, Ranks: 2}).Check(); err == nil {
		t.Error("rank 2 of 2 passed Check")
	}
}
