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

//go:noescape
func bf16PairRows16(dst *uint32, dstride int, src *float32, offs *int, kb, c, limit int) (ok bool)

// bf16RoundVec rounds a start of s to bf16 as bf16BitsRNE does (a NaN
// keeps its top 16 bits, quiet) and returns how long: all of s in AVX-512
// (HasAVX512), the longest multiple of 8 floats in AVX2, none without.
func bf16RoundVec(s []float32) int {
	return roundVecMasked(s, 16, 0xffff0000)
}

var (
	cpuBF16    = hasAVX512BF16()
	bf16Kernel = bf16Kernels{
		k32:      [3]bf16KernelFunc{bf16Kernel4x32, bf16Kernel8x32, bf16Kernel12x32},
		k16:      [3]bf16KernelFunc{bf16Kernel4x16, bf16Kernel8x16, bf16Kernel12x16},
		pairs:    bf16Pairs16,
		pairRows: bf16PairRows16,
		row:      bf16Row32,
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

// roundMantissaAVX512 is roundMantissaAVX2 on 16 lanes for any n (the last
// n%16 under a mask): 4x the floats per ns of the AVX2 loop in L1 on an
// Intel Xeon of family 6 model 207 (BenchmarkRoundBF16).
//
//go:noescape
func roundMantissaAVX512(s *float32, n int, drop, half, mask, nanMask uint32)

// roundBF16AVX512BF16 is roundMantissaAVX512(s, n, 16, 0x7fff,
// 0xffff0000, nanMask) by VCVTNE2PS2BF16 on 32 floats at a time that hold
// no NaN and no denormal: on an Intel Xeon of family 6 model 207, 1.35x
// the floats per ns of roundMantissaAVX512 in L1 (BenchmarkRoundBF16),
// 2-3% of a resnet20 bf16 step.
//
//go:noescape
func roundBF16AVX512BF16(s *float32, n int, nanMask uint32)

// roundCvt says whether the bf16 rounding runs roundBF16AVX512BF16: the
// CPU has AVX512_BF16 and BW (HasBF16; BW for VPERMW and 32-bit masks) and
// AVX512DQ (CPUID.(EAX=7,ECX=0):EBX bit 17, for VFPCLASSPS).
var roundCvt = HasBF16() && func() bool { _, ebx7, _, _ := cpuid(7, 0); return ebx7&(1<<17) != 0 }()

// roundVec rounds a start of s as roundMantissa(x, drop) and returns how
// long (bf16RoundVec's lengths).
func roundVec(s []float32, drop uint) int {
	return roundVecMasked(s, drop, ^uint32(0))
}

// roundVecMasked is roundVec with a NaN keeping only the bits nanMask
// keeps: at bf16 by VCVTNE2PS2BF16 where roundCvt, else in AVX-512 where
// HasAVX512, else in AVX2 where the CPU has it.
func roundVecMasked(s []float32, drop uint, nanMask uint32) int {
	if len(s) == 0 {
		return 0
	}
	half, mask := uint32(1)<<(drop-1)-1, ^(uint32(1)<<drop - 1)
	if drop == 16 && roundCvt {
		roundBF16AVX512BF16(&s[0], len(s), nanMask)
		return len(s)
	}
	if HasAVX512() {
		roundMantissaAVX512(&s[0], len(s), uint32(drop), half, mask, nanMask)
		return len(s)
	}
	n := len(s) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	roundMantissaAVX2(&s[0], n, uint32(drop), half, mask, nanMask)
	return n
}
