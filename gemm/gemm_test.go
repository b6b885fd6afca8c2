package gemm

import (
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"testing"
)

// naive is the reference: float64 sums over op(A)·op(B).
func naive(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c[i*ldc+j])
			}
			out[i*n+j] = v
		}
	}
	return out
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// kernels are the micro-kernels this machine can run: the chosen ones and
// the pure-Go one (the fallback elsewhere, with no wide kernel), so both
// are checked here.
func kernels() map[string]kernels6 {
	return map[string]kernels6{"chosen": {kernel, wide}, "go": {kernelGo, wideKernel{}}}
}

// kernels6 is a 6x16 kernel and the wide one beside it (none for Go).
type kernels6 struct {
	k kernelFunc
	w wideKernel
}

func TestSgemmMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{
		{1, 1, 1}, {6, 16, 1}, {6, 16, 7}, {7, 17, 5}, {5, 15, 3}, {13, 33, 29},
		{mr*3 + 1, nr*2 + 3, kc + 5}, {mc + 7, 40, 9}, {64, 27, 50}, {3, nc + 5, 2}, {2, 3, 2*kc + 1},
	}
	defer func(k kernelFunc, w wideKernel) { kernel, wide = k, w }(kernel, wide)
	for name, kf := range kernels() {
		kernel, wide = kf.k, kf.w
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			if testing.Short() && m*n*k > 1<<16 {
				continue
			}
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}} {
						alpha, beta := ab[0], ab[1]
						// Row strides larger than the rows, to catch stride mix-ups.
						lda, ldb, ldc := k+3, n+2, n+1
						ar, br := m, k
						if ta {
							lda, ar = m+1, k
						}
						if tb {
							ldb, br = k+2, n
						}
						a := randSlice(rng, (ar-1)*lda+lda)
						b := randSlice(rng, (br-1)*ldb+ldb)
						c := randSlice(rng, (m-1)*ldc+ldc)
						if beta == 0 {
							for i := range c {
								c[i] = float32(math.NaN()) // beta 0 must not read C
							}
						}
						want := naive(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
						pad := c[len(c)-1]
						Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								got, w := float64(c[i*ldc+j]), want[i*n+j]
								if math.Abs(got-w) > 1e-5*math.Sqrt(float64(k))*(1+math.Abs(w)) {
									t.Fatalf("%s kernel, m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v: C[%d][%d] = %v, want %v",
										name, m, n, k, ta, tb, alpha, beta, i, j, got, w)
								}
							}
						}
						if last := c[len(c)-1]; ldc > n && !(last == pad || (last != last && pad != pad)) {
							t.Fatalf("%s kernel: Sgemm wrote past column n into the row padding", name)
						}
					}
				}
			}
		}
	}
}

func TestSgemmAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	a, b, c := make([]float32, 64*288), make([]float32, 288*256), make([]float32, 64*256)
	Sgemm(false, false, 64, 256, 288, 1, a, 288, b, 256, 0, c, 256)
	// A collection empties the scratch pool by design; what must not happen
	// is an allocation per call while the pool is warm.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if n := testing.AllocsPerRun(10, func() { Sgemm(false, true, 64, 256, 288, 1, a, 288, b, 288, 1, c, 256) }); n != 0 {
		t.Errorf("Sgemm allocated %v times per call", n)
	}
}

func TestName(t *testing.T) {
	t.Log(Name())
	if Name() == "" {
		t.Error("empty Name")
	}
}

// BenchmarkSgemm runs the reference CNN's GEMM shapes (per sample, batch
// 64, 64x64 input: conv 32 pool, 64 pool, 128) and reports GFLOPS.
func BenchmarkSgemm(b *testing.B) {
	for _, s := range []struct {
		name    string
		ta, tb  bool
		m, n, k int
	}{
		{"conv1-fwd-64x1024x288", false, false, 64, 1024, 288},
		{"conv1-dw-64x288x1024-tB", false, true, 64, 288, 1024},
		{"conv1-dx-288x1024x64-tA", true, false, 288, 1024, 64},
		{"conv2-fwd-128x256x576", false, false, 128, 256, 576},
		{"conv0-fwd-32x4096x27", false, false, 32, 4096, 27},
		{"square-512", false, false, 512, 512, 512},
	} {
		for name, kf := range kernels() {
			b.Run(s.name+"/"+name, func(b *testing.B) {
				defer func(k kernelFunc, w wideKernel) { kernel, wide = k, w }(kernel, wide)
				kernel, wide = kf.k, kf.w
				rng := rand.New(rand.NewPCG(1, 1))
				a := randSlice(rng, s.m*s.k)
				bb := randSlice(rng, s.k*s.n)
				c := make([]float32, s.m*s.n)
				lda, ldb := s.k, s.n
				if s.ta {
					lda = s.m
				}
				if s.tb {
					ldb = s.k
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					Sgemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}

// TestSgemmPackedEqualsSgemm: a product with A packed once (PackA) gives
// Sgemm's result bit for bit, with B stored or given as Panels, and the
// packed A is reused across products with different B and n.
func TestSgemmPackedEqualsSgemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var pa PackedA
	for _, s := range [][3]int{{1, 1, 1}, {6, 16, 7}, {16, 1024, 144}, {13, 33, 2*kc + 1}, {mc + 7, 40, 9}, {64, nc + 5, 30}, {512, 16, 600}} {
		m, n, k := s[0], s[1], s[2]
		for _, ta := range []bool{false, true} {
			lda := k + 1
			if ta {
				lda = m + 2
			}
			a := randSlice(rng, m*lda+k*lda)
			PackA(&pa, ta, m, k, a, lda)
			if pa.Rows() != m || pa.Depth() != k {
				t.Fatalf("packed %dx%d, want %dx%d", pa.Rows(), pa.Depth(), m, k)
			}
			for _, tb := range []bool{false, true} {
				for _, ab := range [][2]float32{{1, 0}, {-0.5, 2}} {
					ldb, ldc := n+3, n+1
					if tb {
						ldb = k + 2
					}
					b := randSlice(rng, (k+n)*ldb)
					c0 := randSlice(rng, m*ldc)
					want, got, viaPanels := slices.Clone(c0), slices.Clone(c0), slices.Clone(c0)
					Sgemm(ta, tb, m, n, k, ab[0], a, lda, b, ldb, ab[1], want, ldc)
					SgemmPacked(&pa, tb, n, ab[0], b, ldb, ab[1], got, ldc)
					SgemmPackedPanels(&pa, n, ab[0], &matrixB{b, ldb, tb}, ab[1], viaPanels, ldc)
					if !slices.Equal(got, want) || !slices.Equal(viaPanels, want) {
						t.Fatalf("m=%d n=%d k=%d transA=%v transB=%v alpha, beta=%v: packed A differs from Sgemm", m, n, k, ta, tb, ab)
					}
				}
			}
		}
	}
}

// TestSgemmPackedPanelsRowsEqualsWhole: a product split into row tiles
// (SgemmPackedPanelsRows, each from a multiple of RowBlock) gives every
// element the bits of the whole product (SgemmPackedPanels), at each
// precision and on the bf16 kernels and their fallback, and writes no
// element outside its tile.
func TestSgemmPackedPanelsRowsEqualsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	defer SetFastBF16(SetFastBF16(false))
	for _, fast := range []bool{false, true} {
		SetFastBF16(fast)
		for _, prec := range []Precision{FP32, TF32, BF16} {
			for _, s := range [][3]int{{12, 5, 7}, {37, 196, 300}, {mc + 30, 49, 2*kc + 3}, {512, 33, 64}} {
				m, n, k := s[0], s[1], s[2]
				var pa PackedA
				a := randSlice(rng, m*k)
				PackAPrec(&pa, prec, false, m, k, a, k)
				b := &matrixB{randSlice(rng, k*n), n, false}
				ldc := n + 2
				c0 := randSlice(rng, m*ldc)
				want := slices.Clone(c0)
				SgemmPackedPanels(&pa, n, 1.5, b, 0.5, want, ldc)
				// tiles of random lengths, each starting at a multiple of RowBlock
				got := slices.Clone(c0)
				for r0 := 0; r0 < m; {
					r1 := min(m, r0+RowBlock*(1+rng.IntN(4)))
					tile := slices.Clone(got)
					SgemmPackedPanelsRows(&pa, r0, r1, n, 1.5, b, 0.5, tile[r0*ldc:], ldc)
					if !slices.Equal(tile[:r0*ldc], got[:r0*ldc]) || !slices.Equal(tile[r1*ldc:], got[r1*ldc:]) {
						t.Fatalf("fast %v %v m=%d n=%d k=%d: rows [%d, %d) wrote outside them", fast, prec, m, n, k, r0, r1)
					}
					got, r0 = tile, r1
				}
				if !slices.Equal(got, want) {
					t.Fatalf("fast %v %v m=%d n=%d k=%d: row tiles differ from the whole product", fast, prec, m, n, k)
				}
			}
		}
	}
}
