//go:build !amd64

package cpuops

// addTo adds src to dst element-wise.
func addTo(dst, src []float32) { addToGo(dst, src) }

// reluMask sets d = dy where y's bits are not zero, else 0.
func reluMask(d, y, dy []float32) { reluMaskGo(d, y, dy) }

// biasReLU sets x = max(x + b, 0), element-wise.
func biasReLU(x []float32, b float32) { biasReLUGo(x, b) }
