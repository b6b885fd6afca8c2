//go:build !amd64

package gemm

var (
	kernel     kernelFunc = kernelGo
	wide       wideKernel
	kernelName = "pure Go 6x16 micro-kernel"
)

// HasAVX2 reports whether this CPU runs the AVX2+FMA kernels: never here.
func HasAVX2() bool { return false }

// HasAVX512 reports whether Sgemm runs the AVX-512F kernels: never here.
func HasAVX512() bool { return false }
