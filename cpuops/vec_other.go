//go:build !amd64

package cpuops

// useAVX2 is false off amd64 (tests switch the amd64 loops with it).
var useAVX2 = false

// Add sets z = x + y element-wise (z may be x or y; all three of one
// length): gorgonia's gradient sums on the CPU engine.
func Add(z, x, y []float32) { addGo(z, x[:len(z)], y[:len(z)]) }

// reluMask sets d = dy where y's bits are not zero, else 0.
func reluMask(d, y, dy []float32) { reluMaskGo(d, y, dy) }

// biasReLU sets x = max(x + b, 0), element-wise.
func biasReLU(x []float32, b float32) { biasReLUGo(x, b) }

// sumSq returns Σ x and Σ x², in float64.
func sumSq(x []float32) (s, ss float64) { return sumSqGo(x) }

// scaleShift sets y = x·scale + shift, then max(·, 0) when relu.
func scaleShift(x, y []float32, scale, shift float32, relu bool) {
	scaleShiftGo(x, y, scale, shift, relu)
}

// gradSums returns Σ g and Σ g·x for g = dy, masked by y > 0 when relu.
func gradSums(x, y, dy []float32, relu bool) (sg, sgx float32) { return gradSumsGo(x, y, dy, relu) }

// scaleShiftAddReLU sets y = max((x·scale + shift) + s, 0).
func scaleShiftAddReLU(x, s, y []float32, scale, shift float32) {
	scaleShiftAddReLUGo(x, s, y, scale, shift)
}

// gradSumsMask is gradSums with the ReLU mask, also storing the masked g in d.
func gradSumsMask(x, y, dy, d []float32) (sg, sgx float32) { return gradSumsMaskGo(x, y, dy, d) }

// bnDx sets dx = a·g + (b·x + d), g as in gradSums.
func bnDx(x, y, dy, dx []float32, relu bool, a, b, d float32) { bnDxGo(x, y, dy, dx, relu, a, b, d) }

// copyRows16 sets dst[16q:16q+16] = src[offs[q]+c:][:16] for every q.
func copyRows16(dst, src []float32, offs []int, c int) { copyRows16Go(dst, src, offs, c) }

// copyRows8x2 is copyRows16 for two runs of 8, at c0 and c1.
func copyRows8x2(dst, src []float32, offs []int, c0, c1 int) { copyRows8x2Go(dst, src, offs, c0, c1) }

// transpose8 is AVX2's alone: false, do it element by element.
func transpose8(dst, src []float32, offs *[8]int) bool { return false }

// transpose16x8 is AVX2's and AVX-512's alone: false, do it element by element.
func transpose16x8(dst, src []float32, offs *[16]int) bool { return false }

// maxPool3s2Row leaves every column to MaxPool.interior's Go loop.
func maxPool3s2Row(plane []float32, W, pad, r0, r1, lo, hi int, arg []int32, y []float32) int {
	return lo
}
