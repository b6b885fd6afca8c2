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

	"gorgonia.org/cu"

	"stoke/model"

	"stoke/gemm"
)

// The engine's GEMM selection (cuda.gemm auto|cublas|own, cuda.cublas) and
// precision (gemm.Precision), through the engine: every product a step makes
// goes through the one the engine picked.

// cublasOrSkip is the cuda.cublas setting the tests use; on a real GPU
// without cuBLAS the test skips (under the stand-in, scripts/gpu-sim.sh puts
// its libcublas.so.11 on the library path, so there it must load).
func cublasOrSkip(t *testing.T, d *Device) string {
	t.Helper()
	setting := os.Getenv("STOKE_TEST_CUBLAS")
	_, _, err := loadCublas(setting)
	var nc *NoCublasError
	if errors.As(err, &nc) && !d.Simulated() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return setting
}

// TestGPUGemmStepsMatchCPU: 10 training steps of the cnn on the backend with
// its GEMMs on cuBLAS, and again on our own sgemm, against the CPU model from
// the same weights on the same batches, at fp32: loss and hits each step,
// and every weight within 1e-4 (momentum within 1e-3), as
// TestGPUNetMatchesModel holds our own sgemm; and cuBLAS's run against our
// own's within the same bounds.
func TestGPUGemmStepsMatchCPU(t *testing.T) {
	d := openOrSkip(t)
	setting := cublasOrSkip(t, d)
	opt := model.Options{Batch: 8, Seed: 5, Momentum: 0.9, WeightDecay: 5e-4}
	ref, err := model.New(gpuSpec, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	start, startV := state(t, ref)
	var backends [2]*Backend
	for k, g := range []string{GemmCublas, GemmOwn} {
		b, err := NewBackendWith(d, gpuSpec, opt, true, imageNet, EngineOptions{Gemm: g, Cublas: setting, Precision: gemm.FP32})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if info := b.Gemm(); info.Cublas != (g == GemmCublas) || info.Precision != gemm.FP32 {
			t.Fatalf("cuda.gemm %s: the backend reports %s", g, info)
		}
		if err := b.Load(start, startV); err != nil {
			t.Fatal(err)
		}
		backends[k] = b
	}
	t.Logf("cuBLAS backend: %s", backends[0].Gemm())
	rng := rand.New(rand.NewPCG(23, 7))
	S := gpuSpec.InputSize
	for step := range 10 {
		n := opt.Batch
		if step == 4 {
			n = 5 // a padded batch
		}
		x := randBatch(rng, opt.Batch*3*S*S)
		labels := make([]int32, opt.Batch)
		for i := range labels {
			labels[i] = int32(rng.IntN(gpuSpec.Classes))
		}
		wr, err := trainStep(ref, x, labels, n, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		for k, b := range backends {
			gr, _, err := runStep(b, model.Input{X: x, Labels: labels, N: n}, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(gr.Loss-wr.Loss) > 1e-4 || gr.Correct != wr.Correct {
				t.Fatalf("%s step %d: GPU %+v, CPU model %+v", b.Gemm(), step, gr, wr)
			}
			if k == 0 {
				t.Logf("step %d: loss cuBLAS %.6f CPU %.6f", step, gr.Loss, wr.Loss)
			}
		}
	}
	wp, wv := state(t, ref)
	cp, cv := state(t, backends[0])
	op, ov := state(t, backends[1])
	for i := range wp {
		close32(t, "cublas "+wp[i].Name, cp[i].Data, wp[i].Data, 1e-4)
		close32(t, "own "+wp[i].Name, op[i].Data, wp[i].Data, 1e-4)
		close32(t, "cublas vs own "+wp[i].Name, cp[i].Data, op[i].Data, 1e-4)
	}
	for i := range wv {
		close32(t, "cublas "+wv[i].Name, cv[i].Data, wv[i].Data, 1e-3)
		close32(t, "cublas vs own "+wv[i].Name, cv[i].Data, ov[i].Data, 1e-3)
	}
}

// TestGPUGemmPrecision: the engine's GEMM (our own sgemm, and cuBLAS), at
// fp32, tf32 and bf16, every transpose pair, against a float64 reference
// over inputs rounded as that precision rounds them (refGemm).
//
// The tolerance: a TF32 or bf16 input has at most 11 (8) significant bits,
// so each product of two is exact in float32 (22, 16 <= 24 bits), and an
// fp32 product is off by at most u = 2^-24 of itself; what is left is
// float32 accumulation, which, in any order, split into slices or not, is
// within K·u·sum|a·b| of the exact sum (the classic bound gamma_K, to first
// order), plus the product's own u for fp32. So |C - ref| <= (K+1)·u·mag
// with mag the sum of |a·b| over the rounded inputs. A GEMM that skipped
// the rounding misses it by far: each input is then off by up to 2^-11
// (2^-8) of itself, and the test checks that this reference differs from
// the fp32 one by more than the bound somewhere in each case up to K = 130,
// so the bound tells the precisions apart (at K = 2100 the worst-case bound
// is looser than the rounding's typical effect: that case checks split-K). On a real GPU, cuBLAS may round its own way
// (it is only allowed reduced precision): there its bound adds 2^-keep·mag,
// as TestGPUCublasGemm's does; our own kernel rounds as the reference.
func TestGPUGemmPrecision(t *testing.T) {
	d := openOrSkip(t)
	setting := cublasOrSkip(t, d)
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := [][3]int{{1, 1, 1}, {5, 7, 3}, {33, 17, 65}, {70, 3, 130}, {70, 130, 45},
		{3, 5, 2100}} // the last splits K over gridDim.z in our own kernel
	for _, g := range []string{GemmOwn, GemmCublas} {
		for _, prec := range []gemm.Precision{gemm.FP32, gemm.TF32, gemm.BF16} {
			withEngine(t, d, cu.NonBlocking, func(s cu.Stream, e *gpuEngine) error {
				if err := e.selectGemm(EngineOptions{Gemm: g, Cublas: setting, Precision: prec}); err != nil {
					return err
				}
				if (e.blas != nil) != (g == GemmCublas) {
					t.Fatalf("cuda.gemm %s: engine has cuBLAS %v", g, e.blas != nil)
				}
				for _, sh := range shapes {
					for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
						M, N, K := sh[0], sh[1], sh[2]
						a, b := randBatch(rng, M*K), randBatch(rng, K*N)
						ab, err1 := e.alloc(M * K)
						bb, err2 := e.alloc(K * N)
						cb, err3 := e.alloc(M * N)
						if err := first(err1, err2, err3); err != nil {
							return err
						}
						got := make([]float32, M*N)
						for i := range got {
							got[i] = float32(math.NaN()) // C is written, never read (beta 0)
						}
						if err := first(e.upload(ab, a), e.upload(bb, b), e.upload(cb, got)); err != nil {
							return err
						}
						if err := e.sgemm(tr[0], tr[1], M, N, K, ab, bb, cb); err != nil {
							return err
						}
						if err := e.download(got, cb); err != nil {
							return err
						}
						zero := make([]float32, M*N)
						want, _ := refGemm(prec, tr[0], tr[1], M, N, K, 1, a, b, 0, zero)
						plain, _ := refGemm(gemm.FP32, tr[0], tr[1], M, N, K, 1, a, b, 0, zero)
						mag := roundedMag(prec, tr[0], tr[1], M, N, K, a, b)
						keep := map[gemm.Precision]int{gemm.FP32: 23, gemm.TF32: 10, gemm.BF16: 7}[prec]
						distinct := prec == gemm.FP32 || K < 3 || K > 130
						for j, w := range want {
							tol := float64(K+1)*math.Ldexp(mag[j], -24) + 1e-30
							if g == GemmCublas && !d.Simulated() && prec != gemm.FP32 {
								tol += math.Ldexp(mag[j], -keep)
							}
							if gv := float64(got[j]); !(math.Abs(gv-w) <= tol) {
								t.Fatalf("%s %s tA=%v tB=%v %dx%dx%d: C[%d] = %g, want %g (off by %g > %g)",
									g, prec, tr[0], tr[1], M, N, K, j, gv, w, math.Abs(gv-w), tol)
							}
							if math.Abs(plain[j]-w) > tol {
								distinct = true
							}
						}
						if !distinct {
							t.Fatalf("%s %dx%dx%d: the %s reference is within the bound of the fp32 one everywhere: the test cannot tell them apart", g, M, N, K, prec)
						}
					}
				}
				return nil
			})
		}
	}
}

// roundedMag is each element's sum of |a·b| over the inputs rounded as p
// rounds them.
func roundedMag(p gemm.Precision, tA, tB bool, M, N, K int, a, b []float32) []float64 {
	r := func(x float32) float64 {
		switch p {
		case gemm.TF32:
			return float64(roundMantissa(x, 10))
		case gemm.BF16:
			return float64(roundMantissa(x, 7))
		}
		return float64(x)
	}
	out := make([]float64, M*N)
	for i := range M {
		for j := range N {
			var m float64
			for l := range K {
				av, bv := a[i*K+l], b[l*N+j]
				if tA {
					av = a[l*M+i]
				}
				if tB {
					bv = b[j*K+l]
				}
				m += math.Abs(r(av) * r(bv))
			}
			out[i*N+j] = m
		}
	}
	return out
}

// TestGPUGemmSelection: cuda.gemm cublas with a cuda.cublas folder that has
// no library is an error naming each file tried and what to do; auto with
// that folder trains on our own sgemm and says where it looked; own never
// loads cuBLAS; an unknown choice is refused naming the choices.
func TestGPUGemmSelection(t *testing.T) {
	d := openOrSkip(t)
	dir := t.TempDir()
	opt := model.Options{Batch: 2, Seed: 1}
	_, err := NewBackendWith(d, gpuSpec, opt, true, imageNet, EngineOptions{Gemm: GemmCublas, Cublas: dir})
	var nc *NoCublasError
	if !errors.As(err, &nc) {
		t.Fatalf("cuda.gemm cublas, cuda.cublas %s (empty): got %v, want a NoCublasError", dir, err)
	}
	for _, s := range []string{"cuda.gemm cublas", filepath.Join(dir, "libcublas.so.13"), filepath.Join(dir, "libcublas.so.12"),
		filepath.Join(dir, "libcublas.so.11"), "cuda.cublas", "cuda.gemm own"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not mention %q:\n%v", s, err)
		}
	}
	b, err := NewBackendWith(d, gpuSpec, opt, true, imageNet, EngineOptions{Gemm: GemmAuto, Cublas: dir})
	if err != nil {
		t.Fatalf("cuda.gemm auto without cuBLAS: %v", err)
	}
	info := b.Gemm()
	if info.Cublas || !strings.Contains(info.String(), filepath.Join(dir, "libcublas.so.12")) || !strings.Contains(info.String(), "gemm=own") {
		t.Errorf("cuda.gemm auto without cuBLAS: the device line says %q; want our own GEMM and where it looked", info)
	}
	x := make([]float32, opt.Batch*3*gpuSpec.InputSize*gpuSpec.InputSize)
	if _, _, err := runStep(b, model.Input{X: x, Labels: []int32{1, 2}, N: 2}, 0.1); err != nil {
		t.Fatalf("a step on the fallback: %v", err)
	}
	b.Close()
	for _, g := range []string{GemmOwn, ""} {
		b, err := NewBackendWith(d, gpuSpec, opt, true, imageNet, EngineOptions{Gemm: g, Cublas: filepath.Join(dir, "nothing.so")})
		if g == GemmOwn && (err != nil || b.Gemm().Cublas || b.Gemm().Note != "") {
			t.Errorf("cuda.gemm own with a cuda.cublas that names nothing: %v, %v; want our own, no note", err, b.Gemm())
		}
		if g == "" && (err != nil || b.Gemm().Cublas || !strings.Contains(b.Gemm().Note, "nothing.so")) {
			t.Errorf("cuda.gemm \"\" (auto): %v, %v; want our own with a note naming nothing.so", err, b.Gemm())
		}
		if b != nil {
			b.Close()
		}
	}
	for _, eo := range []EngineOptions{{Gemm: "cudnn"}, {Precision: gemm.Precision(7)}} {
		_, err := NewBackendWith(d, gpuSpec, opt, true, imageNet, eo)
		if err == nil || (eo.Gemm != "" && !strings.Contains(err.Error(), "auto, cublas, own")) {
			t.Errorf("%+v: got %v, want an error naming the choices", eo, err)
		}
	}
}

// TestGPUGemmBadCublas: under the stand-in, a cuda.cublas folder whose
// libcublas.so.12 is the stand-in's cuBLAS 11 and whose libcublas.so.13 is
// not a cuBLAS at all (the driver): the error through the engine names each
// file and what is wrong with it.
func TestGPUGemmBadCublas(t *testing.T) {
	d := openOrSkip(t)
	if !d.Simulated() {
		t.Skip("builds its bad libraries from the stand-in's")
	}
	cublasOrSkip(t, d) // the good one first, so that the bad ones are refused as such, not as a second library
	lib := filepath.Dir(driverLibraryPath())
	dir := t.TempDir()
	for name, target := range map[string]string{"libcublas.so.12": "libcublas.so.11", "libcublas.so.13": "libcuda.so.1"} {
		if err := os.Symlink(filepath.Join(lib, target), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := NewBackendWith(d, gpuSpec, model.Options{Batch: 2, Seed: 1}, true, imageNet, EngineOptions{Gemm: GemmCublas, Cublas: dir})
	var nc *NoCublasError
	if !errors.As(err, &nc) {
		t.Fatalf("got %v, want a NoCublasError", err)
	}
	for _, s := range []string{"libcublas.so.12 reports cuBLAS major version 11, but its name says 12",
		"libcublas.so.13 has no cublasCreate_v2: not a cuBLAS 11 or newer", "libcublas.so.11: "} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q:\n%v", s, err)
		}
	}
	t.Logf("%v", err)
}
