#include "textflag.h"

// func gatherRows16AVX512(dst, src *float32, offs *int, n int, idx *int32, mask uint16)
// For q < n and j < 16: dst[16q+j] = src[offs[q]+idx[j]] where bit j of
// mask is set, 0 where it is not (those lanes read nothing): a panel of
// an im2col matrix whose 16 pixels are in no run (a stride of 2, a row
// boundary inside the panel), one VGATHERDPS a row.
TEXT ·gatherRows16AVX512(SB), NOSPLIT, $0-42
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    offs+16(FP), BX
	MOVQ    n+24(FP), CX
	MOVQ    idx+32(FP), AX
	MOVWLZX mask+40(FP), DX
	VMOVDQU32 (AX), Z1
	KMOVW   DX, K2
	TESTQ   CX, CX
	JZ      gdone

gloop:
	MOVQ       (BX), R8
	LEAQ       (SI)(R8*4), R9
	KMOVW      K2, K1
	VPXORD     Z0, Z0, Z0
	VGATHERDPS (R9)(Z1*4), K1, Z0
	VMOVUPS    Z0, (DI)
	ADDQ       $8, BX
	ADDQ       $64, DI
	DECQ       CX
	JNZ        gloop

gdone:
	VZEROUPPER
	RET
