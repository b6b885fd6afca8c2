package cpuops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"stoke/gemm"
)

// TestFilterDirectSameBits: the filter gradient on the direct kernels
// (filter.go) is the GEMM's, bit for bit, on 1 and 2 cores: 16, 32, 48,
// 64 and 128 output channels (each kernel: 18x16, 9x16 for an odd last
// channel, 9x32), rows of 8 to 32 pixels that do and do not divide the
// GEMM's k blocks (runs cut at a block's end; a block's depth not a
// multiple of 8, packDyT's tail), one and several samples a GEMM, dw cut
// into tiles of columns (2 cores, one group of samples), and a conv
// block's (its dy through the ReLU and the pool), at stride 1 and 2 with
// padding 0, 1 and 2; at FP32, and at TF32 and BF16 on the fp32 kernels
// (the padded input and dy rounded; without padding, the GEMM's). Where the
// CPU has AVX512_BF16, also BF16 on VDPBF16PS (filterBF16x*, stride 1 and
// rows of an even width, up to 256 output channels) against the VDPBF16PS
// GEMM, and odd rows and stride 2 left to that GEMM.
func TestFilterDirectSameBits(t *testing.T) {
	if !useAVX512 {
		t.Skip("the direct kernels run where the AVX-512 ones do")
	}
	defer gemm.SetFastBF16(gemm.SetFastBF16(false)) // BF16 on the fp32 kernels
	for _, s := range []struct {
		B, Cin, H, W, Cout int
		block              bool
		stride, pad        int
	}{
		{4, 16, 32, 32, 16, false, 1, 1},
		{3, 5, 16, 20, 48, false, 1, 1},
		{2, 32, 16, 16, 64, false, 1, 1},
		{1, 3, 17, 16, 32, false, 1, 1},
		{6, 7, 16, 19, 16, false, 1, 1},
		{2, 40, 18, 16, 16, false, 1, 1},
		{2, 4, 8, 8, 128, false, 1, 1},
		{2, 3, 8, 8, 256, false, 1, 1}, // at bf16 on VDPBF16PS only (filterBF16MaxCout)
		{3, 3, 16, 16, 32, true, 1, 1},
		{4, 16, 32, 32, 32, false, 2, 1},
		{3, 5, 33, 17, 48, false, 2, 1},
		{2, 32, 16, 16, 64, false, 2, 1},
		{6, 7, 17, 16, 16, false, 2, 1},
		{2, 6, 18, 18, 32, false, 1, 0},
		{2, 6, 16, 16, 16, false, 1, 2},
		{3, 4, 21, 19, 16, false, 2, 2},
	} {
		name := fmt.Sprintf("%+v", s)
		var c *Conv2d
		var err error
		if s.block {
			c, err = NewConvBlock(s.B, s.Cin, s.H, s.W, s.Cout, 3, true)
		} else {
			c, err = NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, 3, s.stride, s.pad, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !c.filterDirect() && s.Cout <= filterDirectMaxCout {
			t.Fatalf("%s: not on the direct kernels", name)
		}
		rng := rand.New(rand.NewPCG(uint64(s.Cin), uint64(s.W)))
		x, w, bias := randF32(rng, c.InLen()), randF32(rng, s.Cout*s.Cin*9), randF32(rng, s.Cout)
		var y, dy []float32
		if s.block {
			y = make([]float32, c.OutLen())
			c.ForwardBlock(x, w, bias, y)
			dy = randF32(rng, len(y))
		} else {
			dy = randF32(rng, c.OutLen())
		}
		run := func(direct bool, procs int) []float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			defer func(u bool) { useFilterDirect = u }(useFilterDirect)
			useFilterDirect = direct
			dw := make([]float32, len(w))
			if s.block {
				db := make([]float32, s.Cout)
				c.BackwardFilterBlock(x, y, dy, dw, db)
			} else {
				c.BackwardFilter(x, dy, dw)
			}
			return dw
		}
		for _, prec := range []gemm.Precision{gemm.FP32, gemm.TF32, gemm.BF16} {
			c.SetPrecision(prec)
			if s.pad == 0 && prec != gemm.FP32 { // x itself, unrounded: the GEMM's
				if c.filterDirect() {
					t.Fatalf("%s at %v: on the direct kernels without a rounded padded copy", name, prec)
				}
				continue
			}
			if !c.filterDirect() {
				if s.Cout > filterDirectMaxCout { // the fp32 kernels' bound
					continue
				}
				t.Fatalf("%s at %v: not on the direct kernels", name, prec)
			}
			same(t, fmt.Sprintf("%s at %v", name, prec), s.Cin, run)
		}
		if gemm.HasBF16() { // BF16 on the VDPBF16PS kernels, direct and GEMM
			gemm.SetFastBF16(true)
			c.SetPrecision(gemm.BF16)
			direct := s.stride == 1 && c.Wo%2 == 0
			if c.filterDirect() != direct || c.filterBF16() != direct {
				t.Fatalf("%s at bf16 on VDPBF16PS: direct kernels %v, bf16 ones %v, want %v", name, c.filterDirect(), c.filterBF16(), direct)
			}
			if direct {
				same(t, name+" at bf16 on VDPBF16PS", s.Cin, run)
			}
			gemm.SetFastBF16(false)
		}
	}
}

// same fails t where run(true, procs), the filter gradient on the direct
// kernels on 1 and 2 cores, differs in a bit from run(false, 1), the GEMM's.
func same(t *testing.T, name string, cin int, run func(direct bool, procs int) []float32) {
	t.Helper()
	want := run(false, 1)
	for _, procs := range []int{1, 2} {
		got := run(true, procs)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s, %d cores: dw[%d] (out %d, tap %d) = %v direct, %v on the GEMM",
					name, procs, i, i/(cin*9), i%(cin*9), got[i], want[i])
			}
		}
	}
}

// TestPixelRuns: runs of consecutive offsets, as (first, length) pairs.
func TestPixelRuns(t *testing.T) {
	got := pixelRuns(nil, []int{3, 4, 5, 9, 10, 20, 22, 23}, 1)
	want := []int{3, 3, 9, 2, 20, 1, 22, 2}
	if !slices.Equal(got, want) {
		t.Fatalf("pixelRuns = %v, want %v", got, want)
	}
	got = pixelRuns(nil, []int{3, 5, 7, 8, 10, 13}, 2)
	want = []int{3, 3, 8, 2, 13, 1}
	if !slices.Equal(got, want) {
		t.Fatalf("pixelRuns at step 2 = %v, want %v", got, want)
	}
}

// TestPackDyT: packDyT's panels hold row r0+j of dy at step pc+q, dy laid
// out sample by sample, for steps that cross samples of a size not a
// multiple of 8 and a first row past 0.
func TestPackDyT(t *testing.T) {
	if !useAVX512 {
		t.Skip("the direct kernels' packing, AVX-512 only")
	}
	const ohw, cout, samples = 13, 48, 3
	rng := rand.New(rand.NewPCG(31, 32))
	dy := randF32(rng, samples*cout*ohw)
	for _, c := range []struct{ r0, m, pc, kb int }{{0, 48, 0, 39}, {16, 32, 5, 30}, {32, 16, 12, 17}} {
		dst := make([]float32, c.m*c.kb)
		packDyT(dst, dy, ohw, cout, c.r0, c.pc, c.kb, c.m)
		for j := 0; j < c.m; j++ {
			for q := 0; q < c.kb; q++ {
				k := c.pc + q
				want := dy[(k/ohw*cout+c.r0+j)*ohw+k%ohw]
				if got := dst[j/16*16*c.kb+16*q+j%16]; got != want {
					t.Fatalf("%+v: row %d step %d = %v, want %v", c, j, q, got, want)
				}
			}
		}
	}
}
