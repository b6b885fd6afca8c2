//go:build !amd64

package gemm

// No bf16 kernels off amd64: SgemmBF16 rounds and runs Sgemm.
var (
	cpuBF16    = false
	bf16Kernel bf16Kernels
)

func bf16RoundVec(s []float32) int { return 0 }

// cpuVendor is empty off amd64 (no bf16 kernels to choose).
func cpuVendor() string { return "" }

func roundVec(s []float32, drop uint) int { return 0 }
