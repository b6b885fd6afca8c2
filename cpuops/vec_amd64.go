package cpuops

import "stoke/gemm"

//go:noescape
func addToAVX2(dst, src *float32, n int)

//go:noescape
func maskAVX2(d, y, dy *float32, n int)

var useAVX2 = gemm.HasAVX2()

// addTo adds src to dst element-wise.
func addTo(dst, src []float32) {
	dst = dst[:len(src)]
	n := 0
	if useAVX2 {
		n = len(src) &^ 7
		if n > 0 {
			addToAVX2(&dst[0], &src[0], n)
		}
	}
	addToGo(dst[n:], src[n:])
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
