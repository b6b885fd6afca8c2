#include "textflag.h"

// func roundMantissaAVX2(s *float32, n int, drop, half, mask, nanMask uint32)
//
// Rounds n floats (n a multiple of 8) in place to drop fewer mantissa
// bits: u + half + (u>>drop & 1) with the low drop bits cleared (half =
// 2^(drop-1) - 1, mask = ^(2^drop - 1)), which leaves an infinity as it is;
// a NaN gets the quiet bit set and keeps the bits nanMask keeps (all of
// them for roundMantissa, the top 16 for bf16BitsRNE).
TEXT ·roundMantissaAVX2(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ done
	MOVL drop+16(FP), AX
	MOVQ AX, X9
	MOVL half+20(FP), AX
	MOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL mask+24(FP), AX
	MOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL nanMask+28(FP), AX
	MOVD AX, X8
	VPBROADCASTD X8, Y8
	MOVL $1, AX
	MOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x7fffffff, AX
	MOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x7f800000, AX
	MOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $0x00400000, AX
	MOVD AX, X10
	VPBROADCASTD X10, Y10
loop:
	VMOVDQU (DI), Y0
	VPSRLD X9, Y0, Y1
	VPAND Y14, Y1, Y1
	VPADDD Y15, Y1, Y1
	VPADDD Y0, Y1, Y1
	VPAND Y13, Y1, Y1
	VPAND Y12, Y0, Y2
	VPCMPGTD Y11, Y2, Y3
	VPOR Y10, Y0, Y4
	VPAND Y8, Y4, Y4
	VPBLENDVB Y3, Y4, Y1, Y1
	VMOVDQU Y1, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
done:
	RET

// ROUND16 rounds the 16 floats of Z0 into Z1 as roundMantissaAVX2 does,
// with Z9 = drop, Z14 = 1, Z15 = half, Z13 = mask, Z8 = nanMask and Z10 =
// the quiet bit in every lane; K1 marks the NaNs (unordered with
// themselves), Z2 is scratch.
#define ROUND16 \
	VPSRLVD Z9, Z0, Z1 \
	VPANDD Z14, Z1, Z1 \
	VPADDD Z15, Z1, Z1 \
	VPADDD Z0, Z1, Z1 \
	VCMPPS $3, Z0, Z0, K1 \
	VPORD Z10, Z0, K1, Z1 \
	VPBLENDMD Z8, Z13, K1, Z2 \
	VPANDD Z2, Z1, Z1

// ROUND16_MASKED rounds the CX (< 16) floats at DI in place as ROUND16,
// loaded and stored under the mask K2 of their lanes; AX is scratch.
#define ROUND16_MASKED \
	MOVL $1, AX \
	SHLL CX, AX \
	DECL AX \
	KMOVW AX, K2 \
	VMOVDQU32.Z (DI), K2, Z0 \
	ROUND16 \
	VMOVDQU32 Z1, K2, (DI)

// func roundMantissaAVX512(s *float32, n int, drop, half, mask, nanMask uint32)
//
// roundMantissaAVX2 on 16 lanes, for any n: a last n%16 floats are loaded
// and stored under a mask (AVX-512F).
TEXT ·roundMantissaAVX512(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	MOVL drop+16(FP), AX
	VPBROADCASTD AX, Z9
	MOVL half+20(FP), AX
	VPBROADCASTD AX, Z15
	MOVL mask+24(FP), AX
	VPBROADCASTD AX, Z13
	MOVL nanMask+28(FP), AX
	VPBROADCASTD AX, Z8
	MOVL $1, AX
	VPBROADCASTD AX, Z14
	MOVL $0x00400000, AX
	VPBROADCASTD AX, Z10
	MOVQ CX, BX
	SHRQ $4, BX
	JZ tail
loop:
	VMOVDQU32 (DI), Z0
	ROUND16
	VMOVDQU32 Z1, (DI)
	ADDQ $64, DI
	DECQ BX
	JNZ loop
tail:
	ANDQ $15, CX
	JZ end
	ROUND16_MASKED
end:
	VZEROUPPER
	RET

// spread16 is VPERMW's word indices that put words 0..15 (then 16..31) of
// a register into the high halves of 16 dwords: dword i is i<<16 (then
// (16+i)<<16); the low halves are zeroed by the mask K3 = 0xaaaaaaaa.
DATA spread16<>+0x00(SB)/8, $0x0001000000000000
DATA spread16<>+0x08(SB)/8, $0x0003000000020000
DATA spread16<>+0x10(SB)/8, $0x0005000000040000
DATA spread16<>+0x18(SB)/8, $0x0007000000060000
DATA spread16<>+0x20(SB)/8, $0x0009000000080000
DATA spread16<>+0x28(SB)/8, $0x000b0000000a0000
DATA spread16<>+0x30(SB)/8, $0x000d0000000c0000
DATA spread16<>+0x38(SB)/8, $0x000f0000000e0000
DATA spread16<>+0x40(SB)/8, $0x0011000000100000
DATA spread16<>+0x48(SB)/8, $0x0013000000120000
DATA spread16<>+0x50(SB)/8, $0x0015000000140000
DATA spread16<>+0x58(SB)/8, $0x0017000000160000
DATA spread16<>+0x60(SB)/8, $0x0019000000180000
DATA spread16<>+0x68(SB)/8, $0x001b0000001a0000
DATA spread16<>+0x70(SB)/8, $0x001d0000001c0000
DATA spread16<>+0x78(SB)/8, $0x001f0000001e0000
GLOBL spread16<>(SB), RODATA|NOPTR, $128

// func roundBF16AVX512BF16(s *float32, n int, nanMask uint32)
//
// roundMantissaAVX512(s, n, 16, 0x7fff, 0xffff0000, nanMask), 32 floats at
// a time by VCVTNE2PS2BF16 where none of them is a NaN or a denormal
// (VFPCLASSPS): on the others the conversion's rounding is that very
// addition (Intel SDM vol. 2, VCVTNE2PS2BF16, convert_fp32_to_bfloat16:
// t + 0x7fff + the kept lowest bit, then the high 16 bits), but it takes a
// denormal as zero and cuts a NaN's payload to 16 bits, so a 32 with
// either goes through ROUND16. VPERMW puts the 32 bf16 words back into the
// high halves of the floats.
TEXT ·roundBF16AVX512BF16(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	MOVL $16, AX
	VPBROADCASTD AX, Z9
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z15
	MOVL $0xffff0000, AX
	VPBROADCASTD AX, Z13
	MOVL nanMask+16(FP), AX
	VPBROADCASTD AX, Z8
	MOVL $1, AX
	VPBROADCASTD AX, Z14
	MOVL $0x00400000, AX
	VPBROADCASTD AX, Z10
	VMOVDQU32 spread16<>+0(SB), Z11
	VMOVDQU32 spread16<>+64(SB), Z12
	MOVL $0xaaaaaaaa, AX
	KMOVD AX, K3
	MOVQ CX, BX
	SHRQ $5, BX
	JZ bftail
bfloop:
	VMOVDQU32 (DI), Z0
	VMOVDQU32 64(DI), Z1
	VFPCLASSPSZ $0xa1, Z0, K1 // QNaN, SNaN, denormal
	VFPCLASSPSZ $0xa1, Z1, K2
	KORTESTW K1, K2
	JNZ bfspecial
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // VCVTNE2PS2BF16 Z2, Z1, Z0 (Intel order)
	VPERMW.Z Z2, Z11, K3, Z3
	VPERMW.Z Z2, Z12, K3, Z4
	VMOVDQU32 Z3, (DI)
	VMOVDQU32 Z4, 64(DI)
bfnext:
	ADDQ $128, DI
	DECQ BX
	JNZ bfloop
bftail:
	ANDQ $31, CX
	JZ bfend
	CMPQ CX, $16
	JLT bfmasked
	VMOVDQU32 (DI), Z0
	ROUND16
	VMOVDQU32 Z1, (DI)
	ADDQ $64, DI
	SUBQ $16, CX
	JZ bfend
bfmasked:
	ROUND16_MASKED
bfend:
	VZEROUPPER
	RET
bfspecial:
	VMOVDQA32 Z1, Z5
	ROUND16
	VMOVDQU32 Z1, (DI)
	VMOVDQA32 Z5, Z0
	ROUND16
	VMOVDQU32 Z1, 64(DI)
	JMP bfnext
