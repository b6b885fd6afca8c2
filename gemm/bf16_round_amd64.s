#include "textflag.h"

// func bf16RoundAVX2(s *float32, n int)
//
// Rounds n floats (n a multiple of 8) to bf16 in place, as bf16RoundRNE
// does: u + 0x7fff + (u>>16 & 1), the low 16 bits cleared; a NaN keeps
// its top 16 bits with the quiet bit set.
TEXT ·bf16RoundAVX2(SB), NOSPLIT, $0-16
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ done
	MOVL $0x7fff, AX
	MOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $1, AX
	MOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0xffff0000, AX
	MOVD AX, X13
	VPBROADCASTD X13, Y13
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
	VPSRLD $16, Y0, Y1
	VPAND Y14, Y1, Y1
	VPADDD Y15, Y1, Y1
	VPADDD Y0, Y1, Y1
	VPAND Y13, Y1, Y1
	VPAND Y12, Y0, Y2
	VPCMPGTD Y11, Y2, Y3
	VPOR Y10, Y0, Y4
	VPAND Y13, Y4, Y4
	VPBLENDVB Y3, Y4, Y1, Y1
	VMOVDQU Y1, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
done:
	RET
