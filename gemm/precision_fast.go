package gemm

import (
	"fmt"
	"os"
	"sync/atomic"
)

// The BF16 precision has two implementations with one meaning (inputs
// rounded to bf16, ties to even; float32 sums): the reference, which rounds
// while packing and runs the FP32 kernels, so that a product is bit for
// bit Sgemm's on inputs rounded beforehand; and the VDPBF16PS kernels
// (bf16.go), which sum each pair of products before adding it and treat
// denormals as zero, within the bound bf16.go states. SgemmPrec,
// SgemmPanelsPrec and PackAPrec at BF16 take the fast one where FastBF16
// (so a train.precision bf16 run does); SetFastBF16(false) holds them to
// the reference (tests that compare bit for bit with rounding by hand do),
// SetFastBF16(true) lets them take the fast one wherever HasBF16.
//
// Where HasBF16, whether the fast one is the default depends on the CPU
// (chooseFastBF16): the VDPBF16PS kernels pay only where the CPU runs
// VDPBF16PS at a higher rate of products than its fp32 FMAs. Measured with
// BenchmarkBF16 (1 thread, the fast kernels against the fp32 ones): on an
// AMD EPYC of family 26 (Zen 5) 1.6x on a 512-cube, on an Intel Xeon of
// family 6 model 207 0.55x (and 0.5-0.8x on every conv shape), where the
// reference path runs as fast as fp32. So the default is the fast kernels
// on AMD and the reference elsewhere; $STOKE_GEMM_BF16 (vdpbf16ps,
// reference or auto) overrides it, and SetFastBF16 overrides both.
var (
	fastBF16                 atomic.Bool
	fastBF16Default, bf16Why = chooseFastBF16(os.Getenv("STOKE_GEMM_BF16"), cpuVendor())
)

func init() { fastBF16.Store(fastBF16Default) }

// chooseFastBF16 is the default of FastBF16 where HasBF16, for
// $STOKE_GEMM_BF16 env and the CPUID vendor string, and why, for the
// start-up line when it is the reference.
func chooseFastBF16(env, vendor string) (bool, string) {
	note := ""
	switch env {
	case "vdpbf16ps":
		return true, ""
	case "reference":
		return false, "STOKE_GEMM_BF16=reference"
	case "", "auto":
	default:
		note = fmt.Sprintf("; STOKE_GEMM_BF16=%q ignored: want vdpbf16ps, reference or auto", env)
	}
	if vendor == "AuthenticAMD" {
		return true, note
	}
	return false, "on this CPU (" + vendor + ") the VDPBF16PS kernels measured slower than the fp32 ones; STOKE_GEMM_BF16=vdpbf16ps takes them" + note
}

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
	case p == BF16 && HasBF16() && !fastBF16Default: // the default here is the reference
		return "gemm bf16: inputs rounded to bf16, then the fp32 " + kernelName + " (the reference path: " + bf16Why + ")"
	case p == BF16 && HasBF16():
		return "gemm bf16: inputs rounded to bf16, then the fp32 " + kernelName + " (the reference path: the VDPBF16PS kernels held off)"
	case p == BF16:
		return BF16Name()
	case p == TF32:
		return "gemm tf32: inputs rounded to tf32, then the fp32 " + kernelName
	}
	return Name()
}
