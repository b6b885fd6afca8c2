//go:build stokecuda

package cudaops

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"gorgonia.org/cu"

	"stoke/gemm"
)

// roundMantissa rounds x to keep of float32's 23 mantissa bits, to nearest
// even: TF32 keeps 10, bfloat16 7.
func roundMantissa(x float32, keep int) float32 {
	u := math.Float32bits(x)
	if u&0x7f800000 == 0x7f800000 {
		return x
	}
	drop := uint(23 - keep)
	half := uint32(1)<<(drop-1) - 1 + (u>>drop)&1
	return math.Float32frombits((u + half) &^ (1<<drop - 1))
}

// refGemm is C = alpha op(A) op(B) + beta C, row-major, in float64 over
// inputs rounded as p rounds them, and each element's sum of |alpha a b|.
func refGemm(p gemm.Precision, tA, tB bool, M, N, K int, alpha float32, a, b []float32, beta float32, c []float32) (out, mag []float64) {
	in := func(x float32) float64 {
		switch p {
		case gemm.TF32:
			return float64(roundMantissa(x, 10))
		case gemm.BF16:
			return float64(roundMantissa(x, 7))
		}
		return float64(x)
	}
	out, mag = make([]float64, M*N), make([]float64, M*N)
	for i := range M {
		for j := range N {
			var s, m float64
			for l := range K {
				av := a[i*K+l]
				if tA {
					av = a[l*M+i]
				}
				bv := b[l*N+j]
				if tB {
					bv = b[j*K+l]
				}
				s += in(av) * in(bv)
				m += math.Abs(float64(alpha) * float64(av) * float64(bv))
			}
			out[i*N+j] = float64(alpha)*s + float64(beta)*float64(c[i*N+j])
			mag[i*N+j] = m
		}
	}
	return out, mag
}

func upload(t *testing.T, x []float32) cu.DevicePtr {
	t.Helper()
	p, err := cu.MemAlloc(int64(4 * len(x)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cu.MemcpyHtoD(p, unsafe.Pointer(&x[0]), int64(4*len(x))); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGPUCublasGemm: cuBLAS (the real library on a GPU, the stand-in under
// scripts/gpu-sim.sh) computes the row-major products the engine asks for,
// every transpose pair, batched and not, at each precision: within float32
// accumulation of a reference whose inputs are rounded as that precision
// rounds them. A wrong operand order, leading dimension or precision (TF32
// or bf16 rounding is 1e-3 to 1e-2 relative) fails by far. On a real GPU,
// whose library is only allowed reduced precision and rounds its own way,
// the bound for tf32 and bf16 adds that rounding: 2^-keep of the sum of
// |alpha a b| (two operands, each within half a unit).
func TestGPUCublasGemm(t *testing.T) {
	d := openOrSkip(t)
	onStream(t, d, func(s cu.Stream) error {
		bl, err := NewCublas(os.Getenv("STOKE_TEST_CUBLAS"), s)
		var nc *NoCublasError
		if errors.As(err, &nc) && !d.Simulated() {
			t.Skip(err) // a real GPU without cuBLAS: nothing to test here
		}
		if err != nil {
			return err
		}
		defer bl.Close()
		t.Logf("cuBLAS %d from %s", bl.Major, bl.Path)
		rng := rand.New(rand.NewPCG(3, 4))
		for _, p := range []gemm.Precision{gemm.FP32, gemm.TF32, gemm.BF16} {
			for _, shape := range [][3]int{{1, 1, 1}, {5, 7, 3}, {33, 17, 65}} {
				for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					for _, batch := range []int{1, 3} {
						M, N, K := shape[0], shape[1], shape[2]
						a, b, c := make([]float32, batch*M*K), make([]float32, batch*K*N), make([]float32, batch*M*N)
						for _, x := range [][]float32{a, b, c} {
							for i := range x {
								x[i] = float32(rng.NormFloat64())
							}
						}
						alpha, beta := float32(1.25), float32(0.5)
						da, db, dc := upload(t, a), upload(t, b), upload(t, c)
						if err := bl.Gemm(p, tr[0], tr[1], M, N, K, alpha, da, db, beta, dc, batch, int64(M*K), int64(K*N), int64(M*N)); err != nil {
							return err
						}
						got := make([]float32, len(c))
						if err := s.Synchronize(); err != nil {
							return err
						}
						if err := cu.MemcpyDtoH(unsafe.Pointer(&got[0]), dc, int64(4*len(got))); err != nil {
							return err
						}
						for _, ptr := range []cu.DevicePtr{da, db, dc} {
							cu.MemFree(ptr)
						}
						for i := range batch {
							want, mag := refGemm(p, tr[0], tr[1], M, N, K, alpha, a[i*M*K:], b[i*K*N:], beta, c[i*M*N:])
							for j, w := range want {
								g := float64(got[i*M*N+j])
								tol := 1e-5 * (math.Abs(w) + math.Sqrt(float64(K)))
								if !d.Simulated() && p != gemm.FP32 {
									keep := map[gemm.Precision]int{gemm.TF32: 10, gemm.BF16: 7}[p]
									tol += math.Ldexp(mag[j], -keep)
								}
								if math.Abs(g-w) > tol {
									t.Fatalf("%s tA=%v tB=%v %dx%dx%d batch %d/%d: C[%d] = %g, want %g (off by %g > %g)",
										p, tr[0], tr[1], M, N, K, i, batch, j, g, w, math.Abs(g-w), tol)
								}
							}
						}
					}
				}
			}
		}
		return nil
	})
}

// TestGPUCublasMissingNamesWhereItLooked: a cuda.cublas setting naming a
// folder without the library gets an error listing the files tried.
func TestGPUCublasMissingNamesWhereItLooked(t *testing.T) {
	dir := t.TempDir()
	got := CublasCandidates(dir)
	want := []string{filepath.Join(dir, "libcublas.so.13"), filepath.Join(dir, "libcublas.so.12"), filepath.Join(dir, "libcublas.so.11")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("CublasCandidates(%s) = %v, want %v", dir, got, want)
	}
	e := (&NoCublasError{Tried: []string{dir + "/libcublas.so.13: no such file"}}).Error()
	for _, s := range []string{"libcublas.so.13", "cuda.cublas", "cuda.gemm own"} {
		if !strings.Contains(e, s) {
			t.Errorf("the error %q does not mention %q", e, s)
		}
	}
}
