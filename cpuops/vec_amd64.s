#include "textflag.h"

// func addToAVX2(dst, src *float32, n int)
// dst[i] += src[i] for i < n, n a multiple of 8.
TEXT ·addToAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
loop32:
	CMPQ CX, $32
	JL   loop8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS (DI), Y0, Y0
	VADDPS 32(DI), Y1, Y1
	VADDPS 64(DI), Y2, Y2
	VADDPS 96(DI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32
loop8:
	CMPQ CX, $8
	JL   done
	VMOVUPS (SI), Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8
done:
	VZEROUPPER
	RET

// func maskAVX2(d, y, dy *float32, n int)
// d[i] = dy[i] where the bits of y[i] are not zero, else 0; n a multiple of 8.
TEXT ·maskAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	VPXOR Y15, Y15, Y15
mloop:
	CMPQ CX, $16
	JL   m8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y2
	VPCMPEQD Y15, Y0, Y1
	VPCMPEQD Y15, Y2, Y3
	VPANDN (DX), Y1, Y1
	VPANDN 32(DX), Y3, Y3
	VMOVUPS Y1, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  mloop
m8:
	CMPQ CX, $8
	JL   mdone
	VMOVUPS (SI), Y0
	VPCMPEQD Y15, Y0, Y1
	VPANDN (DX), Y1, Y1
	VMOVUPS Y1, (DI)
mdone:
	VZEROUPPER
	RET

// func biasReLUAVX2(x *float32, n int, b float32)
// x[i] = max(x[i]+b, 0) for i < n, n a multiple of 8, as Go's max: a NaN
// stays NaN (VMAXPS returns its second source when either is NaN) and −0
// becomes +0 (adding +0 after the max).
TEXT ·biasReLUAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS b+16(FP), Y14
	VXORPS Y15, Y15, Y15
bloop:
	CMPQ CX, $16
	JL   b8
	VADDPS (DI), Y14, Y0
	VADDPS 32(DI), Y14, Y1
	VMAXPS Y0, Y15, Y0
	VMAXPS Y1, Y15, Y1
	VADDPS Y15, Y0, Y0
	VADDPS Y15, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  bloop
b8:
	CMPQ CX, $8
	JL   bdone
	VADDPS (DI), Y14, Y0
	VMAXPS Y0, Y15, Y0
	VADDPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
bdone:
	VZEROUPPER
	RET
