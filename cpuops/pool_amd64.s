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

// maxIdx2: the dword offsets 0, 2, ..., 14 of 8 outputs' first taps.
DATA maxIdx2<>+0(SB)/4, $0
DATA maxIdx2<>+4(SB)/4, $2
DATA maxIdx2<>+8(SB)/4, $4
DATA maxIdx2<>+12(SB)/4, $6
DATA maxIdx2<>+16(SB)/4, $8
DATA maxIdx2<>+20(SB)/4, $10
DATA maxIdx2<>+24(SB)/4, $12
DATA maxIdx2<>+28(SB)/4, $14
GLOBL maxIdx2<>(SB), RODATA|NOPTR, $32

// KEY maps the floats of V to orderKey's int32 keys (T scratch); the map is
// its own inverse, so it also maps a key back to the float's bits.
#define KEY(V, T) \
	VPSRAD $31, V, T \
	VPSRLD $1, T, T \
	VPXOR  T, V, V

// TAP keeps key K, index I as the best (Y8, Y9) where K > Y8 (strictly:
// the first maximum stays).
#define TAP(K, I) \
	VPCMPGTD Y8, K, Y10 \
	VPMAXSD  K, Y8, Y8 \
	VPBLENDVB Y10, I, Y9, Y9

// ROW loads the three taps of 8 windows from the row at R10 (columns
// 2j, 2j+1, 2j+2 of output j): x[0..15] split into evens and odds, and
// x[1..16]'s odds, each pair of VSHUFPS halves put in order by VPERMPD.
#define ROW \
	VMOVUPS   (R10), Y0 \
	VMOVUPS   32(R10), Y1 \
	VMOVUPS   4(R10), Y2 \
	VMOVUPS   36(R10), Y3 \
	VSHUFPS   $0x88, Y1, Y0, Y4 \
	VSHUFPS   $0xDD, Y1, Y0, Y5 \
	VSHUFPS   $0xDD, Y3, Y2, Y6 \
	VPERMPD   $0xD8, Y4, Y4 \
	VPERMPD   $0xD8, Y5, Y5 \
	VPERMPD   $0xD8, Y6, Y6 \
	KEY(Y4, Y7) \
	KEY(Y5, Y7) \
	KEY(Y6, Y7)

// func maxPool3s2AVX2(src *float32, w, rows int, base int32, n int, y *float32, arg *int32)
//
// 8n outputs of a MaxPool2d(3, stride 2) row whose windows lie inside
// their rows (MaxPool.interior): output j's window is columns 2j..2j+2 of
// rows 0..rows-1 (1 to 3) at src, w floats apart; the first maximum in
// (row, column) order by orderKey, as the Go loop, its index base + row·w +
// column into arg and its value into y.
TEXT ·maxPool3s2AVX2(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ w+8(FP), R8
	MOVQ rows+16(FP), R9
	MOVL base+24(FP), AX
	MOVQ n+32(FP), CX
	MOVQ y+40(FP), DI
	MOVQ arg+48(FP), DX
	VMOVDQU maxIdx2<>(SB), Y15
	MOVL $1, BX
	MOVQ BX, X14
	VPBROADCASTD X14, Y14   // 1
	LEAQ -2(R8), BX
	MOVQ BX, X13
	VPBROADCASTD X13, Y13   // w-2: from a row's third taps to the next row's first
	MOVL $16, BX
	MOVQ BX, X12
	VPBROADCASTD X12, Y12   // 16: the next 8 outputs' first taps
	MOVQ AX, X11
	VPBROADCASTD X11, Y11
	VPADDD Y15, Y11, Y11    // first taps' indices in row 0
	SHLQ $2, R8             // w in bytes
	TESTQ CX, CX
	JZ done
loop:
	MOVQ SI, R10
	VMOVDQA Y11, Y15        // the taps' indices, row by row
	ROW
	VMOVDQA Y4, Y8
	VMOVDQA Y15, Y9
	VPADDD Y14, Y15, Y15
	TAP(Y5, Y15)
	VPADDD Y14, Y15, Y15
	TAP(Y6, Y15)
	MOVQ R9, BX
	DECQ BX
	JZ store
rows:
	ADDQ R8, R10
	VPADDD Y13, Y15, Y15
	ROW
	TAP(Y4, Y15)
	VPADDD Y14, Y15, Y15
	TAP(Y5, Y15)
	VPADDD Y14, Y15, Y15
	TAP(Y6, Y15)
	DECQ BX
	JNZ rows
store:
	KEY(Y8, Y7)
	VMOVDQU Y8, (DI)
	VMOVDQU Y9, (DX)
	VPADDD Y12, Y11, Y11    // on 8 outputs (16 columns)
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET
