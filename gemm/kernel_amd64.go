package gemm

// kernel6x16AVX2 is the AVX2+FMA micro-kernel (kernel_amd64.s).
//
//go:noescape
func kernel6x16AVX2(k int, a, b, c *float32, ldc int, alpha, beta float32)

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// hasAVX2FMA reports whether the CPU has AVX2 and FMA and the OS saves the
// ymm registers (Intel SDM vol. 1, 14.3 "Detection of Intel AVX instructions").
func hasAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

var kernel, kernelName = chooseKernel()

func chooseKernel() (kernelFunc, string) {
	if hasAVX2FMA() {
		return kernel6x16AVX2, "Go assembly AVX2+FMA 6x16 micro-kernel"
	}
	return kernelGo, "pure Go 6x16 micro-kernel (no AVX2+FMA on this CPU)"
}

// HasAVX2 reports whether this CPU runs the AVX2+FMA kernels, for other
// packages' vector loops to choose the same way.
func HasAVX2() bool { return hasAVX2 }

var hasAVX2 = hasAVX2FMA()
