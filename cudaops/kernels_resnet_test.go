//go:build stokecuda

package cudaops

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gorgonia.org/cu"

	"stoke/cpuops"
	"stoke/model"
)

// The ResNets' kernels (kernels_resnet.go) against the host functions they
// must match: cpuops's Conv2d, BatchNorm, MaxPool, AddReLU, ReLUBackward
// and model's optimizer updates, on small random inputs (the stand-in runs
// kernels on the CPU, slowly). Tolerances are relative, as close32 reads
// them: |got - want| <= tol·(1 + |want|).

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
	withEngine(t, openOrSkip(t), cu.NonBlocking, func(_ cu.Stream, g *gpuEngine) error {
		f(&kernelBench{t: t, g: g, rng: rand.New(rand.NewPCG(seed, 13))})
		return nil
	})
}

func (kb *kernelBench) must(what string, err error) {
	kb.t.Helper()
	if err != nil {
		kb.t.Fatalf("%s: %v", what, err)
	}
}

// put uploads v into a fresh device buffer of len(v) floats.
func (kb *kernelBench) put(v []float32) buffer {
	kb.t.Helper()
	b, err := kb.g.alloc(len(v))
	kb.must("alloc", err)
	kb.must("upload", kb.g.upload(b, v))
	return b
}

// get downloads b (all of it).
func (kb *kernelBench) get(b buffer) []float32 {
	kb.t.Helper()
	out := make([]float32, b.(devBuf).n)
	kb.must("download", kb.g.download(out, b))
	return out
}

// check downloads b and compares it with want, logging the largest
// difference seen (relative as close32 measures it).
func (kb *kernelBench) check(what string, b buffer, want []float32, tol float64) {
	kb.t.Helper()
	got := kb.get(b)
	var worst float64
	for k := range min(len(got), len(want)) {
		worst = max(worst, math.Abs(float64(got[k]-want[k]))/(1+math.Abs(float64(want[k]))))
	}
	close32(kb.t, what, got, want, tol)
	kb.t.Logf("%-34s ok (%d values, max diff %.2g, tol %.0g)", what, len(want), worst, tol)
}

// rnd is n values 𝒩(mean, sd²).
func (kb *kernelBench) rnd(n int, mean, sd float64) []float32 {
	v := make([]float32, n)
	for k := range v {
		v[k] = float32(mean + sd*kb.rng.NormFloat64())
	}
	return v
}

func TestGPUAdd(t *testing.T) {
	withKernels(t, 1, func(kb *kernelBench) {
		n := 1000
		a, b := kb.rnd(n, 0, 1), kb.rnd(n, 0, 1)
		want := make([]float32, n)
		for k := range want {
			want[k] = a[k] + b[k]
		}
		da, db, dc := kb.put(a), kb.put(b), kb.put(make([]float32, n))
		kb.must("add", kb.g.add(da, db, dc, n))
		kb.check("add", dc, want, 0)
		kb.check("add leaves a", da, a, 0)
		kb.must("add in place", kb.g.add(da, db, da, n))
		kb.check("add in place", da, want, 0)
		// Only the first n: the tail of a longer buffer keeps its values.
		kb.must("add n-1", kb.g.add(db, db, db, n-1))
		for k := range n - 1 {
			want[k] = b[k] + b[k]
		}
		want[n-1] = b[n-1]
		kb.check("add first n-1", db, want, 0)
		if err := kb.g.add(da, db, kb.put(make([]float32, 10)), n); err == nil {
			t.Fatal("add into a 10-float buffer of 1000 values: no error")
		}
		// copyD2D and swap01, the other data movers.
		cp := kb.put(make([]float32, n))
		kb.must("copy", kb.g.copyD2D(da, cp, n))
		kb.check("copyD2D", cp, kb.get(da), 0)
		d0, d1, hw := 3, 5, 7
		x := kb.rnd(d0*d1*hw, 0, 1)
		sw := make([]float32, len(x))
		for a := range d0 {
			for b := range d1 {
				copy(sw[(b*d0+a)*hw:(b*d0+a+1)*hw], x[(a*d1+b)*hw:(a*d1+b+1)*hw])
			}
		}
		dsw := kb.put(make([]float32, len(x)))
		kb.must("swap01", kb.g.swap01(kb.put(x), dsw, d0, d1, hw))
		kb.check("swap01", dsw, sw, 0)
	})
}

// TestGPUIm2colSteps: im2col and col2im on grids too small for their
// matrices, so that each thread steps its (b, oh, ow) and (b, c, ih, iw)
// counters by the grid's stride (across rows, planes and samples), give the
// same bits as with a thread per element (the GEMM between them unchanged).
func TestGPUIm2colSteps(t *testing.T) {
	withKernels(t, 4, func(kb *kernelBench) {
		defer func(v int) { colGridBlocks = v }(colGridBlocks)
		for _, s := range []convShape{
			{B: 3, Cin: 3, H: 9, W: 7, Cout: 4, K: 3, Stride: 2, Pad: 1},
			{B: 2, Cin: 3, H: 13, W: 11, Cout: 4, K: 7, Stride: 2, Pad: 3},
			{B: 3, Cin: 4, H: 7, W: 8, Cout: 6, K: 1, Stride: 2, Pad: 0},
			// More columns than 256 threads: the im2col counters step too
			// (by 256 = 1 sample + 11 rows + 3 columns of 12x11 here).
			{B: 5, Cin: 2, H: 23, W: 21, Cout: 3, K: 3, Stride: 2, Pad: 1},
			{B: 4, Cin: 2, H: 19, W: 17, Cout: 3, K: 3, Stride: 1, Pad: 1},
		} {
			ws, err := kb.g.alloc(s.Workspace())
			kb.must("alloc", err)
			gx, gw, gdy := kb.put(kb.rnd(s.InLen(), 0, 1)), kb.put(kb.rnd(s.WLen(), 0, 0.3)), kb.put(kb.rnd(s.OutLen(), 0, 1))
			gy, gdx, gdw := kb.put(make([]float32, s.OutLen())), kb.put(make([]float32, s.InLen())), kb.put(make([]float32, s.WLen()))
			run := func() (y, dx, dw []float32) {
				kb.must("conv2dForward", kb.g.conv2dForward(s, gx, gw, gy, ws, nil))
				kb.must("conv2dBackwardData", kb.g.conv2dBackwardData(s, gw, gdy, gdx, ws))
				kb.must("conv2dBackwardFilter", kb.g.conv2dBackwardFilter(s, gx, gdy, gdw, ws, nil))
				return kb.get(gy), kb.get(gdx), kb.get(gdw)
			}
			colGridBlocks = 1 << 16
			y, dx, dw := run()
			for _, blocks := range []int{1, 2, 5} {
				colGridBlocks = blocks
				kb.must("zero", kb.g.zero(gy, 0, s.OutLen()))
				kb.must("zero", kb.g.zero(gdx, 0, s.InLen()))
				run()
				what := " K" + itoa(s.K) + " S" + itoa(s.Stride) + " on " + itoa(blocks) + " blocks"
				kb.check("conv forward"+what, gy, y, 0)
				kb.check("conv backward data"+what, gdx, dx, 0)
				kb.check("conv backward filter"+what, gdw, dw, 0)
			}
		}
	})
}

// TestGPUIm2colKept: a filter gradient from the forward's kept im2col
// matrix (conv2dForwardKeep, conv2dBackwardFilterFrom) is the same bits as
// one that rebuilds it, with one launch fewer (the im2col), counted at the
// driver.
func TestGPUIm2colKept(t *testing.T) {
	withKernels(t, 5, func(kb *kernelBench) {
		for _, s := range []convShape{
			{B: 3, Cin: 3, H: 9, W: 7, Cout: 4, K: 3, Stride: 2, Pad: 1},
			{B: 2, Cin: 4, H: 8, W: 8, Cout: 4, K: 3, Stride: 1, Pad: 1, Groups: 2},
		} {
			ws, err := kb.g.alloc(s.Workspace())
			kb.must("alloc", err)
			keep, err := kb.g.alloc(s.ColLen())
			kb.must("alloc", err)
			gx, gw, gdy := kb.put(kb.rnd(s.InLen(), 0, 1)), kb.put(kb.rnd(s.WLen(), 0, 0.3)), kb.put(kb.rnd(s.OutLen(), 0, 1))
			gy, gdw := kb.put(make([]float32, s.OutLen())), kb.put(make([]float32, s.WLen()))
			kb.must("conv2dForward", kb.g.conv2dForward(s, gx, gw, gy, ws, nil))
			kb.must("conv2dBackwardFilter", kb.g.conv2dBackwardFilter(s, gx, gdy, gdw, ws, nil))
			y, dw := kb.get(gy), kb.get(gdw)
			kb.must("zero", kb.g.zero(gdw, 0, s.WLen()))
			kb.must("conv2dForwardKeep", kb.g.conv2dForwardKeep(s, gx, gw, gy, ws, nil, keep))
			// Another conv's call in between overwrites the shared workspace.
			kb.must("conv2dBackwardData", kb.g.conv2dBackwardData(s, gw, gdy, kb.put(make([]float32, s.InLen())), ws))
			before := ReadDriverCounters()
			kb.must("conv2dBackwardFilterFrom", kb.g.conv2dBackwardFilterFrom(s, gx, gdy, gdw, ws, nil, keep))
			from := ReadDriverCounters().Sub(before).Launches
			before = ReadDriverCounters()
			kb.must("conv2dBackwardFilter", kb.g.conv2dBackwardFilter(s, gx, gdy, kb.put(make([]float32, s.WLen())), ws, nil))
			rebuilt := ReadDriverCounters().Sub(before).Launches
			what := " groups" + itoa(s.groups())
			kb.check("conv forward, matrix kept"+what, gy, y, 0)
			kb.check("filter gradient from the kept matrix"+what, gdw, dw, 0)
			if from+1 != rebuilt {
				t.Errorf("%s: %d launches from the kept matrix, %d rebuilding it: want one fewer", what, from, rebuilt)
			}
			t.Logf("%s: filter gradient %d launches from the kept matrix, %d rebuilding it (%d floats of im2col not written)", what, from, rebuilt, s.ColLen())
		}
	})
}

// TestGPUConv2d: forward, backward-data and backward-filter of the ResNets'
// convolutions (strided, 1x1, the imagenet stem's 7x7/2/3) against
// cpuops.Conv2d.
func TestGPUConv2d(t *testing.T) {
	withKernels(t, 2, func(kb *kernelBench) {
		for _, s := range []convShape{
			{B: 3, Cin: 3, H: 9, W: 7, Cout: 4, K: 3, Stride: 2, Pad: 1},   // a stage's first 3x3
			{B: 2, Cin: 4, H: 6, W: 6, Cout: 5, K: 3, Stride: 1, Pad: 1},   // the other 3x3s
			{B: 3, Cin: 4, H: 7, W: 8, Cout: 6, K: 1, Stride: 2, Pad: 0},   // the downsample's 1x1
			{B: 2, Cin: 5, H: 5, W: 5, Cout: 3, K: 1, Stride: 1, Pad: 0},   // 1x1 stride 1
			{B: 2, Cin: 3, H: 13, W: 11, Cout: 4, K: 7, Stride: 2, Pad: 3}, // the imagenet stem
			{B: 2, Cin: 2, H: 32, W: 32, Cout: 3, K: 3, Stride: 1, Pad: 1}, // B·H·W = 2048: sgemm splits dw's inner dimension
		} {
			c, err := cpuops.NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, s.K, s.Stride, s.Pad, 1)
			kb.must("NewConv2d", err)
			if c.OutLen() != s.OutLen() {
				t.Fatalf("%+v: OutLen %d, cpuops says %d", s, s.OutLen(), c.OutLen())
			}
			x, w, dy := kb.rnd(s.InLen(), 0, 1), kb.rnd(s.WLen(), 0, 0.3), kb.rnd(s.OutLen(), 0, 1)
			y, dx, dw := make([]float32, s.OutLen()), make([]float32, s.InLen()), make([]float32, s.WLen())
			c.Forward(x, w, y)
			c.BackwardData(w, dy, dx)
			c.BackwardFilter(x, dy, dw)
			ws, err := kb.g.alloc(s.Workspace())
			kb.must("alloc", err)
			gx, gw, gdy := kb.put(x), kb.put(w), kb.put(dy)
			// Outputs start as garbage: every element must be written.
			gy, gdx, gdw := kb.put(kb.rnd(len(y), 5, 1)), kb.put(kb.rnd(len(dx), 5, 1)), kb.put(kb.rnd(len(dw), 5, 1))
			kb.must("conv2dForward", kb.g.conv2dForward(s, gx, gw, gy, ws, nil))
			kb.must("conv2dBackwardData", kb.g.conv2dBackwardData(s, gw, gdy, gdx, ws))
			kb.must("conv2dBackwardFilter", kb.g.conv2dBackwardFilter(s, gx, gdy, gdw, ws, nil))
			name := func(what string) string {
				return what + " " + itoa(s.K) + "x" + itoa(s.K) + "/" + itoa(s.Stride) + "/" + itoa(s.Pad)
			}
			// float32 sums in another order (the GEMM's tiles, cpuops's
			// panels): 1e-6 relative per √(terms summed), values ~ 1.
			ho, wo := s.Out()
			terms := func(k int) float64 { return 1e-6 * math.Sqrt(float64(k)) }
			kb.check(name("conv forward"), gy, y, terms(s.Cin*s.K*s.K))
			kb.check(name("conv backward data"), gdx, dx, terms(s.Cout*s.K*s.K))
			kb.check(name("conv backward filter"), gdw, dw, terms(s.B*ho*wo))
		}
		s := convShape{B: 2, Cin: 3, H: 8, W: 8, Cout: 4, K: 3, Stride: 2, Pad: 1}
		small, err := kb.g.alloc(s.Workspace() - 1)
		kb.must("alloc", err)
		x, w, y := kb.put(make([]float32, s.InLen())), kb.put(make([]float32, s.WLen())), kb.put(make([]float32, s.OutLen()))
		if err := kb.g.conv2dForward(s, x, w, y, small, nil); err == nil {
			t.Fatal("conv2dForward with a workspace one float short: no error")
		}
		if err := kb.g.conv2dForward(convShape{B: 1, Cin: 1, H: 2, W: 2, Cout: 1, K: 3, Stride: 1, Pad: 3}, x, w, y, small, nil); err == nil {
			t.Fatal("conv2dForward with pad >= K: no error")
		}
	})
}

func itoa(v int) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}

// TestGPUBatchNorm: training forward (batch statistics, staged running
// statistics), backward and evaluation forward against cpuops.BatchNorm,
// with and without the fused ReLU, on full and padded batches (n < B: the
// padding's garbage must not reach the statistics, and its rows get 0).
func TestGPUBatchNorm(t *testing.T) {
	withKernels(t, 3, func(kb *kernelBench) {
		for _, tc := range []struct {
			B, C, HW, n int
			relu        bool
		}{
			{4, 3, 25, 4, false},
			{4, 3, 25, 4, true},
			{5, 2, 9, 3, true},   // padded
			{3, 4, 1, 2, false},  // 1x1 planes, padded
			{2, 2, 300, 1, true}, // one real sample, more values than threads
			{1, 3, 1, 1, false},  // one value per channel: unbiased variance falls back to the biased one
			// Several blocks per channel (bnChunks), the last one shorter:
			{6, 2, 2000, 5, true},   // padded: 10000 values, 3 chunks
			{9, 3, 49, 9, false},    // 7x7 planes: 441 values, 1 chunk, HW < 256
			{200, 2, 49, 190, true}, // 9310 values in 3 chunks over plane boundaries
		} {
			B, C, HW, n := tc.B, tc.C, tc.HW, tc.n
			N := B * C * HW
			bn, err := cpuops.NewBatchNorm(B, C, HW, tc.relu)
			kb.must("NewBatchNorm", err)
			x := kb.rnd(N, 2, 3) // a mean well away from 0
			for k := n * C * HW; k < N; k++ {
				x[k] = 1e3 // the padding: garbage that must not count
			}
			gamma, beta, dy := kb.rnd(C, 1, 0.5), kb.rnd(C, 0, 0.5), kb.rnd(N, 0, 1)
			rm, rv := kb.rnd(C, 0, 1), kb.rnd(C, 0, 0.1)
			for k := range rv {
				rv[k] = 1 + rv[k]*rv[k]
			}
			gx, gg, gb, gdy := kb.put(x), kb.put(gamma), kb.put(beta), kb.put(dy)
			grm, grv := kb.put(rm), kb.put(rv)
			saved, err := kb.g.alloc(bnSavedLen(B, C, HW))
			kb.must("alloc", err)
			gy, gdx := kb.put(kb.rnd(N, 7, 1)), kb.put(kb.rnd(N, 7, 1))
			gdg, gdb := kb.put(kb.rnd(C, 7, 1)), kb.put(kb.rnd(C, 7, 1))

			name := func(what string) string {
				r := ""
				if tc.relu {
					r = "+relu"
				}
				return "bn" + r + " " + what + " B" + itoa(B) + " n" + itoa(n) + " HW" + itoa(HW)
			}
			y := make([]float32, N)
			crm, crv := append([]float32(nil), rm...), append([]float32(nil), rv...)
			bn.Forward(x, gamma, beta, y, crm, crv, n, true)
			kb.must("bnForward", kb.g.bnForward(gx, gg, gb, gy, grm, grv, saved, B, C, HW, n, true, tc.relu))
			kb.check(name("train y"), gy, y, 1e-5)
			kb.check(name("running mean"), grm, crm, 1e-6)
			kb.check(name("running var"), grv, crv, 1e-6)

			dx, dg, db := make([]float32, N), make([]float32, C), make([]float32, C)
			bn.Backward(x, gamma, y, dy, dx, dg, db)
			kb.must("bnBackward", kb.g.bnBackward(gx, gg, gy, gdy, saved, gdx, gdg, gdb, B, C, HW, n, tc.relu))
			kb.check(name("dx"), gdx, dx, 1e-4)
			kb.check(name("dgamma"), gdg, dg, 1e-4)
			kb.check(name("dbeta"), gdb, db, 1e-5)

			// The two-level sums are in a fixed order: the same bits again
			// (from the same running statistics and inputs).
			kb.must("upload", kb.g.upload(grm, rm))
			kb.must("upload", kb.g.upload(grv, rv))
			y1, dx1 := kb.get(gy), kb.get(gdx)
			kb.must("bnForward again", kb.g.bnForward(gx, gg, gb, gy, grm, grv, saved, B, C, HW, n, true, tc.relu))
			kb.must("bnBackward again", kb.g.bnBackward(gx, gg, gy, gdy, saved, gdx, gdg, gdb, B, C, HW, n, tc.relu))
			kb.check(name("train y again"), gy, y1, 0)
			kb.check(name("dx again"), gdx, dx1, 0)

			// Evaluation: the running statistics, which it leaves alone.
			ey := make([]float32, N)
			bn.Forward(x, gamma, beta, ey, crm, crv, n, false)
			kb.must("bnForward eval", kb.g.bnForward(gx, gg, gb, gy, grm, grv, saved, B, C, HW, n, false, tc.relu))
			kb.check(name("eval y"), gy, ey, 1e-5)
			kb.check(name("eval keeps running var"), grv, crv, 0)
		}
		x := kb.put(make([]float32, 12))
		c := kb.put(make([]float32, 3))
		if err := kb.g.bnForward(x, c, c, x, c, c, kb.put(make([]float32, 12)), 2, 3, 2, 3, true, false); err == nil {
			t.Fatal("bnForward with n > B: no error")
		}
		if err := kb.g.bnForward(x, c, c, x, c, c, c, 2, 3, 2, 2, true, false); err == nil {
			t.Fatal("bnForward with a 3-float saved buffer for 3 channels: no error")
		}
	})
}

// TestGPUMaxPoolK: MaxPool2d(3, 2, 1) (the imagenet stem's) and others
// against cpuops.MaxPool, on values with many ties (the first maximum
// wins), a NaN (it wins) and ±0; the backward sums overlapping windows.
func TestGPUMaxPoolK(t *testing.T) {
	withKernels(t, 4, func(kb *kernelBench) {
		for _, s := range []struct{ B, C, H, W, K, S, P int }{
			{2, 3, 9, 8, 3, 2, 1},
			{1, 2, 7, 7, 3, 2, 1},
			{2, 2, 6, 5, 2, 2, 0},
			{1, 2, 5, 6, 3, 1, 1},
		} {
			ps := poolShape{BC: s.B * s.C, H: s.H, W: s.W, K: s.K, Stride: s.S, Pad: s.P}
			mp, err := cpuops.NewMaxPool(s.B, s.C, s.H, s.W, s.K, s.S, s.P)
			kb.must("NewMaxPool", err)
			if mp.OutLen() != ps.OutLen() {
				t.Fatalf("%+v: OutLen %d, cpuops says %d", s, ps.OutLen(), mp.OutLen())
			}
			x := make([]float32, ps.InLen())
			for k := range x {
				x[k] = float32(kb.rng.IntN(5) - 3) // ties everywhere, negatives: padding must not win
			}
			x[3] = float32(math.Copysign(0, -1))
			x[4] = 0
			x[len(x)/2] = float32(math.NaN())
			dy := kb.rnd(ps.OutLen(), 0, 1)
			y, dx := make([]float32, ps.OutLen()), make([]float32, ps.InLen())
			mp.Forward(x, y)
			mp.Backward(dy, dx)
			gy, gdx := kb.put(kb.rnd(len(y), 9, 1)), kb.put(kb.rnd(len(dx), 9, 1))
			arg, err := kb.g.allocInt32(ps.OutLen())
			kb.must("alloc", err)
			kb.must("maxPool", kb.g.maxPool(ps, kb.put(x), gy, arg))
			kb.must("maxPoolBackward", kb.g.maxPoolBackward(ps, kb.put(dy), arg, gdx))
			name := "maxpool " + itoa(s.K) + "/" + itoa(s.S) + "/" + itoa(s.P) + " " + itoa(s.H) + "x" + itoa(s.W)
			got := kb.get(gy)
			for k := range y {
				if math.Float32bits(got[k]) != math.Float32bits(y[k]) && !(y[k] != y[k] && got[k] != got[k]) {
					t.Fatalf("%s y[%d] = %v, want %v", name, k, got[k], y[k])
				}
			}
			kb.check(name+" dx", gdx, dx, 1e-6)
		}
		ps := poolShape{BC: 1, H: 4, W: 4, K: 2, Stride: 2, Pad: 2}
		b := kb.put(make([]float32, 16))
		if err := kb.g.maxPool(ps, b, b, b); err == nil {
			t.Fatal("maxPool with pad > K/2: no error")
		}
	})
}

// TestGPUAddReLU: the residual join and the ReLU's backward against cpuops.
func TestGPUAddReLU(t *testing.T) {
	withKernels(t, 5, func(kb *kernelBench) {
		n := 777
		a, b, dy := kb.rnd(n, 0, 1), kb.rnd(n, 0, 1), kb.rnd(n, 0, 1)
		a[5], b[5] = 1, -1 // exactly 0: the mask is closed
		y, d := make([]float32, n), make([]float32, n)
		cpuops.AddReLU(a, b, y)
		cpuops.ReLUBackward(y, dy, d)
		ga, gb, gy, gdy := kb.put(a), kb.put(b), kb.put(make([]float32, n)), kb.put(dy)
		kb.must("addReLU", kb.g.addReLU(ga, gb, gy, n))
		kb.check("add_relu", gy, y, 0)
		gd := kb.put(make([]float32, n))
		kb.must("reluGrad", kb.g.reluGrad(gy, gdy, gd, n))
		kb.check("relu_grad", gd, d, 0)
		kb.must("reluGrad in place", kb.g.reluGrad(gy, gdy, gdy, n))
		kb.check("relu_grad in place", gdy, d, 0)
		kb.must("addReLU in place", kb.g.addReLU(ga, gb, ga, n))
		kb.check("add_relu in place", ga, y, 0)
	})
}

// TestGPUOptimizers: SGD with Nesterov and AdamW, a few steps each,
// against model's host updates.
func TestGPUOptimizers(t *testing.T) {
	withKernels(t, 6, func(kb *kernelBench) {
		n := 500
		w, v := kb.rnd(n, 0, 1), make([]float32, n)
		gw, gv := kb.put(w), kb.put(v)
		for step := range 3 {
			g := kb.rnd(n, 0, 1)
			model.SGDNesterovUpdate(w, g, v, 0.1, 0.9, 5e-4, step == 0)
			kb.must("sgdNesterov", kb.g.sgdNesterov(gw, kb.put(g), gv, n, 0.1, 0.9, 5e-4, step == 0))
			kb.check("sgd nesterov w step "+itoa(step+1), gw, w, 1e-6)
			kb.check("sgd nesterov v step "+itoa(step+1), gv, v, 1e-6)
		}
		w, m, v2 := kb.rnd(n, 0, 1), make([]float32, n), make([]float32, n)
		gw, gm, gv2 := kb.put(w), kb.put(m), kb.put(v2)
		for step := int64(1); step <= 3; step++ {
			g := kb.rnd(n, 0, 1)
			model.AdamWUpdate(w, g, m, v2, 1e-3, 0.9, 0.999, 1e-8, 0.05, step)
			kb.must("adamW", kb.g.adamW(gw, kb.put(g), gm, gv2, n, 1e-3, 0.9, 0.999, 1e-8, 0.05, step))
			kb.check("adamw w step "+itoa(int(step)), gw, w, 1e-6)
			kb.check("adamw exp_avg step "+itoa(int(step)), gm, m, 1e-6)
			kb.check("adamw exp_avg_sq step "+itoa(int(step)), gv2, v2, 1e-6)
		}
		if err := kb.g.adamW(gw, gw, gm, gv2, n, 1e-3, 0.9, 0.999, 1e-8, 0.05, 0); err == nil {
			t.Fatal("adamW at step 0: no error")
		}
	})
}

// TestGPUBatchNormTimes: BatchNorm's training forward + backward (fused
// ReLU) at resnet18's shapes at 224 px, batch 256, the time per pass and
// the bandwidth it reaches (11 passes over the activation: see bytes), as lines for the first lent GPU's log
// (.gpu/run.sh). Skipped under the stand-in, whose timing means nothing.
func TestGPUBatchNormTimes(t *testing.T) {
	d := openOrSkip(t)
	if d.Simulated() {
		t.Skip("the stand-in's timing is the host's: run on a GPU (.gpu/run.sh)")
	}
	withEngine(t, d, cu.NonBlocking, func(s cu.Stream, g *gpuEngine) error {
		const B = 256
		for _, sh := range []struct{ C, HW int }{{64, 112 * 112}, {64, 56 * 56}, {128, 28 * 28}, {256, 14 * 14}, {512, 7 * 7}} {
			N := B * sh.C * sh.HW
			var bufs [4]buffer
			for k := range bufs {
				var err error
				if bufs[k], err = g.alloc(N); err != nil {
					return err
				}
			}
			x, y, dy, dx := bufs[0], bufs[1], bufs[2], bufs[3]
			c, err := g.alloc(6 * sh.C)
			if err != nil {
				return err
			}
			gamma, beta, rm, rv, dg, db := sub(c, 0, sh.C), sub(c, sh.C, sh.C), sub(c, 2*sh.C, sh.C), sub(c, 3*sh.C, sh.C), sub(c, 4*sh.C, sh.C), sub(c, 5*sh.C, sh.C)
			saved, err := g.alloc(bnSavedLen(B, sh.C, sh.HW))
			if err != nil {
				return err
			}
			step := func() error {
				if err := g.bnForward(x, gamma, beta, y, rm, rv, saved, B, sh.C, sh.HW, B, true, true); err != nil {
					return err
				}
				return g.bnBackward(x, gamma, y, dy, saved, dx, dg, db, B, sh.C, sh.HW, B, true)
			}
			if err := step(); err != nil {
				return err
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
			const reps = 20
			start := time.Now()
			for range reps {
				if err := step(); err != nil {
					return err
				}
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
			sec := time.Since(start).Seconds() / reps
			nch, _ := bnChunks(B * sh.HW)
			// Passes over N floats: forward x three times (two sums, the
			// normalization) and y written; backward x, y, dy read and the
			// masked gradient written into dx, then x and dx read, dx written.
			bytes := 4 * float64(N) * (4 + 7)
			t.Logf("bn+relu fwd+bwd B%d C%d HW%d: %.3f ms, %.0f GB/s, %d blocks per channel (%d in all)", B, sh.C, sh.HW, 1e3*sec, bytes/sec/1e9, nch, nch*sh.C)
		}
		return nil
	})
}
