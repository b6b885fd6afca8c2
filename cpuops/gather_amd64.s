#include "textflag.h"

// func gatherRows16AVX512(dst, base *float32, offs *[16]int32, n int)
//
// Row r of dst (16 floats, r < n) gets base[r+offs[j]] for j < 16: one
// VGATHERDPS per row, two rows in flight (Z0/K1, Z2/K2); the gather's
// destination is zeroed first so that no row waits for the one before.
TEXT ·gatherRows16AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ base+8(FP), SI
	MOVQ offs+16(FP), AX
	MOVQ n+24(FP), CX
	VMOVDQU32 (AX), Z1
	MOVQ CX, DX
	SHRQ $1, DX
	JZ tail
loop2:
	KXNORW K1, K1, K1
	KXNORW K2, K2, K2
	VPXORD Z0, Z0, Z0
	VPXORD Z2, Z2, Z2
	VGATHERDPS (SI)(Z1*4), K1, Z0
	VGATHERDPS 4(SI)(Z1*4), K2, Z2
	VMOVUPS Z0, (DI)
	VMOVUPS Z2, 64(DI)
	ADDQ $8, SI
	ADDQ $128, DI
	DECQ DX
	JNZ loop2
tail:
	ANDQ $1, CX
	JZ done
	KXNORW K1, K1, K1
	VPXORD Z0, Z0, Z0
	VGATHERDPS (SI)(Z1*4), K1, Z0
	VMOVUPS Z0, (DI)
done:
	VZEROUPPER
	RET
