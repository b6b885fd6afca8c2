#include "textflag.h"

// poolIdx: the dword indices of VPERMT2D that pick the even (first 16) and
// odd (last 16) columns of 32.
DATA poolIdx<>+0(SB)/4, $0
DATA poolIdx<>+4(SB)/4, $2
DATA poolIdx<>+8(SB)/4, $4
DATA poolIdx<>+12(SB)/4, $6
DATA poolIdx<>+16(SB)/4, $8
DATA poolIdx<>+20(SB)/4, $10
DATA poolIdx<>+24(SB)/4, $12
DATA poolIdx<>+28(SB)/4, $14
DATA poolIdx<>+32(SB)/4, $16
DATA poolIdx<>+36(SB)/4, $18
DATA poolIdx<>+40(SB)/4, $20
DATA poolIdx<>+44(SB)/4, $22
DATA poolIdx<>+48(SB)/4, $24
DATA poolIdx<>+52(SB)/4, $26
DATA poolIdx<>+56(SB)/4, $28
DATA poolIdx<>+60(SB)/4, $30
DATA poolIdx<>+64(SB)/4, $1
DATA poolIdx<>+68(SB)/4, $3
DATA poolIdx<>+72(SB)/4, $5
DATA poolIdx<>+76(SB)/4, $7
DATA poolIdx<>+80(SB)/4, $9
DATA poolIdx<>+84(SB)/4, $11
DATA poolIdx<>+88(SB)/4, $13
DATA poolIdx<>+92(SB)/4, $15
DATA poolIdx<>+96(SB)/4, $17
DATA poolIdx<>+100(SB)/4, $19
DATA poolIdx<>+104(SB)/4, $21
DATA poolIdx<>+108(SB)/4, $23
DATA poolIdx<>+112(SB)/4, $25
DATA poolIdx<>+116(SB)/4, $27
DATA poolIdx<>+120(SB)/4, $29
DATA poolIdx<>+124(SB)/4, $31
GLOBL poolIdx<>(SB), RODATA|NOPTR, $128

// func pool2x2RowAVX512(r0, r1, out *float32, arg *uint8, n int)
//
// 16n outputs of pool2x2 (pool.go) from two input rows: the four inputs of
// each output split into even and odd columns (VPERMT2D), mapped to
// orderKey's int32 keys, and the first strictly greatest kept with its
// index 0..3 (as the Go loop: k1 > k, then k2, then k3); the key maps back
// to the value's bits (the map is its own inverse).
TEXT ·pool2x2RowAVX512(SB), NOSPLIT, $0-40
	MOVQ r0+0(FP), SI
	MOVQ r1+8(FP), DI
	MOVQ out+16(FP), DX
	MOVQ arg+24(FP), BX
	MOVQ n+32(FP), CX
	VMOVDQU32 poolIdx<>+0(SB), Z30
	VMOVDQU32 poolIdx<>+64(SB), Z31
	MOVL $1, AX
	VPBROADCASTD AX, Z26
	MOVL $2, AX
	VPBROADCASTD AX, Z27
	MOVL $3, AX
	VPBROADCASTD AX, Z28
	TESTQ CX, CX
	JZ done
loop:
	VMOVDQU32 (SI), Z0
	VMOVDQU32 64(SI), Z1
	VMOVDQA32 Z0, Z2
	VPERMT2D Z1, Z30, Z2
	VMOVDQA32 Z0, Z3
	VPERMT2D Z1, Z31, Z3
	VMOVDQU32 (DI), Z0
	VMOVDQU32 64(DI), Z1
	VMOVDQA32 Z0, Z4
	VPERMT2D Z1, Z30, Z4
	VMOVDQA32 Z0, Z5
	VPERMT2D Z1, Z31, Z5
	VPSRAD $31, Z2, Z6
	VPSRLD $1, Z6, Z6
	VPXORD Z6, Z2, Z2
	VPSRAD $31, Z3, Z6
	VPSRLD $1, Z6, Z6
	VPXORD Z6, Z3, Z3
	VPSRAD $31, Z4, Z6
	VPSRLD $1, Z6, Z6
	VPXORD Z6, Z4, Z4
	VPSRAD $31, Z5, Z6
	VPSRLD $1, Z6, Z6
	VPXORD Z6, Z5, Z5
	VPXORD Z7, Z7, Z7
	VPCMPGTD Z2, Z3, K1
	VMOVDQA32 Z3, K1, Z2
	VMOVDQA32 Z26, K1, Z7
	VPCMPGTD Z2, Z4, K2
	VMOVDQA32 Z4, K2, Z2
	VMOVDQA32 Z27, K2, Z7
	VPCMPGTD Z2, Z5, K3
	VMOVDQA32 Z5, K3, Z2
	VMOVDQA32 Z28, K3, Z7
	VPSRAD $31, Z2, Z6
	VPSRLD $1, Z6, Z6
	VPXORD Z6, Z2, Z2
	VMOVDQU32 Z2, (DX)
	VPMOVDB Z7, (BX)
	ADDQ $128, SI
	ADDQ $128, DI
	ADDQ $64, DX
	ADDQ $16, BX
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET
