package data

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// testTransform is a small deterministic Transform: nearest-neighbour
// resize to size x size after an rng-drawn offset and optional flip, then
// scale to [0, 1].
type testTransform struct{ size int }

func (tt testTransform) Size() int { return tt.size }

func (tt testTransform) Apply(img image.Image, rng *rand.Rand, dst []float32) error {
	n := img.(*image.NRGBA)
	w, h := n.Rect.Dx(), n.Rect.Dy()
	ox, oy := rng.IntN(w/4+1), rng.IntN(h/4+1)
	flip := rng.IntN(2) == 1
	s := tt.size
	for y := range s {
		for x := range s {
			sx := ox + x*(w-ox)/s
			if flip {
				sx = w - 1 - x*(w-ox)/s
			}
			sy := oy + y*(h-oy)/s
			o := sy*n.Stride + 4*sx
			for c := range 3 {
				dst[c*s*s+y*s+x] = float32(n.Pix[o+c])/255 + float32(rng.Float64())*1e-3
			}
		}
	}
	return nil
}

var (
	testSetOnce sync.Once
	testSetDir  string
	testSetErr  error
)

// testDataset is a small generated dataset shared by the loader tests:
// 3 classes x 7 training images of 24 px.
func testDataset(t testing.TB) (root string, train *Index) {
	t.Helper()
	testSetOnce.Do(func() {
		testSetDir, testSetErr = os.MkdirTemp("", "stoke-data-test-")
		if testSetErr == nil {
			testSetErr = Generate(filepath.Join(testSetDir, "ds"), SynthOptions{Classes: 3, Train: 7, Val: 2, Size: 24, Seed: 5})
		}
	})
	if testSetErr != nil {
		t.Fatal(testSetErr)
	}
	root = filepath.Join(testSetDir, "ds")
	train, _, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, train
}

func TestMain(m *testing.M) {
	if childMain != nil && childMain() {
		return
	}
	code := m.Run()
	for _, dir := range []string{testSetDir, benchSetDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	// No goroutine may outlive the tests (the loader's workers above all).
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// snapshot is a batch copied out of its buffer.
type snapshot struct {
	Epoch, Index, N int
	X               []uint32
	Labels          []int32
	Samples         []int
}

func snap(b *Batch) snapshot {
	s := snapshot{Epoch: b.Epoch, Index: b.Index, N: b.N, Labels: slices.Clone(b.Labels), Samples: slices.Clone(b.Samples)}
	for _, v := range b.X {
		s.X = append(s.X, math.Float32bits(v))
	}
	return s
}

// drain runs one epoch to EOF, releasing every batch.
func drain(t *testing.T, l *Loader, epoch int) []snapshot {
	t.Helper()
	it := l.Epoch(context.Background(), epoch)
	defer it.Close()
	var out []snapshot
	for {
		b, err := it.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, snap(b))
		b.Release()
	}
}

func TestLoaderSameBatchesWhateverWorkers(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t)
	const bs = 4
	var ref [2][]snapshot
	for _, wp := range [][2]int{{0, 0}, {1, 1}, {1, 3}, {4, 1}, {4, 2}} {
		t.Run(fmt.Sprintf("workers=%d,prefetch=%d", wp[0], wp[1]), func(t *testing.T) {
			l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{8}, BatchSize: bs,
				Workers: wp[0], Prefetch: wp[1], Shuffle: true, Seed: 11})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for e := range 2 {
				got := drain(t, l, e)
				if len(got) != l.NumBatches() || len(got) != 6 {
					t.Fatalf("epoch %d: %d batches, NumBatches %d, want 6", e, len(got), l.NumBatches())
				}
				perm := Permutation(len(train.Samples), 11, e, true)
				for i, b := range got {
					want := perm[i*bs : min((i+1)*bs, len(perm))]
					if b.Index != i || b.Epoch != e || b.N != len(want) || !slices.Equal(b.Samples, want) {
						t.Fatalf("epoch %d batch %d: index %d epoch %d N %d samples %v, want samples %v",
							e, i, b.Index, b.Epoch, b.N, b.Samples, want)
					}
					for k, idx := range want {
						if b.Labels[k] != int32(train.Samples[idx].Label) {
							t.Errorf("batch %d row %d: label %d, want %d", i, k, b.Labels[k], train.Samples[idx].Label)
						}
					}
				}
				last := got[len(got)-1]
				if last.N != 1 || slices.ContainsFunc(last.X[3*8*8:], func(v uint32) bool { return v != 0 }) ||
					slices.ContainsFunc(last.Labels[1:], func(v int32) bool { return v != 0 }) {
					t.Errorf("short last batch: N=%d, rows past N not zero", last.N)
				}
				if ref[e] == nil {
					ref[e] = got
					continue
				}
				for i := range got {
					if !slices.Equal(got[i].X, ref[e][i].X) || !slices.Equal(got[i].Labels, ref[e][i].Labels) {
						t.Errorf("epoch %d batch %d differs from the Workers=0 run", e, i)
					}
				}
			}
		})
	}
	if ref[0] != nil && ref[1] != nil && slices.Equal(ref[0][0].X, ref[1][0].X) {
		t.Error("epochs 0 and 1 gave the same first batch")
	}
}

func TestLoaderDropLastAndOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t) // 21 samples
	tests := []struct {
		bs       int
		dropLast bool
		shuffle  bool
		want     []int // N of each batch
	}{
		{4, true, false, []int{4, 4, 4, 4, 4}},
		{4, false, false, []int{4, 4, 4, 4, 4, 1}},
		{7, true, true, []int{7, 7, 7}},
		{21, false, false, []int{21}},
		{32, false, false, []int{21}},
	}
	for _, tc := range tests {
		for _, workers := range []int{0, 2} {
			l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: tc.bs,
				Workers: workers, Prefetch: 1, DropLast: tc.dropLast, Shuffle: tc.shuffle, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, l, 3)
			var ns, all []int
			for _, b := range got {
				ns = append(ns, b.N)
				all = append(all, b.Samples...)
			}
			if !slices.Equal(ns, tc.want) {
				t.Errorf("bs=%d dropLast=%v workers=%d: batch sizes %v, want %v", tc.bs, tc.dropLast, workers, ns, tc.want)
			}
			if !tc.shuffle && !slices.IsSorted(all) {
				t.Errorf("bs=%d workers=%d: unshuffled order %v", tc.bs, workers, all)
			}
			l.Close()
		}
	}
}

// copyDataset copies the test set's train split into a fresh root, so a
// test can break one of its files.
func copyDataset(t *testing.T) (*Index, string) {
	t.Helper()
	src, _ := testDataset(t)
	dst := t.TempDir()
	for _, split := range []string{"train", "val"} {
		if err := os.CopyFS(filepath.Join(dst, split), os.DirFS(filepath.Join(src, split))); err != nil {
			t.Fatal(err)
		}
	}
	tr, _, err := Scan(dst)
	if err != nil {
		t.Fatal(err)
	}
	return tr, dst
}

func TestLoaderBadImage(t *testing.T) {
	defer goleak.VerifyNone(t)
	train, _ := copyDataset(t)
	const bad = 9 // in batch 2 of 4-sample batches (unshuffled)
	path := train.Samples[bad].Path
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{0, 1, 4} {
		t.Run(fmt.Sprintf("fail/workers=%d", workers), func(t *testing.T) {
			l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 4, Workers: workers, Prefetch: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			it := l.Epoch(context.Background(), 0)
			defer it.Close()
			var got []int
			for {
				b, err := it.Next()
				if err == nil {
					got = append(got, b.Index)
					b.Release()
					continue
				}
				var ie *ImageError
				if !errors.As(err, &ie) || ie.Path != path || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Next error = %v, want an *ImageError naming %s", err, path)
				}
				break
			}
			if !slices.Equal(got, []int{0, 1}) {
				t.Errorf("batches before the error: %v, want [0 1] (in order)", got)
			}
			if _, err2 := it.Next(); err2 == nil || err2 == io.EOF {
				t.Errorf("Next after an error = %v, want the error again", err2)
			}
		})
		t.Run(fmt.Sprintf("skip/workers=%d", workers), func(t *testing.T) {
			l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 4, Workers: workers, Prefetch: 2, SkipBadImages: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			it := l.Epoch(context.Background(), 0)
			defer it.Close()
			total, skipped := 0, []int{}
			for {
				b, err := it.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				total += b.N
				skipped = append(skipped, b.Skipped...)
				if b.Index == 2 && (b.N != 3 || slices.Contains(b.Samples, bad)) {
					t.Errorf("batch 2: N=%d samples %v, want 3 without %d", b.N, b.Samples, bad)
				}
				b.Release()
			}
			if total != len(train.Samples)-1 || !slices.Equal(skipped, []int{bad}) {
				t.Errorf("%d samples, skipped %v; want %d and [%d]", total, skipped, len(train.Samples)-1, bad)
			}
		})
	}
}

func TestLoaderCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t)
	for _, workers := range []int{0, 1, 3} {
		for _, how := range []string{"cancel", "close", "new epoch", "loader close"} {
			t.Run(fmt.Sprintf("%s/workers=%d", how, workers), func(t *testing.T) {
				l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 2, Workers: workers, Prefetch: 2, Shuffle: true})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				it := l.Epoch(ctx, 0)
				b, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
				switch how {
				case "cancel":
					cancel()
					if _, err := it.Next(); !errors.Is(err, context.Canceled) {
						t.Errorf("Next after cancel = %v, want context.Canceled", err)
					}
				case "close":
					it.Close()
					if _, err := it.Next(); err == nil {
						t.Error("Next after Close succeeded")
					}
				case "new epoch":
					if got := drain(t, l, 1); len(got) != l.NumBatches() {
						t.Errorf("next epoch gave %d batches, want %d", len(got), l.NumBatches())
					}
				case "loader close":
					if err := l.Close(); err != nil {
						t.Error(err)
					}
				}
				it.Close()
				it.Close()
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// countingAlloc is Pageable that counts.
type countingAlloc struct {
	mu           sync.Mutex
	allocs, free int
}

func (c *countingAlloc) Alloc(n int) ([]byte, error) {
	c.mu.Lock()
	c.allocs++
	c.mu.Unlock()
	return Pageable{}.Alloc(n)
}
func (c *countingAlloc) Free(b []byte) error { c.mu.Lock(); c.free++; c.mu.Unlock(); return nil }
func (c *countingAlloc) Name() string        { return "counting" }

func TestLoaderBuffersReused(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t)
	for _, wp := range [][3]int{{0, 0, 0}, {1, 2, 0}, {3, 2, 0}, {1, 2, 5}, {0, 0, 3}, {3, 2, 4}} {
		t.Run(fmt.Sprintf("workers=%d,prefetch=%d,minpool=%d", wp[0], wp[1], wp[2]), func(t *testing.T) {
			ca := &countingAlloc{}
			l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 2, Workers: wp[0], Prefetch: wp[1], MinPool: wp[2], Alloc: ca})
			if err != nil {
				t.Fatal(err)
			}
			want := max(2, wp[0]*wp[1], wp[2]) // MinPool: a device backend's buffers in flight
			if l.PoolSize() != want || ca.allocs != want {
				t.Errorf("PoolSize %d, %d allocations, want %d", l.PoolSize(), ca.allocs, want)
			}
			seen := map[*Batch]bool{}
			mem := map[*byte]bool{}
			for e := range 3 {
				it := l.Epoch(context.Background(), e)
				for {
					b, err := it.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					seen[b] = true
					mem[&b.Bytes[0]] = true
					if &b.X[0] != (*float32)(unsafePointer(&b.Bytes[0])) {
						t.Error("X is not a view of Bytes")
					}
					b.Release()
				}
				it.Close()
			}
			if ca.allocs != want || len(seen) > want || len(mem) > want || len(seen) == 0 {
				t.Errorf("%d allocations, %d distinct batches, %d distinct buffers over 3 epochs; want at most %d", ca.allocs, len(seen), len(mem), want)
			}
			// Close frees the pooled buffers; one held by the caller is freed on Release.
			it := l.Epoch(context.Background(), 9)
			held, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if ca.free != want-1 {
				t.Errorf("Close freed %d buffers, want %d (one is held)", ca.free, want-1)
			}
			held.Release()
			held.Release()
			if ca.free != want {
				t.Errorf("after Release %d freed, want %d", ca.free, want)
			}
		})
	}
}

func TestLoaderAllBuffersHeld(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t)
	for _, wp := range [][2]int{{0, 0}, {1, 1}, {2, 1}} {
		t.Run(fmt.Sprintf("workers=%d", wp[0]), func(t *testing.T) {
			l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 2, Workers: wp[0], Prefetch: wp[1]})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			it := l.Epoch(context.Background(), 0)
			defer it.Close()
			var held []*Batch
			for range l.PoolSize() {
				b, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, b)
			}
			if _, err := it.Next(); !errors.Is(err, ErrAllBuffersHeld) {
				t.Fatalf("Next holding every buffer = %v, want ErrAllBuffersHeld", err)
			}
			held[0].Release()
			b, err := it.Next()
			if err != nil || b.Index != l.PoolSize() {
				t.Fatalf("Next after a Release = %v, %v; want batch %d", b, err, l.PoolSize())
			}
		})
	}
}

func TestNewLoaderValidates(t *testing.T) {
	_, train := testDataset(t)
	ok := LoaderConfig{Index: train, Transform: testTransform{4}, BatchSize: 2, Workers: 1, Prefetch: 1}
	tests := []struct {
		field string
		edit  func(*LoaderConfig)
	}{
		{"Index", func(c *LoaderConfig) { c.Index = nil }},
		{"Index", func(c *LoaderConfig) { c.Index = &Index{Root: "empty"} }},
		{"Transform", func(c *LoaderConfig) { c.Transform = nil }},
		{"Transform.Size", func(c *LoaderConfig) { c.Transform = testTransform{0} }},
		{"BatchSize", func(c *LoaderConfig) { c.BatchSize = 0 }},
		{"Workers", func(c *LoaderConfig) { c.Workers = -1 }},
		{"Prefetch", func(c *LoaderConfig) { c.Prefetch = 0 }},
		{"MaxPixels", func(c *LoaderConfig) { c.MaxPixels = -5 }},
		{"BatchSize", func(c *LoaderConfig) { c.BatchSize, c.DropLast = 100, true }},
	}
	for _, tc := range tests {
		c := ok
		tc.edit(&c)
		if _, err := NewLoader(c); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: NewLoader error = %v, want one naming the field", tc.field, err)
		}
	}
	c := ok
	c.Workers, c.Prefetch = 0, 0 // Prefetch is ignored inline
	l, err := NewLoader(c)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

func BenchmarkLoader(b *testing.B) {
	_, train := testDataset(b)
	for _, workers := range []int{0, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			l, err := NewLoader(LoaderConfig{Index: train, Transform: testTransform{16}, BatchSize: 8, Workers: workers, Prefetch: 2, Shuffle: true})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			epoch, images := 0, 0
			it := l.Epoch(context.Background(), epoch)
			b.ResetTimer()
			for range b.N { // one op = one batch
				bt, err := it.Next()
				if err == io.EOF {
					it.Close()
					epoch++
					it = l.Epoch(context.Background(), epoch)
					bt, err = it.Next()
				}
				if err != nil {
					b.Fatal(err)
				}
				images += bt.N
				bt.Release()
			}
			b.StopTimer()
			it.Close()
			b.ReportMetric(float64(images)/b.Elapsed().Seconds(), "img/s")
		})
	}
}

// TestLoaderSplitSeesTheOneRankBatches: 2 ranks x batch 4 yield, batch for
// batch and bit for bit, the halves of 1 rank x batch 8 (21 samples: the
// last global batch has 5, so rank 0 takes 4 and rank 1 one; with batch 8
// per rank the last holds 5, all rank 0's, and rank 1's is empty).
func TestLoaderSplitSeesTheOneRankBatches(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, train := testDataset(t) // 21 samples
	for _, b := range []int{4, 8} {
		for _, workers := range []int{0, 2} {
			base := LoaderConfig{Index: train, Transform: testTransform{4}, Workers: workers, Prefetch: 1, Shuffle: true, Seed: 9}
			one := base
			one.BatchSize = 2 * b
			lone, err := NewLoader(one)
			if err != nil {
				t.Fatal(err)
			}
			want := drain(t, lone, 2)
			lone.Close()
			var got [2][]snapshot
			for r := range 2 {
				c := base
				c.BatchSize, c.Split = b, Split{Rank: r, Ranks: 2}
				l, err := NewLoader(c)
				if err != nil {
					t.Fatal(err)
				}
				if l.NumBatches() != len(want) {
					t.Fatalf("rank %d: %d batches, one rank %d", r, l.NumBatches(), len(want))
				}
				got[r] = drain(t, l, 2)
				l.Close()
			}
			per := 3 * 4 * 4
			for j, w := range want {
				g0, g1 := got[0][j], got[1][j]
				if g0.N+g1.N != w.N || !slices.Equal(append(slices.Clone(g0.Samples), g1.Samples...), w.Samples) {
					t.Fatalf("b=%d workers=%d batch %d: ranks have %v + %v, one rank %v", b, workers, j, g0.Samples, g1.Samples, w.Samples)
				}
				if !slices.Equal(g0.X[:g0.N*per], w.X[:g0.N*per]) || !slices.Equal(g1.X[:g1.N*per], w.X[g0.N*per:w.N*per]) {
					t.Fatalf("b=%d workers=%d batch %d: pixels differ from the one-rank batch", b, workers, j)
				}
				if !slices.Equal(append(slices.Clone(g0.Labels[:g0.N]), g1.Labels[:g1.N]...), w.Labels[:w.N]) {
					t.Fatalf("b=%d batch %d: labels differ", b, j)
				}
			}
			if last := got[1][len(want)-1]; b == 8 && last.N != 0 {
				t.Fatalf("b=8: rank 1's last batch has %d samples, want an empty one", last.N)
			}
		}
	}
}
