package gemm

import (
	"fmt"
	"os"
)

// kernel6x16AVX2 is the AVX2+FMA micro-kernel (kernel_amd64.s).
//
//go:noescape
func kernel6x16AVX2(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:generate go run gen_avx512.go

// The AVX-512 micro-kernels (kernel_avx512_amd64.s, written by
// gen_avx512.go): 12x32 runs, 6x32 takes its last row panels; the others
// were measured against it (gemm_avx512_amd64_test.go).
//
//go:noescape
func kernel12x32AVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel6x32AVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel6x48AVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel6x64AVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel12x16AVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

// The row kernels for a last row panel of 1 to 5 rows beside 12x32 and
// 6x32's tiles (gen_avx512.go): the bits of kernel6x32AVX512 into a
// scratch tile and addTile, without the scratch tile or the unused rows.
//
//go:noescape
func kernel1x32AVX512p(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel2x32AVX512p(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel3x32AVX512p(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel4x32AVX512p(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel5x32AVX512p(k int, a, b, c *float32, ldc int, alpha, beta float32)

var rows32 = [mr]kernelFunc{nil, kernel1x32AVX512p, kernel2x32AVX512p, kernel3x32AVX512p, kernel4x32AVX512p, kernel5x32AVX512p}

// The direct kernels (gen_avx512.go): 12x32, 6x32 and the row kernels
// with B's two panels read at b0 + offs[p] and b1 + offs[p] (RunPanels),
// the same FMAs in the same order as the packed ones.
//
//go:noescape
func kernel12x32AVX512d(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel6x32AVX512d(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel1x32AVX512pd(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel2x32AVX512pd(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel3x32AVX512pd(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel4x32AVX512pd(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

//go:noescape
func kernel5x32AVX512pd(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

// direct12x32 is the 12x32 tile's kernels on runs.
var direct12x32 = &directKernels{kernel12x32AVX512d, kernel6x32AVX512d,
	[mr]directFunc{nil, kernel1x32AVX512pd, kernel2x32AVX512pd, kernel3x32AVX512pd, kernel4x32AVX512pd, kernel5x32AVX512pd}}

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

// hasAVX512F reports whether the CPU has AVX-512F (CPUID.(EAX=7,ECX=0):EBX
// bit 16) and the OS saves the opmask and all 32 zmm registers: XCR0 bits
// 1, 2 (XMM, YMM) and 5, 6, 7 (opmask, ZMM_Hi256, Hi16_ZMM) (Intel SDM
// vol. 1, 15.2 "Detection of AVX-512 Foundation instructions"). It also
// needs AVX2+FMA, for the 6x16 kernel at the edges.
func hasAVX512F() bool {
	if !hasAVX2FMA() {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<16) != 0
}

// wideKernels are the AVX-512 tiles by name, the first the one chosen.
var wideKernels = []struct {
	name string
	w    wideKernel
}{
	{"12x32", wideKernel{kernel12x32AVX512, kernel6x32AVX512, 12, 32, kernel12x16AVX512, rows32, direct12x32}},
	{"6x32", wideKernel{kernel6x32AVX512, kernel6x32AVX512, 6, 32, kernel12x16AVX512, rows32, nil}},
	{"6x48", wideKernel{kernel6x48AVX512, kernel6x48AVX512, 6, 48, kernel12x16AVX512, [mr]kernelFunc{}, nil}},
	{"6x64", wideKernel{kernel6x64AVX512, kernel6x64AVX512, 6, 64, kernel12x16AVX512, [mr]kernelFunc{}, nil}},
	{"12x16", wideKernel{kernel12x16AVX512, kernel6x16AVX2, 12, 16, nil, [mr]kernelFunc{}, nil}},
}

var (
	hasAVX2   = hasAVX2FMA()
	hasAVX512 = hasAVX512F()

	kernel, wide, kernelName = chooseKernel(os.Getenv("STOKE_GEMM"), hasAVX2, hasAVX512)
)

// chooseKernel picks the kernels for the CPU: AVX-512 where it has it,
// unless $STOKE_GEMM (env) is "avx2", which holds it to the AVX2 kernel
// (for comparisons; the results are the same bits).
func chooseKernel(env string, avx2, avx512 bool) (kernelFunc, wideKernel, string) {
	note := ""
	switch env {
	case "", "auto":
	case "avx2":
		if avx512 {
			avx512, note = false, " (STOKE_GEMM=avx2)"
		}
	case "avx512":
		if !avx512 {
			note = " (STOKE_GEMM=avx512, but this CPU or OS has no AVX-512F)"
		}
	default:
		note = fmt.Sprintf(" (STOKE_GEMM=%q ignored: want avx2, avx512 or auto)", env)
	}
	switch {
	case avx512:
		w := wideKernels[0]
		edges := "AVX2+FMA 6x16 at the edges"
		if w.w.edge != nil {
			edges = "AVX-512F 12x16 and AVX2+FMA 6x16 at the edges"
		}
		return kernel6x16AVX2, w.w, "Go assembly AVX-512F " + w.name + " micro-kernel, " + edges + note
	case avx2:
		return kernel6x16AVX2, wideKernel{}, "Go assembly AVX2+FMA 6x16 micro-kernel" + note
	}
	return kernelGo, wideKernel{}, "pure Go 6x16 micro-kernel (no AVX2+FMA on this CPU)" + note
}

// HasAVX2 reports whether this CPU runs the AVX2+FMA kernels, for other
// packages' vector loops to choose the same way.
func HasAVX2() bool { return hasAVX2 }

// HasAVX512 reports whether Sgemm runs the AVX-512F kernels: the CPU and
// OS support them, and neither STOKE_GEMM=avx2 nor the build tag
// stokepurego holds it to a narrower path; other packages' AVX-512 loops
// choose by it too.
func HasAVX512() bool { return wide.main != nil }
