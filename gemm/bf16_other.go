//go:build !amd64

package gemm

// No bf16 kernels off amd64: SgemmBF16 rounds and runs Sgemm.
var (
	cpuBF16    = false
	bf16Kernel bf16Kernels
)

func bf16RoundVec(s []float32) int { return 0 }
