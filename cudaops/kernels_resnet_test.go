//go:build stokecuda

package cudaops

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/cu"
)

// kernelBench is a GPU engine on its own stream for one test, with helpers
// that upload host data and read results back.
type kernelBench struct {
	t   *testing.T
	g   *gpuEngine
	rng *rand.Rand
}

// withKernels runs f with a GPU engine (the context current on a locked
// thread), skipping when there is no usable GPU.
func withKernels(t *testing.T, seed uint64, f func(kb *kernelBench)) {
	t.Helper()
	d := openOrSkip(t)
	err := d.do(func() error {
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s.Destroy()
		g, err := newGPUEngine(s)
		if err != nil {
			return err
		}
		defer g.free()
		f(&kernelBench{t: t, g: g, rng: rand.New(rand.NewPCG(seed, 13))})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (kb *kernelBench) must(what string, err error) {
	kb.t.Helper()
	if err != nil {
		kb.t.Fatalf("%s: %v", what, err)
	}
}

// put uploads v into a fresh device buffer.
func (kb *kernelBench) put(v []float32) buffer {
	kb.t.Helper()
	b, err := kb.g.alloc(len(v))
	kb.must("alloc", err)
	kb.must("upload", kb.g.upload(b, v))
	return b
}

// get downloads n floats from b.
func (kb *kernelBench) get(b buffer, n int) []float32 {
	kb.t.Helper()
	out := make([]float32, n)
	kb.must("download", kb.g.download(out, b))
	return out
}

func TestGPUAdd(t *testing.T) {
	withKernels(t, 1, func(kb *kernelBench) {
		n := 1000
		a, b := randBatch(kb.rng, n), randBatch(kb.rng, n)
		want := make([]float32, n)
		for k := range want {
			want[k] = a[k] + b[k]
		}
		da, db, dc := kb.put(a), kb.put(b), kb.put(make([]float32, n))
		kb.must("add", kb.g.add(da, db, dc, n))
		close32(t, "add", kb.get(dc, n), want, 0)
		close32(t, "add leaves a", kb.get(da, n), a, 0)
		kb.must("add in place", kb.g.add(da, db, da, n))
		close32(t, "add in place", kb.get(da, n), want, 0)
		// Only the first n: the tail of a longer buffer keeps its values.
		kb.must("add n-1", kb.g.add(db, db, db, n-1))
		got := kb.get(db, n)
		for k := range n - 1 {
			want[k] = b[k] + b[k]
		}
		want[n-1] = b[n-1]
		close32(t, "add first n-1", got, want, 0)
		if err := kb.g.add(da, db, kb.put(make([]float32, 10)), n); err == nil {
			t.Fatal("add into a 10-float buffer of 1000 values: no error")
		}
	})
}
