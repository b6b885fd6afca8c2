//go:build !amd64

package cpuops

const useAVX512 = false

func pool2x2RowAVX512(r0, r1, out *float32, arg *uint8, n int) {
	panic("cpuops: pool2x2RowAVX512 without AVX-512")
}
