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
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K2
	VMOVDQU32.Z (DI), K2, Z0
	ROUND16
	VMOVDQU32 Z1, K2, (DI)
end:
	VZEROUPPER
	RET
