package gemm

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var tileRounds = flag.Int("tile-rounds", 3, "BenchmarkTiles: rounds of the kernels side by side")

// withKernels runs f with Sgemm held to the given kernels.
func withKernels(k kernelFunc, w wideKernel, f func()) {
	defer func(k kernelFunc, w wideKernel) { kernel, wide = k, w }(kernel, wide)
	kernel, wide = k, w
	f()
}

// TestAVX512BitIdenticalToAVX2: every AVX-512 tile gives the AVX2 kernel's
// result bit for bit (so the model's "avx2" state hashes hold on either),
// with edges in m and n, k of 1, odd, past kc and past two blocks, both
// transposes, alpha and beta 0, 1 and others, through Sgemm, SgemmPanels
// and SgemmPacked; C's row padding is compared too, and NaN in C must not
// leak in where beta is 0. Last row panels of every height from 1 to 5
// check the row kernels (wideKernel.part).
func TestAVX512BitIdenticalToAVX2(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512F on this CPU or OS")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := [][3]int{
		{1, 1, 1}, {6, 16, 1}, {12, 32, 1}, {12, 32, 2}, {12, 32, 3}, {13, 33, 7}, {11, 31, 5},
		{24, 64, 16}, {23, 65, 9}, {18, 48, 4}, {30, 96, 33}, {64, 1024, 27}, {64, 288, 64},
		{mc + 7, 3*32 + 17, kc + 5}, {mc + 13, 40, 2*kc + 1}, {32, 4096 + 40, 3}, {128, 64, 577},
		// a last row panel of 1 to 5 rows under 12x32 (the row kernels)
		{14, 64, 5}, {15, 32, 2}, {16, 96, 9}, {17, 32, 1}, {4, 32, 3}, {2, 70, 4},
	}
	alphaBeta := [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0.3, 0}, {1, -1.25}}
	var pa PackedA
	for _, wk := range wideKernels {
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, ab := range alphaBeta {
						alpha, beta := ab[0], ab[1]
						lda, ldb, ldc := k+3, n+2, n+1
						ar, br := m, k
						if ta {
							lda, ar = m+1, k
						}
						if tb {
							ldb, br = k+2, n
						}
						a := randSlice(rng, ar*lda)
						b := randSlice(rng, br*ldb)
						c0 := randSlice(rng, m*ldc)
						if beta == 0 {
							for i := range c0 {
								if i%ldc < n {
									c0[i] = float32(math.NaN())
								}
							}
						}
						want := slices.Clone(c0)
						withKernels(kernel6x16AVX2, wideKernel{}, func() {
							Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc)
						})
						got, panels, packed := slices.Clone(c0), slices.Clone(c0), slices.Clone(c0)
						withKernels(kernel6x16AVX2, wk.w, func() {
							Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
							SgemmPanels(ta, m, n, k, alpha, a, lda, &matrixB{b, ldb, tb}, beta, panels, ldc)
							PackA(&pa, ta, m, k, a, lda)
							SgemmPacked(&pa, tb, n, alpha, b, ldb, beta, packed, ldc)
						})
						for what, c := range map[string][]float32{"Sgemm": got, "SgemmPanels": panels, "SgemmPacked": packed} {
							if i := firstDiff(c, want); i >= 0 {
								t.Fatalf("%s %s, m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v: C[%d][%d] = %v (%#x), AVX2 gives %v (%#x)",
									wk.name, what, m, n, k, ta, tb, alpha, beta, i/ldc, i%ldc, c[i], math.Float32bits(c[i]), want[i], math.Float32bits(want[i]))
							}
						}
					}
				}
			}
		}
	}
}

func TestChooseKernel(t *testing.T) {
	for _, c := range []struct {
		env          string
		avx2, avx512 bool
		wide         bool
		name         string
	}{
		{"", true, true, true, "AVX-512F 12x32"},
		{"auto", true, true, true, "AVX-512F 12x32"},
		{"avx2", true, true, false, "AVX2+FMA 6x16 micro-kernel (STOKE_GEMM=avx2)"},
		{"avx512", true, false, false, "AVX2+FMA 6x16 micro-kernel (STOKE_GEMM=avx512, but this CPU or OS has no AVX-512F)"},
		{"avx", true, true, true, `(STOKE_GEMM="avx" ignored: want avx2, avx512 or auto)`},
		{"", false, false, false, "pure Go"},
	} {
		_, w, name := chooseKernel(c.env, c.avx2, c.avx512)
		if (w.main != nil) != c.wide || !strings.Contains(name, c.name) {
			t.Errorf("STOKE_GEMM=%q avx2=%v avx512=%v: wide=%v, %q; want wide=%v and %q in the name", c.env, c.avx2, c.avx512, w.main != nil, name, c.wide, c.name)
		}
	}
}

// BenchmarkTiles runs the AVX2 6x16 kernel and each AVX-512 tile (and the
// chosen one without its row kernels for partial panels) side by
// side on the reference CNN's shapes (BenchmarkSgemm's), one shape at a time,
// so that with -count=N the rounds alternate; GFLOPS-cpu divides by the
// benchmark thread's CPU time (the ratios to trust on a loaded machine):
//
//	go test -run x -bench Tiles -count 5 ./gemm
func BenchmarkTiles(b *testing.B) {
	b.Log(Name())
	if !hasAVX512 {
		b.Skip("no AVX-512F on this CPU or OS")
	}
	kernels := []struct {
		name string
		w    wideKernel
	}{{"avx2-6x16", wideKernel{}}}
	for _, wk := range wideKernels {
		kernels = append(kernels, struct {
			name string
			w    wideKernel
		}{"avx512-" + wk.name, wk.w})
	}
	// The chosen tile with its last partial row panels through 6x32, a
	// scratch tile and addTile, as before the row kernels.
	scratch := wideKernels[0].w
	scratch.part = [mr]kernelFunc{}
	kernels = append(kernels, struct {
		name string
		w    wideKernel
	}{"avx512-" + wideKernels[0].name + "-scratch", scratch})
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
		// resnet20 at 32 px: stage 1 and 3 forward, stage 2's dW.
		{"r20-s1-fwd-16x1024x144", false, false, 16, 1024, 144},
		{"r20-s3-fwd-64x64x576", false, false, 64, 64, 576},
		{"r20-s2-dw-32x288x256-tB", false, true, 32, 288, 256},
	} {
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
		for r := 1; r <= *tileRounds; r++ {
			for _, kn := range kernels {
				b.Run(fmt.Sprintf("%s/r%d/%s", s.name, r, kn.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU()
					withKernels(kernel6x16AVX2, kn.w, func() {
						for b.Loop() {
							Sgemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
						}
					})
					flop := 2 * float64(s.m*s.n*s.k) * float64(b.N)
					b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOPS")
					if cpu := threadCPU() - cpu0; cpu > 0 {
						b.ReportMetric(flop/cpu.Seconds()/1e9, "GFLOPS-cpu")
					}
				})
			}
		}
	}
}
