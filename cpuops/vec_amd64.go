package cpuops

import "stoke/gemm"

//go:noescape
func maskAVX2(d, y, dy *float32, n int)

//go:noescape
func addAVX2(z, x, y *float32, n int)

var useAVX2 = gemm.HasAVX2()

// Add sets z = x + y element-wise (z may be x or y; all three of one
// length): gorgonia's gradient sums on the CPU engine.
func Add(z, x, y []float32) {
	x, y = x[:len(z)], y[:len(z)]
	n := 0
	if useAVX2 {
		n = len(z) &^ 7
		if n > 0 {
			addAVX2(&z[0], &x[0], &y[0], n)
		}
	}
	addGo(z[n:], x[n:], y[n:])
}

// reluMask sets d = dy where y's bits are not zero, else 0.
func reluMask(d, y, dy []float32) {
	d, dy = d[:len(y)], dy[:len(y)]
	n := 0
	if useAVX2 {
		n = len(y) &^ 7
		if n > 0 {
			maskAVX2(&d[0], &y[0], &dy[0], n)
		}
	}
	reluMaskGo(d[n:], y[n:], dy[n:])
}

//go:noescape
func biasReLUAVX2(x *float32, n int, b float32)

// biasReLU sets x = max(x + b, 0), element-wise.
func biasReLU(x []float32, b float32) {
	n := 0
	if useAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			biasReLUAVX2(&x[0], n, b)
		}
	}
	biasReLUGo(x[n:], b)
}

//go:noescape
func sumSqAVX2(x *float32, n int) (s, ss float64)

//go:noescape
func scaleShiftAVX2(x, y *float32, n int, scale, shift float32, relu bool)

//go:noescape
func gradSumsAVX2(x, y, dy *float32, n int, relu bool) (sg, sgx float32)

//go:noescape
func bnDxAVX2(x, y, dy, dx *float32, n int, relu bool, a, b, d float32)

//go:noescape
func scaleShiftAddReLUAVX2(x, s, y *float32, n int, scale, shift float32)

//go:noescape
func gradSumsMaskAVX2(x, y, dy, d *float32, n int) (sg, sgx float32)

// sumSq returns Σ x and Σ x², in float64.
func sumSq(x []float32) (s, ss float64) {
	n := 0
	if useAVX2 {
		n = len(x) &^ 15
		if n > 0 {
			s, ss = sumSqAVX2(&x[0], n)
		}
	}
	ts, tss := sumSqGo(x[n:])
	return s + ts, ss + tss
}

// scaleShift sets y = x·scale + shift, then max(·, 0) when relu.
func scaleShift(x, y []float32, scale, shift float32, relu bool) {
	y = y[:len(x)]
	n := 0
	if useAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			scaleShiftAVX2(&x[0], &y[0], n, scale, shift, relu)
		}
	}
	scaleShiftGo(x[n:], y[n:], scale, shift, relu)
}

// gradSums returns Σ g and Σ g·x for g = dy, masked by y > 0 when relu.
func gradSums(x, y, dy []float32, relu bool) (sg, sgx float32) {
	y, dy = y[:len(x)], dy[:len(x)]
	n := 0
	if useAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			sg, sgx = gradSumsAVX2(&x[0], &y[0], &dy[0], n, relu)
		}
	}
	tg, tgx := gradSumsGo(x[n:], y[n:], dy[n:], relu)
	return sg + tg, sgx + tgx
}

// scaleShiftAddReLU sets y = max((x·scale + shift) + s, 0): scaleShift
// and AddReLU in one pass, rounded as they are.
func scaleShiftAddReLU(x, s, y []float32, scale, shift float32) {
	s, y = s[:len(x)], y[:len(x)]
	n := 0
	if useAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			scaleShiftAddReLUAVX2(&x[0], &s[0], &y[0], n, scale, shift)
		}
	}
	scaleShiftAddReLUGo(x[n:], s[n:], y[n:], scale, shift)
}

// gradSumsMask is gradSums with the ReLU mask, also storing the masked g
// in d (ReLUBackward's output, in the same pass).
func gradSumsMask(x, y, dy, d []float32) (sg, sgx float32) {
	y, dy, d = y[:len(x)], dy[:len(x)], d[:len(x)]
	n := 0
	if useAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			sg, sgx = gradSumsMaskAVX2(&x[0], &y[0], &dy[0], &d[0], n)
		}
	}
	tg, tgx := gradSumsMaskGo(x[n:], y[n:], dy[n:], d[n:])
	return sg + tg, sgx + tgx
}

// bnDx sets dx = a·g + (b·x + d), g as in gradSums.
func bnDx(x, y, dy, dx []float32, relu bool, a, b, d float32) {
	y, dy, dx = y[:len(x)], dy[:len(x)], dx[:len(x)]
	n := 0
	if useAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			bnDxAVX2(&x[0], &y[0], &dy[0], &dx[0], n, relu, a, b, d)
		}
	}
	bnDxGo(x[n:], y[n:], dy[n:], dx[n:], relu, a, b, d)
}

//go:noescape
func copyRows16AVX2(dst, src *float32, offs *int, n, c int)

//go:noescape
func copyRows8x2AVX2(dst, src *float32, offs *int, n, c0, c1 int)

// copyRows16 sets dst[16q:16q+16] = src[offs[q]+c:][:16] for every q; the
// caller has checked that every row lies in src.
func copyRows16(dst, src []float32, offs []int, c int) {
	if useAVX2 && len(offs) > 0 {
		_ = dst[16*len(offs)-1]
		copyRows16AVX2(&dst[0], &src[0], &offs[0], len(offs), c)
		return
	}
	copyRows16Go(dst, src, offs, c)
}

// copyRows8x2 is copyRows16 for two runs of 8, at c0 and c1.
func copyRows8x2(dst, src []float32, offs []int, c0, c1 int) {
	if useAVX2 && len(offs) > 0 {
		_ = dst[16*len(offs)-1]
		copyRows8x2AVX2(&dst[0], &src[0], &offs[0], len(offs), c0, c1)
		return
	}
	copyRows8x2Go(dst, src, offs, c0, c1)
}

//go:noescape
func transpose8AVX2(dst, src *float32, offs *int)

// transpose8 sets dst[16i+j] = src[offs[j]+i] for i, j < 8; the caller has
// checked that every row lies in src. It reports false, doing nothing,
// where there is no AVX2.
func transpose8(dst, src []float32, offs *[8]int) bool {
	if !useAVX2 {
		return false
	}
	_ = dst[16*7+7]
	transpose8AVX2(&dst[0], &src[0], &offs[0])
	return true
}

// transpose16x8 sets dst[16i+j] = src[offs[j]+i] for i < 8, j < 16 (eight
// rows of a 16-wide panel), in one AVX-512 pass where it runs (12-15.5 ns
// against two transpose8AVX2 calls' 15-20 in L1 on an Intel Xeon of family
// 6 model 207, BenchmarkTranspose16x8), else as two transpose8; the caller has
// checked that every row lies in src. It reports false, doing nothing,
// where there is no AVX2.
func transpose16x8(dst, src []float32, offs *[16]int) bool {
	if useAVX512 {
		_ = dst[16*7+15]
		transpose16x8AVX512(&dst[0], &src[0], &offs[0])
		return true
	}
	return transpose8(dst, src, (*[8]int)(offs[:8])) && transpose8(dst[8:], src, (*[8]int)(offs[8:]))
}

// maxPool3s2AVX2 computes 8n outputs of one output row of a MaxPool2d(3,
// stride 2) from the rows at src (pool_amd64.s), as MaxPool.interior's Go
// loop: the same argmax, the same bits.
//
//go:noescape
func maxPool3s2AVX2(src *float32, w, rows int, base int32, n int, y *float32, arg *int32)

// maxPool3s2Row is MaxPool.interior's 3x3 stride-2 case for output columns
// [lo, hi) in AVX2, 8 at a time, the last 8 overlapping the ones before
// when hi-lo is not a multiple of 8 (writing the same values again). It
// returns the first column it left to the caller: lo when AVX2 is off or
// hi-lo < 8, else hi.
func maxPool3s2Row(plane []float32, W, pad, r0, r1, lo, hi int, arg []int32, y []float32) int {
	if !useAVX2 || hi-lo < 8 {
		return lo
	}
	// the last row's 16th column of the last group, the last one read
	_ = plane[(r1-1)*W+2*(hi-1)-pad+2]
	run := func(ox, n int) { // n groups of 8 from output column ox
		b := r0*W + 2*ox - pad
		maxPool3s2AVX2(&plane[b], W, r1-r0, int32(b), n, &y[ox], &arg[ox])
	}
	n := (hi - lo) / 8
	run(lo, n)
	if lo+8*n < hi {
		run(hi-8, 1)
	}
	return hi
}
