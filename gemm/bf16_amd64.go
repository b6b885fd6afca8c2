package gemm

//go:generate go run gen_bf16.go

// The AVX512_BF16 micro-kernels and the packing conversion (bf16_amd64.s,
// written by gen_bf16.go).
//
//go:noescape
func bf16Kernel12x32(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32)

//go:noescape
func bf16Kernel12x16(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32)

//go:noescape
func bf16Kernel8x32(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32)

//go:noescape
func bf16Kernel8x16(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32)

//go:noescape
func bf16Kernel4x32(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32)

//go:noescape
func bf16Kernel4x16(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32)

//go:noescape
func bf16Pairs16(dst *uint32, dstride int, src *float32, kb int)

//go:noescape
func bf16Row32(dst *uint32, src *float32, n int)

// bf16RoundVec rounds the longest multiple of 8 floats at the start of s
// to bf16 as bf16BitsRNE does (a NaN keeps its top 16 bits, quiet) where
// the CPU has AVX2 and returns how many it did.
func bf16RoundVec(s []float32) int {
	n := len(s) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	roundMantissaAVX2(&s[0], n, 16, 0x7fff, 0xffff0000, 0xffff0000)
	return n
}

var (
	cpuBF16    = hasAVX512BF16()
	bf16Kernel = bf16Kernels{
		k32:   [3]bf16KernelFunc{bf16Kernel4x32, bf16Kernel8x32, bf16Kernel12x32},
		k16:   [3]bf16KernelFunc{bf16Kernel4x16, bf16Kernel8x16, bf16Kernel12x16},
		pairs: bf16Pairs16,
		row:   bf16Row32,
	}
)

// hasAVX512BF16 reports whether the CPU and OS run the bf16 kernels:
// AVX-512F with the OS saving the zmm state (hasAVX512F), AVX512BW
// (CPUID.(EAX=7,ECX=0):EBX bit 30, for VPERMW) and AVX512_BF16
// (CPUID.(EAX=7,ECX=1):EAX bit 5; leaf 7 reports its last sub-leaf in
// EAX of sub-leaf 0).
func hasAVX512BF16() bool {
	if !hasAVX512F() {
		return false
	}
	max7, ebx7, _, _ := cpuid(7, 0)
	if ebx7&(1<<30) == 0 || max7 < 1 {
		return false
	}
	eax71, _, _, _ := cpuid(7, 1)
	return eax71&(1<<5) != 0
}

// cpuVendor is CPUID leaf 0's vendor string ("AuthenticAMD",
// "GenuineIntel", ...): EBX, EDX, ECX in that order.
func cpuVendor() string {
	_, b, c, d := cpuid(0, 0)
	var v [12]byte
	for i, r := range [3]uint32{b, d, c} {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
	}
	return string(v[:])
}

// roundMantissaAVX2 rounds n floats (a multiple of 8) in place to drop
// fewer mantissa bits, ties to even; a NaN is made quiet and keeps the bits
// nanMask keeps (round_amd64.s).
//
//go:noescape
func roundMantissaAVX2(s *float32, n int, drop, half, mask, nanMask uint32)

// roundVec rounds the longest multiple of 8 floats at the start of s as
// roundMantissa(x, drop) where the CPU has AVX2 and returns how many it did.
func roundVec(s []float32, drop uint) int {
	n := len(s) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	roundMantissaAVX2(&s[0], n, uint32(drop), uint32(1)<<(drop-1)-1, ^(uint32(1)<<drop - 1), ^uint32(0))
	return n
}
