package gemm

import (
	"math"
	"math/rand"
	"testing"
)

// TestPackAAsDefined: packA's row panels (not transposed: a filter
// gradient's dy) hold op(A)[ic+ir+i][pc+q] at panel ir, q·mr+i, and zeros
// in the rows past mb, for every height of a last panel (1 to 6 rows) and
// depths with and without a tail past a multiple of 16 (the AVX-512 loop's
// blocks; the rest in Go). Every slot is NaN before, so one left unwritten
// fails too.
func TestPackAAsDefined(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const lda, rows = 300, 40
	a := make([]float32, rows*lda)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	for _, kb := range []int{1, 7, 15, 16, 17, 32, 47, 64, 256} {
		for mb := 1; mb <= 19; mb++ {
			ic, pc := 3, 5
			panels := (mb + mr - 1) / mr
			dst := make([]float32, panels*mr*kb)
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			packA(dst, a, lda, false, ic, pc, mb, kb)
			for ir := 0; ir < panels*mr; ir += mr {
				for q := 0; q < kb; q++ {
					for i := 0; i < mr; i++ {
						want := float32(0)
						if ir+i < mb {
							want = a[(ic+ir+i)*lda+pc+q]
						}
						if got := dst[ir*kb+q*mr+i]; math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("kb=%d mb=%d: panel row %d, column %d: %v, want %v", kb, mb, ir+i, q, got, want)
						}
					}
				}
			}
		}
	}
}

// TestPackRowsVecRuns: where the AVX-512 kernels run, the vector loop
// takes every whole block of 16 columns (else TestPackAAsDefined would
// check only the Go loop).
func TestPackRowsVecRuns(t *testing.T) {
	a, p := make([]float32, 6*40), make([]float32, mr*40)
	want := 0
	if HasAVX512() {
		want = 32
	}
	if got := packRowsVec(p, a, 0, 40, 6, 40); got != want {
		t.Errorf("packRowsVec did %d of 40 columns, want %d (HasAVX512 %v)", got, want, HasAVX512())
	}
}
