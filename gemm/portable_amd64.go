//go:build stokepurego

package gemm

// With the build tag stokepurego the amd64 build runs the portable Go
// kernels, as a CPU without AVX2+FMA does: the packages that choose their
// vector loops by HasAVX2 (cpuops, augment) follow, so that a test can
// check results on both paths of one machine (model's state hashes:
// go test -tags stokepurego ./model).
func init() {
	hasAVX2, hasAVX512 = false, false
	kernel, wide, kernelName = kernelGo, wideKernel{}, "pure Go 6x16 micro-kernel (build tag stokepurego)"
}
