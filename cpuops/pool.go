package cpuops

import (
	"fmt"
	"math"
)

// pool2x2 max-pools C planes of H×W from x into out, recording the argmax.
func pool2x2(x []float32, C, H, W int, out []float32, arg []uint8) {
	oh, ow := H/2, W/2
	for c := 0; c < C; c++ {
		plane := x[c*H*W : (c+1)*H*W]
		o, a := out[c*oh*ow:(c+1)*oh*ow], arg[c*oh*ow:(c+1)*oh*ow]
		for oy := 0; oy < oh; oy++ {
			r0 := plane[2*oy*W : 2*oy*W+W]
			r1 := plane[(2*oy+1)*W : (2*oy+1)*W+W]
			ox := 0
			if n := ow / 16; useAVX512 && n > 0 { // 16 outputs at a time, the same bits
				pool2x2RowAVX512(&r0[0], &r1[0], &o[oy*ow], &a[oy*ow], n)
				ox = 16 * n
			}
			for ; ox < ow; ox++ {
				// Compare order keys with selects the compiler makes
				// branch-free (CMOV): a max over activations is a coin toss
				// for a branch predictor.
				k0, k1 := orderKey(r0[2*ox]), orderKey(r0[2*ox+1])
				k2, k3 := orderKey(r1[2*ox]), orderKey(r1[2*ox+1])
				m, k := 0, k0
				if k1 > k {
					m, k = 1, k1
				}
				if k2 > k {
					m, k = 2, k2
				}
				if k3 > k {
					m = 3
				}
				a[oy*ow+ox] = uint8(m)
				o[oy*ow+ox] = plane[(2*oy+m>>1)*W+2*ox+m&1]
			}
		}
	}
}

// unpool2x2 is pool2x2's adjoint with a ReLU's derivative folded in: dx
// (C planes of H×W) gets dy at each argmax and 0 elsewhere, and outputs
// where y (the pooled values of a ReLU's output) is 0 pass nothing (y ≥ 0
// or NaN, so y > 0 is "bits not zero").
func unpool2x2(dy, y []float32, arg []uint8, C, H, W int, dx []float32) {
	oh, ow := H/2, W/2
	clear(dx[:C*H*W])
	for c := 0; c < C; c++ {
		plane := dx[c*H*W : (c+1)*H*W]
		d, a := dy[c*oh*ow:(c+1)*oh*ow], arg[c*oh*ow:(c+1)*oh*ow]
		yc := y[c*oh*ow : (c+1)*oh*ow]
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				m := int(a[oy*ow+ox])
				b := math.Float32bits(yc[oy*ow+ox])
				mask := uint32(int32(b|-b) >> 31) // as reluMaskGo
				plane[(2*oy+m>>1)*W+2*ox+m&1] = math.Float32frombits(math.Float32bits(d[oy*ow+ox]) & mask)
			}
		}
	}
}

// orderKey maps a float32 to an int32 that orders as the floats do (−0
// below +0), with NaN above +Inf, so a NaN is the maximum as in PyTorch.
func orderKey(v float32) int32 {
	b := int32(math.Float32bits(v))
	return b ^ int32(uint32(b>>31)>>1)
}

// AvgPoolForward is the global average pool: y[i] = mean of x[i·n:(i+1)·n]
// for each of the len(y) planes of n = H·W values.
func AvgPoolForward(x, y []float32) {
	n := len(x) / len(y)
	if n*len(y) != len(x) {
		panic(fmt.Sprintf("cpuops.AvgPoolForward: %d inputs do not split into %d planes", len(x), len(y)))
	}
	inv := 1 / float64(n)
	for i := range y {
		var s float64
		for _, v := range x[i*n : (i+1)*n] {
			s += float64(v)
		}
		y[i] = float32(s * inv)
	}
}

// AvgPoolBackward spreads each dy[i] evenly over its plane of dx.
func AvgPoolBackward(dy, dx []float32) {
	n := len(dx) / len(dy)
	if n*len(dy) != len(dx) {
		panic(fmt.Sprintf("cpuops.AvgPoolBackward: %d inputs do not split into %d planes", len(dx), len(dy)))
	}
	inv := 1 / float32(n)
	for i, g := range dy {
		g *= inv
		row := dx[i*n : (i+1)*n]
		for j := range row {
			row[j] = g
		}
	}
}
