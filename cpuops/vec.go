package cpuops

import "math"

// Element-wise loops with an AVX2 form on amd64 (vec_amd64.s) where the
// CPU has it; these are the portable forms and the tails.

func addToGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}

// reluMaskGo: y is a ReLU output, so y ≥ 0 (or NaN) and y > 0 exactly when
// its bits are not zero; the mask is made from the bits, without a branch
// (a branch on activations mispredicts about half the time).
func reluMaskGo(d, y, dy []float32) {
	d, dy = d[:len(y)], dy[:len(y)]
	for j, v := range y {
		b := math.Float32bits(v)
		m := uint32(int32(b|-b) >> 31) // all ones when b != 0
		d[j] = math.Float32frombits(math.Float32bits(dy[j]) & m)
	}
}

func biasReLUGo(x []float32, b float32) {
	for j, v := range x {
		x[j] = max(v+b, 0)
	}
}
