package gemm

import "sync/atomic"

// The BF16 precision has two implementations with one meaning (inputs
// rounded to bf16, ties to even; float32 sums): the reference, which rounds
// while packing and runs the FP32 kernels, so that a product is bit for
// bit Sgemm's on inputs rounded beforehand; and the VDPBF16PS kernels
// (bf16.go), which sum each pair of products before adding it and treat
// denormals as zero, within the bound bf16.go states. SgemmPrec,
// SgemmPanelsPrec and PackAPrec at BF16 take the fast one where HasBF16
// (so a train.precision bf16 run on such a CPU does), unless
// SetFastBF16(false) holds them to the reference: tests that compare bit
// for bit with rounding by hand do.
var fastBF16 atomic.Bool

func init() { fastBF16.Store(true) }

// SetFastBF16 says whether BF16 products may take the VDPBF16PS kernels
// (they do only where HasBF16) and returns the previous setting.
func SetFastBF16(on bool) bool { return fastBF16.Swap(on) }

// FastBF16 reports whether BF16 products run on the VDPBF16PS kernels now.
func FastBF16() bool { return fastBF16.Load() && HasBF16() }

// PrecisionName says how products at p run, for the start-up line.
func PrecisionName(p Precision) string {
	switch {
	case p == BF16 && FastBF16():
		return BF16Name()
	case p == BF16 && HasBF16():
		return "gemm bf16: inputs rounded to bf16, then the fp32 " + kernelName + " (the reference path: the VDPBF16PS kernels held off)"
	case p == BF16:
		return BF16Name()
	case p == TF32:
		return "gemm tf32: inputs rounded to tf32, then the fp32 " + kernelName
	}
	return Name()
}
