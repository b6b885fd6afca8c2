package gemm

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
)

var bf16Rounds = flag.Int("bf16-rounds", 3, "BenchmarkBF16: rounds of the paths side by side")

// BenchmarkBF16 runs fp32 Sgemm, SgemmBF16 on the VDPBF16PS kernels
// (where HasBF16), SgemmBF16's fallback and SgemmPrec's reference path at
// BF16 (what train.precision bf16 runs where FastBF16 is off) side by
// side on the reference CNN's and resnet20's GEMM shapes (BenchmarkTiles's),
// one shape at a time so that the rounds alternate, and reports GFLOPS
// and GFLOPS-cpu (divided by the benchmark thread's CPU time, the ratios
// to trust on a loaded machine); the log names the CPU and the kernels:
//
//	go test -run x -bench BF16 -bf16-rounds 5 ./gemm
func BenchmarkBF16(b *testing.B) {
	b.Logf("cpu: %s; %s; %s", cpuDescription(), Name(), BF16Name())
	type path struct {
		name string
		f    func(ta, tb bool, m, n, k int, a []float32, lda int, bb []float32, ldb int, c []float32, ldc int)
	}
	paths := []path{{"fp32", func(ta, tb bool, m, n, k int, a []float32, lda int, bb []float32, ldb int, c []float32, ldc int) {
		Sgemm(ta, tb, m, n, k, 1, a, lda, bb, ldb, 0, c, ldc)
	}}}
	run := func(ks *bf16Kernels) func(ta, tb bool, m, n, k int, a []float32, lda int, bb []float32, ldb int, c []float32, ldc int) {
		return func(ta, tb bool, m, n, k int, a []float32, lda int, bb []float32, ldb int, c []float32, ldc int) {
			s := bf16Pool.Get().(*bf16Scratch)
			s.mat = matrixB{bb, ldb, tb}
			bf16Multiply(s, ks, ta, m, n, k, 1, a, lda, &s.mat, 0, c, ldc)
			s.mat = matrixB{}
			bf16Pool.Put(s)
		}
	}
	if HasBF16() {
		paths = append(paths, path{"bf16-vdpbf16ps", run(&bf16Kernel)})
	}
	paths = append(paths, path{"bf16-fallback", run(nil)}, path{"bf16-reference", func(ta, tb bool, m, n, k int, a []float32, lda int, bb []float32, ldb int, c []float32, ldc int) {
		defer SetFastBF16(SetFastBF16(false))
		SgemmPrec(BF16, ta, tb, m, n, k, 1, a, lda, bb, ldb, 0, c, ldc)
	}})
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
		{"r20-s1-fwd-16x1024x144", false, false, 16, 1024, 144},
		{"r20-s2-fwd-32x256x288", false, false, 32, 256, 288},
		{"r20-s3-fwd-64x64x576", false, false, 64, 64, 576},
		{"r20-s2-dw-32x288x256-tB", false, true, 32, 288, 256},
		{"r20-s1-dx-144x1024x16-tA", true, false, 144, 1024, 16},
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
		for r := 1; r <= *bf16Rounds; r++ {
			for _, p := range paths {
				b.Run(fmt.Sprintf("%s/r%d/%s", s.name, r, p.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU()
					for b.Loop() {
						p.f(s.ta, s.tb, s.m, s.n, s.k, a, lda, bb, ldb, c, s.n)
					}
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

// cpuDescription is the CPU's model name, family and model from
// /proc/cpuinfo, where there is one.
func cpuDescription() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	var parts []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || seen[k] {
			continue
		}
		switch k {
		case "model name", "cpu family", "model":
			seen[k] = true
			parts = append(parts, k+" "+v)
		}
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, ", ")
}
