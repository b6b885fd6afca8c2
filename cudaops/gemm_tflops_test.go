//go:build stokecuda

package cudaops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"gorgonia.org/cu"

	"stoke/gemm"
)

// gemmShapes are the convolutions of resnet18 and resnet50 at 224 px as
// the engine multiplies them (M = Cout, N = batch·Ho·Wo, K = Cin·k·k), at
// batch 64, and one filter gradient (K the long dimension, split-K).
var gemmShapes = []struct {
	name    string
	tB      bool
	M, N, K int
}{
	{"r18 3x3 64 @56 fwd", false, 64, 64 * 56 * 56, 576},
	{"r18 3x3 128 @28 fwd", false, 128, 64 * 28 * 28, 1152},
	{"r18 3x3 256 @14 fwd", false, 256, 64 * 14 * 14, 2304},
	{"r18 3x3 512 @7 fwd", false, 512, 64 * 7 * 7, 4608},
	{"r50 1x1 256->64 @56 fwd", false, 64, 64 * 56 * 56, 256},
	{"r50 1x1 64->256 @56 fwd", false, 256, 64 * 56 * 56, 64},
	{"r50 1x1 1024->256 @14 fwd", false, 256, 64 * 14 * 14, 1024},
	{"r50 1x1 2048->512 @7 fwd", false, 512, 64 * 7 * 7, 2048},
	{"r18 3x3 64 @56 dW", true, 64, 576, 64 * 56 * 56},
}

// TestGPUGemmThroughput measures, on real hardware, the TFLOPS of our own
// sgemm kernel and of cuBLAS at fp32, tf32 and bf16 on the shapes above
// (median of 5 timed runs after one warm-up, by events on one stream), for
// .gpu/run.sh's first GPU run (issue 23). It asserts only that each ran;
// the figures are its log. Skipped under the stand-in, whose timings are
// the host's, and without cuBLAS (the own kernel's figures are then all).
func TestGPUGemmThroughput(t *testing.T) {
	d := openOrSkip(t)
	skipOnStandIn(t, d, "GEMM throughput")
	withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
		bl, err := NewCublas(os.Getenv("STOKE_TEST_CUBLAS"), s)
		var nc *NoCublasError
		if errors.As(err, &nc) {
			t.Logf("no cuBLAS: %v", err)
			bl = nil
		} else if err != nil {
			return err
		}
		if bl != nil {
			defer bl.Close()
			t.Logf("cuBLAS %d from %s", bl.Major, bl.Path)
		}
		start, err := cu.MakeEvent(cu.DefaultEvent)
		if err != nil {
			return err
		}
		defer cu.DestroyEvent(&start)
		end, err := cu.MakeEvent(cu.DefaultEvent)
		if err != nil {
			return err
		}
		defer cu.DestroyEvent(&end)
		timeIt := func(run func() error) (float64, error) { // median ms of 5 after a warm-up
			if err := run(); err != nil {
				return 0, err
			}
			var ms []float64
			for range 5 {
				start.Record(s)
				if err := run(); err != nil {
					return 0, err
				}
				end.Record(s)
				if err := end.Synchronize(); err != nil {
					return 0, err
				}
				m, err := start.Elapsed(end)
				if err != nil {
					return 0, err
				}
				ms = append(ms, m)
			}
			return median(ms), nil
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var table strings.Builder
		fmt.Fprintf(&table, "%-28s %8s %8s %8s %8s   (TFLOPS)\n", "shape M x N x K", "own", "fp32", "tf32", "bf16")
		for _, sh := range gemmShapes {
			bufs := make([]buffer, 3)
			for i, n := range []int{sh.M * sh.K, sh.K * sh.N, sh.M * sh.N} {
				if bufs[i], err = g.alloc(n); err != nil {
					return err
				}
				host := make([]float32, n)
				for j := range host {
					host[j] = float32(rng.NormFloat64())
				}
				if err := g.upload(bufs[i], host); err != nil {
					return err
				}
			}
			flop := 2 * float64(sh.M) * float64(sh.N) * float64(sh.K)
			row := []string{}
			ms, err := timeIt(func() error { return g.sgemm(false, sh.tB, sh.M, sh.N, sh.K, bufs[0], bufs[1], bufs[2]) })
			if err != nil {
				return err
			}
			row = append(row, fmt.Sprintf("%8.1f", flop/ms/1e9))
			for _, p := range []gemm.Precision{gemm.FP32, gemm.TF32, gemm.BF16} {
				if bl == nil {
					row = append(row, fmt.Sprintf("%8s", "-"))
					continue
				}
				a, b, c := bufs[0].(devBuf).p, bufs[1].(devBuf).p, bufs[2].(devBuf).p
				ms, err := timeIt(func() error { return bl.Gemm(p, false, sh.tB, sh.M, sh.N, sh.K, 1, a, b, 0, c, 1, 0, 0, 0) })
				if err != nil {
					return err
				}
				row = append(row, fmt.Sprintf("%8.1f", flop/ms/1e9))
			}
			fmt.Fprintf(&table, "%-28s %s\n", fmt.Sprintf("%s %dx%dx%d", sh.name, sh.M, sh.N, sh.K), strings.Join(row, " "))
		} // the engine frees its buffers at the end (about 3 GB in all)
		t.Logf("GEMM throughput on %s:\n%s", d, table.String())
		return nil
	})
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2]
}
