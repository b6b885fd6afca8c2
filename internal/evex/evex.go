// Package evex writes the AVX-512 instructions Go 1.26's assembler lacks
// (VDPBF16PS, VCVTNE2PS2BF16) as the BYTE directives of their EVEX
// encodings, register forms only (no memory operand, no masking: the
// encoding is then fixed by three register numbers), for the generators
// of gemm's bf16 kernels (gemm/gen_bf16.go) and cpuops's bf16 filter
// kernels (cpuops/gen_filter.go). gemm's TestBF16EncodingsMatchGNUAs
// checks every encoding they wrote against GNU as.
package evex

import "fmt"

// encode is the 6-byte EVEX.512.0F38.W0 register form "op zmm(dst), zmm(src1),
// zmm(src2)" in Intel operand order (Intel SDM vol. 2, 2.7 "Intel AVX-512
// encoding"): P0 holds R, X, B, R' inverted (ModRM.reg's bits 3 and 4,
// ModRM.rm's bits 3 and 4) and mm = 10 (map 0F38); P1 holds W = 0, vvvv
// (src1, inverted), 1 and pp; P2 holds z = 0, L'L = 10 (512 bits), b = 0,
// V' (src1's bit 4, inverted) and aaa = 000 (no mask).
func encode(pp, op byte, dst, src1, src2 int) string {
	p0 := byte(0x02)
	if dst&8 == 0 {
		p0 |= 0x80
	}
	if src2&16 == 0 {
		p0 |= 0x40
	}
	if src2&8 == 0 {
		p0 |= 0x20
	}
	if dst&16 == 0 {
		p0 |= 0x10
	}
	p1 := 0x04 | pp | byte(^src1&15)<<3
	p2 := byte(0x40)
	if src1&16 == 0 {
		p2 |= 0x08
	}
	modrm := 0xc0 | byte(dst&7)<<3 | byte(src2&7)
	return fmt.Sprintf("BYTE $0x62; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x", p0, p1, p2, op, modrm)
}

// VDPBF16PS is VDPBF16PS zmm(acc), zmm(x), zmm(y) (EVEX.512.F3.0F38.W0 52 /r):
// per fp32 lane i, acc[i] += x.bf16[2i+1]·y.bf16[2i+1], then += x.bf16[2i]·y.bf16[2i].
func VDPBF16PS(acc, x, y int) string {
	return encode(2, 0x52, acc, x, y) + fmt.Sprintf(" // VDPBF16PS Z%d, Z%d, Z%d (Intel order)", acc, x, y)
}

// VCVTNE2PS2BF16 is VCVTNE2PS2BF16 zmm(dst), zmm(hi), zmm(lo)
// (EVEX.512.F2.0F38.W0 72 /r): dst's words 0..15 are lo's 16 floats
// rounded to bf16, words 16..31 hi's.
func VCVTNE2PS2BF16(dst, hi, lo int) string {
	return encode(3, 0x72, dst, hi, lo) + fmt.Sprintf(" // VCVTNE2PS2BF16 Z%d, Z%d, Z%d (Intel order)", dst, hi, lo)
}
