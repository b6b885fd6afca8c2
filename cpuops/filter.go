package cpuops

import (
	"fmt"
	"unsafe"

	"stoke/gemm"
)

// The filter gradient of a 3x3 convolution at stride 1 or 2 with few
// output channels, computed as dwᵀ = im2col · dyᵀ by the kernels of
// filter_amd64.s: each row of im2col (a tap of an input channel) is a
// run of the padded input along each output row (every other value at
// stride 2), so the kernels broadcast its values from where they lie,
// and only dy is transposed (into panels of 16 output channels), where the
// GEMM's dw = dy · colᵀ transposes the im2col matrix, nine times the
// input, into its B panels. With 16 output channels (resnet20's first
// stage) that GEMM also spends a quarter of its rows in a 4-row kernel.
//
// Every element of dw gets the bits the GEMM gives it: the same products
// summed from 0 in the same order over the same k blocks (gemm.KStep),
// each block then added to the sum so far (beta = 1) by one rounding,
// which is what each of the GEMM's kernels does with alpha = 1 and beta
// 0 or 1 (TestFilterDirectSameBits).

// filterDirectMaxCout bounds the output channels that take the direct
// kernels: past it, the GEMM's transposes of the im2col matrix are
// shared by more rows of dw, and its 12x32 kernel runs faster than the
// direct 9x32. BenchmarkConv2d's dw and dw-gemm on one core (Intel
// family 6 model 207), direct against the GEMM: resnet20's 16, 32 and 64
// channels 4.3 against 6.5 ms, 3.9 against 5.1, 4.3 against 4.6;
// resnet18's 64 and 128 at 32 and 16 px 27.8 against 33.6, 30.7 against
// 32.1; 256 at 16 px 150 against 127, at 8 px 45 against 34.
const filterDirectMaxCout = 128

// filterBF16MaxCout is filterDirectMaxCout for the bf16 kernels, whose
// GEMM alternative converts the im2col matrix into pairs besides
// transposing it: at 256 channels (AMD family 26, one core, BenchmarkConv2d
// dw-bf16 against dw-bf16-gemm) resnet18's 8 px 16.5 ms against 19.7, 14 px
// 13.2 against 17.3.
const filterBF16MaxCout = 256

// filterDirectMinRun is the narrowest output row (a run of the kernels'
// steps) that takes the direct kernels: 4-pixel rows (resnet18's 512
// channels at 4x4) measured 47 ms against the GEMM's 31.
const filterDirectMinRun = 8

// useFilterDirect is false to keep the filter gradient on the GEMM (the
// tests and benchmarks that compare the two).
var useFilterDirect = true

// filterDirect says whether BackwardFilter takes the direct kernels:
// where the AVX-512 kernels run, on the fp32 kernels (FP32, or TF32 and
// BF16 rounding the padded input and dy as the GEMM rounds its panels,
// which needs the padded copy: Pad > 0), for a 3x3 convolution at stride
// 1 or 2 of one channel group with a multiple of 16 output channels, up
// to filterDirectMaxCout, and output rows of filterDirectMinRun pixels
// or more. resnet20's stride-2 16-to-32 conv: 2.4-3.0 ms on them, 3.7-4.8
// on the GEMM (BenchmarkConv2d, one core, 3 rounds).
func (c *Conv2d) filterDirect() bool {
	fp32Kernels := c.prec == gemm.FP32 || c.Pad > 0 && !(c.prec == gemm.BF16 && gemm.FastBF16())
	bf16 := c.filterBF16()
	return useFilterDirect && useAVX512 && (fp32Kernels || bf16) && c.K == 3 && c.Stride <= 2 && c.Groups == 1 &&
		c.Cout%16 == 0 && (c.Cout <= filterDirectMaxCout || bf16 && c.Cout <= filterBF16MaxCout) && c.Wo >= filterDirectMinRun
}

// filterBF16 says whether the direct kernels run at bf16 on VDPBF16PS
// (filterBF16x*): at BF16 where gemm.FastBF16, at stride 1 (a tap's
// inputs at two steps side by side lie side by side) with output rows of
// an even width (no pair of steps straddles two rows). They sum as gemm's
// bf16 kernels do (gemm.BF16KStep's blocks, pairs of steps in order), so
// dw has the bits of the VDPBF16PS GEMM it replaces (TestFilterDirectSameBits).
// On one core of an AMD EPYC of family 26 (BenchmarkConv2d, dw-bf16 against
// dw-bf16-gemm, ms): resnet20's 16, 32 and 64 channels 3.5 against 8.4, 2.5
// against 4.4, 2.4 against 3.5; resnet18's 64 and 128 channels at 32 and
// 16 px 15.7 against 25.7, 15.3 against 18.8 (fp32's direct kernels: 5.0,
// 4.2, 4.5, 27.4, 26.7).
func (c *Conv2d) filterBF16() bool {
	return c.prec == gemm.BF16 && gemm.FastBF16() && c.Stride == 1 && c.Wo%2 == 0
}

// filterDirectGroup adds samples [i0, i1)'s part of the filter gradient
// to rows [r0, r1) (output channels) and columns [c0, c1) (taps, whole
// input channels) of dwᵀ, the worker's s.dwT ((c1−c0) × (r1−r0)): a is
// their dy as it lies (sample by sample, Cout × Ho·Wo each: step k of the
// sum is pixel k%(Ho·Wo) of sample k/(Ho·Wo)), src their padded input.
// The first call of a tile (first) sets dwᵀ.
func (c *Conv2d) filterDirectGroup(s *conv2dScratch, a []float32, k int, src []float32, r0, r1, c0, c1 int, first bool) {
	m := r1 - r0
	pixels := c.pixelsF[:k]
	// The largest offset read: the last channel's last tap at the last pixel.
	if last := c.taps[c1-1] + pixels[k-1]; last >= len(src) {
		panic(fmt.Sprintf("cpuops: filter gradient reads input %d past %d", last, len(src)))
	}
	ohw := c.Ho * c.Wo
	if k%ohw != 0 || len(a) < k*c.Cout || r1 > c.Cout || len(s.dwT) < (c1-c0)*m || m%16 != 0 || c0%9 != 0 || c1%9 != 0 {
		panic(fmt.Sprintf("cpuops: filter gradient: dy %d values for %d steps of %d channels, dwT %d, tile rows [%d, %d) columns [%d, %d)",
			len(a), k, c.Cout, len(s.dwT), r0, r1, c0, c1))
	}
	plane := c.hp * c.wp
	if c.filterBF16() {
		c.filterBF16Group(s, a, k, src, r0, r1, c0, c1, first)
		return
	}
	k18x16, k9x16, k9x32 := filter18x16AVX512, filter9x16AVX512, filter9x32AVX512
	if c.Stride == 2 {
		k18x16, k9x16, k9x32 = filter18x16s2AVX512, filter9x16s2AVX512, filter9x32s2AVX512
	}
	kstep := gemm.KStep(k)
	s.dyP = grow(s.dyP, m*min(kstep, k))
	for pc := 0; pc < k; pc += kstep {
		kb := min(kstep, k-pc)
		packDyT(s.dyP, a, ohw, c.Cout, r0, pc, kb, m)
		if c.prec != gemm.FP32 { // the GEMM's packed A, rounded (src is: padded)
			gemm.RoundSlice(c.prec, s.dyP[:m*kb])
		}
		s.segs = pixelRuns(s.segs[:0], pixels[pc:pc+kb], c.Stride)
		segs, nseg := &s.segs[0], len(s.segs)/2
		var beta float32 = 1
		if first && pc == 0 {
			beta = 0
		}
		j := 0
		if m >= 32 { // the 32-column tiles, a channel's across dy's panels
			for ci := c0 / 9; ci < c1/9; ci++ {
				for j = 0; j+32 <= m; j += 32 {
					k9x32(segs, nseg, &src[ci*plane], plane, c.wp, &s.dyP[j*kb], 16*kb, &s.dwT[(9*ci-c0)*m+j], m, beta)
				}
			}
		}
		for j < m {
			b := &s.dyP[j*kb]
			ci := c0 / 9
			for ; ci+2 <= c1/9; ci += 2 {
				k18x16(segs, nseg, &src[ci*plane], plane, c.wp, b, 16*kb, &s.dwT[(9*ci-c0)*m+j], m, beta)
			}
			if ci < c1/9 {
				k9x16(segs, nseg, &src[ci*plane], plane, c.wp, b, 16*kb, &s.dwT[(9*ci-c0)*m+j], m, beta)
			}
			j += 16
		}
	}
}

// filterBF16Group is filterDirectGroup on the bf16 kernels (filterBF16):
// the input channels of the tile, [c0/9, c1/9) of each sample, converted
// to bf16 (s.xb), and each k block's dyᵀ panels converted to pairs of
// steps (s.dyB), both rounded as gemm's bf16 packing rounds them.
func (c *Conv2d) filterBF16Group(s *conv2dScratch, a []float32, k int, src []float32, r0, r1, c0, c1 int, first bool) {
	m, ohw, plane := r1-r0, c.Ho*c.Wo, c.hp*c.wp
	pixels := c.pixelsF[:k]
	s.xb = grow(s.xb, (len(src)+1)/2)
	ci0, ci1 := c0/9, c1/9
	for t := 0; t < k/ohw; t++ {
		lo, hi := (t*c.Cin+ci0)*plane&^1, min(len(src), ((t*c.Cin+ci1)*plane+1)&^1)
		gemm.BF16Words(s.xb[lo/2:(hi+1)/2], src[lo:hi])
	}
	xb := unsafe.Slice((*uint16)(unsafe.Pointer(&s.xb[0])), len(src))
	kstep := gemm.BF16KStep(k)
	s.dyP = grow(s.dyP, m*min(kstep, k))
	s.dyB = grow(s.dyB, m*min(kstep, k)/2)
	for pc := 0; pc < k; pc += kstep {
		kb := min(kstep, k-pc)
		packDyT(s.dyP, a, ohw, c.Cout, r0, pc, kb, m)
		for j := 0; j < m; j += 16 {
			gemm.BF16PairPanel(s.dyB[j*kb/2:(j+16)*kb/2], s.dyP[j*kb:(j+16)*kb], kb)
		}
		s.segs = pixelRuns(s.segs[:0], pixels[pc:pc+kb], 1)
		for i := 1; i < len(s.segs); i += 2 {
			if s.segs[i]%2 != 0 {
				panic(fmt.Sprintf("cpuops: bf16 filter gradient: a run of %d steps (output rows %d wide, k block [%d, %d))", s.segs[i], c.Wo, pc, pc+kb))
			}
		}
		segs, nseg := &s.segs[0], len(s.segs)/2
		var beta float32 = 1
		if first && pc == 0 {
			beta = 0
		}
		bstride := 8 * kb // a panel's dwords
		j := 0
		if m >= 32 {
			for ci := ci0; ci < ci1; ci++ {
				for j = 0; j+32 <= m; j += 32 {
					filterBF16x9x32AVX512(segs, nseg, &xb[ci*plane], plane, c.wp, &s.dyB[j*kb/2], bstride, &s.dwT[(9*ci-c0)*m+j], m, beta)
				}
			}
		}
		for ; j < m; j += 16 {
			b := &s.dyB[j*kb/2]
			ci := ci0
			for ; ci+2 <= ci1; ci += 2 {
				filterBF16x18x16AVX512(segs, nseg, &xb[ci*plane], plane, c.wp, b, bstride, &s.dwT[(9*ci-c0)*m+j], m, beta)
			}
			if ci < ci1 {
				filterBF16x9x16AVX512(segs, nseg, &xb[ci*plane], plane, c.wp, b, bstride, &s.dwT[(9*ci-c0)*m+j], m, beta)
			}
		}
	}
}

// packDyT writes rows [r0, r0+m) (m a multiple of 16) of dy, steps
// [pc, pc+kb), transposed into m/16 panels of kb rows of 16 floats:
// dst[(j/16)·16·kb + 16q + j%16] = row r0+j at step pc+q, which lies at
// dy[(t·cout + r0+j)·ohw + p] for step t·ohw + p (dy sample by sample,
// cout rows of ohw steps each). Eight steps within a sample at a time by
// a 16x8 AVX-512 transpose, the others one by one.
func packDyT(dst, dy []float32, ohw, cout, r0, pc, kb, m int) {
	at := func(j, q int) int { t, p := (pc+q)/ohw, (pc+q)%ohw; return (t*cout+r0+j)*ohw + p }
	_, _ = dst[:m*kb], dy[at(m-1, kb-1)]
	var offs [16]int
	for j := range offs {
		offs[j] = j * ohw
	}
	for b := 0; b < m; b += 16 {
		panel := dst[b*kb : (b+16)*kb]
		for q := 0; q < kb; {
			if p := (pc + q) % ohw; q+8 <= kb && p+8 <= ohw {
				transpose16x8AVX512(&panel[16*q], &dy[at(b, q)], &offs[0])
				q += 8
				continue
			}
			for j := 0; j < 16; j++ {
				panel[16*q+j] = dy[at(b+j, q)]
			}
			q++
		}
	}
}

// pixelRuns appends to segs the runs of pixels (offsets, each run
// step apart) as pairs: the run's first offset, its length.
func pixelRuns(segs []int, pixels []int, step int) []int {
	for q := 0; q < len(pixels); {
		n := 1
		for q+n < len(pixels) && pixels[q+n] == pixels[q]+step*n {
			n++
		}
		segs = append(segs, pixels[q], n)
		q += n
	}
	return segs
}

// transposeInto sets dw[(r0+j)·ld + c0 + i] = dwT[i·m + j] for i < n, j < m
// (m a multiple of 8): 16 columns of 8 rows at a time by a 16x8 AVX-512
// transpose, the last n%16 columns one by one.
func transposeInto(dw []float32, ld, r0, c0 int, dwT []float32, n, m int) {
	_, _ = dwT[:n*m], dw[(r0+m-1)*ld+c0+n-1]
	i := 0
	if useAVX512 {
		var offs [16]int
		for a := range offs {
			offs[a] = a * m
		}
		var t [128]float32
		for ; i+16 <= n; i += 16 {
			for j := 0; j < m; j += 8 {
				transpose16x8AVX512(&t[0], &dwT[i*m+j], &offs[0]) // t[16b+a] = dwT[(i+a)·m + j+b]
				for b := 0; b < 8; b++ {
					copy(dw[(r0+j+b)*ld+c0+i:][:16], t[16*b:16*b+16])
				}
			}
		}
	}
	for j := 0; j < m; j++ {
		row := dw[(r0+j)*ld+c0 : (r0+j)*ld+c0+n]
		for k := i; k < n; k++ {
			row[k] = dwT[k*m+j]
		}
	}
}
