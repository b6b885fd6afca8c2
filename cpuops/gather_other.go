//go:build !amd64

package cpuops

const useAVX512 = false

func gatherRows16AVX512(dst, base *float32, offs *[16]int32, n int) {
	panic("cpuops: gatherRows16AVX512 without AVX-512")
}
