#include "textflag.h"

// func addAVX2(z, x, y *float32, n int)
// z[i] = x[i] + y[i]; n a multiple of 8. z may be x or y (each element is
// read before it is written).
TEXT ·addAVX2(SB), NOSPLIT, $0-32
	MOVQ z+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
add32:
	CMPQ CX, $32
	JL   add8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  add32
add8:
	CMPQ CX, $8
	JL   adddone
	VMOVUPS (SI), Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  add8
adddone:
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

// func sumSqAVX2(x *float32, n int) (s, ss float64)
// s = Σ x[i], ss = Σ x[i]² over i < n, n a multiple of 16, both summed in
// float64: four chains of four lanes, added together at the end.
TEXT ·sumSqAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
sqloop:
	CMPQ CX, $16
	JL   sqdone
	VCVTPS2PD (SI), Y8
	VCVTPS2PD 16(SI), Y9
	VCVTPS2PD 32(SI), Y10
	VCVTPS2PD 48(SI), Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VADDPD Y10, Y2, Y2
	VADDPD Y11, Y3, Y3
	VFMADD231PD Y8, Y8, Y4
	VFMADD231PD Y9, Y9, Y5
	VFMADD231PD Y10, Y10, Y6
	VFMADD231PD Y11, Y11, Y7
	ADDQ $64, SI
	SUBQ $16, CX
	JMP  sqloop
sqdone:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VADDPD Y5, Y4, Y4
	VADDPD Y7, Y6, Y6
	VADDPD Y6, Y4, Y4
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, s+16(FP)
	VEXTRACTF128 $1, Y4, X5
	VADDPD X5, X4, X4
	VHADDPD X4, X4, X4
	VMOVSD X4, ss+24(FP)
	VZEROUPPER
	RET

// func scaleShiftAVX2(x, y *float32, n int, scale, shift float32, relu bool)
// y[i] = x[i]·scale + shift, then max(·, 0) when relu, as biasReLUAVX2
// does it; n a multiple of 8. A multiply then an add, as the Go loop, not
// one FMA: rounded once, the pre-activations nearest 0 land on the other
// side of the ReLU from PyTorch's (which rounds twice) often enough to
// show in the ResNet parity check.
TEXT ·scaleShiftAVX2(SB), NOSPLIT, $0-33
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y14
	VBROADCASTSS shift+28(FP), Y13
	VXORPS Y15, Y15, Y15
	MOVBLZX relu+32(FP), AX
	TESTL AX, AX
	JNZ  ssrelu
ssloop:
	CMPQ CX, $8
	JL   ssdone
	VMULPS (SI), Y14, Y0
	VADDPS Y13, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  ssloop
ssrelu:
	CMPQ CX, $8
	JL   ssdone
	VMULPS (SI), Y14, Y0
	VADDPS Y13, Y0, Y0
	VMAXPS Y0, Y15, Y0
	VADDPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  ssrelu
ssdone:
	VZEROUPPER
	RET

// func scaleShiftAddReLUAVX2(x, s, y *float32, n int, scale, shift float32)
// y[i] = max((x[i]·scale + shift) + s[i], 0), n a multiple of 8: a
// BasicBlock's bn2, residual add and ReLU in one pass, rounded as
// scaleShiftAVX2 then AddReLU round (a multiply, an add, an add, the max
// as biasReLUAVX2 takes it).
TEXT ·scaleShiftAddReLUAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ s+8(FP), BX
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSS scale+32(FP), Y14
	VBROADCASTSS shift+36(FP), Y13
	VXORPS Y15, Y15, Y15
saloop:
	CMPQ CX, $16
	JL   sa8
	VMULPS (SI), Y14, Y0
	VMULPS 32(SI), Y14, Y1
	VADDPS Y13, Y0, Y0
	VADDPS Y13, Y1, Y1
	VADDPS (BX), Y0, Y0
	VADDPS 32(BX), Y1, Y1
	VMAXPS Y0, Y15, Y0
	VMAXPS Y1, Y15, Y1
	VADDPS Y15, Y0, Y0
	VADDPS Y15, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, SI
	ADDQ $64, BX
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  saloop
sa8:
	CMPQ CX, $8
	JL   sadone
	VMULPS (SI), Y14, Y0
	VADDPS Y13, Y0, Y0
	VADDPS (BX), Y0, Y0
	VMAXPS Y0, Y15, Y0
	VADDPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
sadone:
	VZEROUPPER
	RET

// func gradSumsMaskAVX2(x, y, dy, d *float32, n int) (sg, sgx float32)
// gradSumsAVX2 with relu, also storing the masked g in d[i]: the ReLU's
// backward and BatchNorm's first backward pass in one.
TEXT ·gradSumsMaskAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), BX
	MOVQ dy+16(FP), DX
	MOVQ d+24(FP), DI
	MOVQ n+32(FP), CX
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	VPXOR Y15, Y15, Y15
gmloop:
	CMPQ CX, $8
	JL   gmdone
	VMOVUPS (BX), Y1
	VPCMPEQD Y15, Y1, Y1
	VPANDN (DX), Y1, Y0
	VMOVUPS Y0, (DI)
	VADDPS Y0, Y4, Y4
	VFMADD231PS (SI), Y0, Y6
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  gmloop
gmdone:
	VEXTRACTF128 $1, Y4, X5
	VADDPS X5, X4, X4
	VHADDPS X4, X4, X4
	VHADDPS X4, X4, X4
	VMOVSS X4, sg+40(FP)
	VEXTRACTF128 $1, Y6, X7
	VADDPS X7, X6, X6
	VHADDPS X6, X6, X6
	VHADDPS X6, X6, X6
	VMOVSS X6, sgx+44(FP)
	VZEROUPPER
	RET

// func gradSumsAVX2(x, y, dy *float32, n int, relu bool) (sg, sgx float32)
// With g = dy (masked to where y's bits are not zero when relu): sg = Σ g,
// sgx = Σ g·x, over i < n, n a multiple of 8; eight float32 lanes each.
TEXT ·gradSumsAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), BX
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	VPXOR Y15, Y15, Y15
	MOVBLZX relu+32(FP), AX
	TESTL AX, AX
	JNZ  gsrelu
gsloop:
	CMPQ CX, $8
	JL   gsdone
	VMOVUPS (DX), Y0
	VADDPS Y0, Y4, Y4
	VFMADD231PS (SI), Y0, Y6
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  gsloop
gsrelu:
	CMPQ CX, $8
	JL   gsdone
	VMOVUPS (BX), Y1
	VPCMPEQD Y15, Y1, Y1
	VPANDN (DX), Y1, Y0
	VADDPS Y0, Y4, Y4
	VFMADD231PS (SI), Y0, Y6
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  gsrelu
gsdone:
	VEXTRACTF128 $1, Y4, X5
	VADDPS X5, X4, X4
	VHADDPS X4, X4, X4
	VHADDPS X4, X4, X4
	VMOVSS X4, sg+40(FP)
	VEXTRACTF128 $1, Y6, X7
	VADDPS X7, X6, X6
	VHADDPS X6, X6, X6
	VHADDPS X6, X6, X6
	VMOVSS X6, sgx+44(FP)
	VZEROUPPER
	RET

// func bnDxAVX2(x, y, dy, dx *float32, n int, relu bool, a, b, d float32)
// dx[i] = a·g + (b·x[i] + d), g as in gradSumsAVX2; n a multiple of 8.
TEXT ·bnDxAVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), BX
	MOVQ dy+16(FP), DX
	MOVQ dx+24(FP), DI
	MOVQ n+32(FP), CX
	VBROADCASTSS a+44(FP), Y12
	VBROADCASTSS b+48(FP), Y13
	VBROADCASTSS d+52(FP), Y14
	VPXOR Y15, Y15, Y15
	MOVBLZX relu+40(FP), AX
	TESTL AX, AX
	JNZ  dxrelu
dxloop:
	CMPQ CX, $8
	JL   dxdone
	VMOVUPS (SI), Y2
	VFMADD213PS Y14, Y13, Y2
	VFMADD231PS (DX), Y12, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  dxloop
dxrelu:
	CMPQ CX, $8
	JL   dxdone
	VMOVUPS (BX), Y1
	VPCMPEQD Y15, Y1, Y1
	VPANDN (DX), Y1, Y0
	VMOVUPS (SI), Y2
	VFMADD213PS Y14, Y13, Y2
	VFMADD231PS Y0, Y12, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  dxrelu
dxdone:
	VZEROUPPER
	RET

// func copyRows16AVX2(dst, src *float32, offs *int, n, c int)
// For q < n: dst[16q : 16q+16] = src[offs[q]+c : offs[q]+c+16], a panel
// of an im2col matrix whose 16 pixels are contiguous in every row.
TEXT ·copyRows16AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ c+32(FP), AX
	LEAQ (SI)(AX*4), SI
	TESTQ CX, CX
	JZ   r16done
r16loop:
	MOVQ (BX), DX
	VMOVUPS (SI)(DX*4), Y0
	VMOVUPS 32(SI)(DX*4), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $8, BX
	ADDQ $64, DI
	DECQ CX
	JNZ  r16loop
r16done:
	VZEROUPPER
	RET

// func copyRows8x2AVX2(dst, src *float32, offs *int, n, c0, c1 int)
// As copyRows16AVX2 for a panel of two runs of 8 pixels, at c0 and c1.
TEXT ·copyRows8x2AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ c0+32(FP), AX
	MOVQ c1+40(FP), R8
	SUBQ AX, R8
	SHLQ $2, R8
	LEAQ (SI)(AX*4), SI
	TESTQ CX, CX
	JZ   r8done
r8loop:
	MOVQ (BX), DX
	LEAQ (SI)(DX*4), R9
	VMOVUPS (R9), Y0
	VMOVUPS (R9)(R8*1), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $8, BX
	ADDQ $64, DI
	DECQ CX
	JNZ  r8loop
r8done:
	VZEROUPPER
	RET

// func transpose8AVX2(dst, src *float32, offs *int)
// For i, j < 8: dst[16i + j] = src[offs[j] + i]: eight rows of eight
// contiguous values (eight taps of an im2col matrix over eight pixels in a
// row) written as eight panel rows, the standard unpack/shuffle/permute
// 8x8 transpose.
TEXT ·transpose8AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), BX
	MOVQ 0(BX), AX
	VMOVUPS (SI)(AX*4), Y0
	MOVQ 8(BX), AX
	VMOVUPS (SI)(AX*4), Y1
	MOVQ 16(BX), AX
	VMOVUPS (SI)(AX*4), Y2
	MOVQ 24(BX), AX
	VMOVUPS (SI)(AX*4), Y3
	MOVQ 32(BX), AX
	VMOVUPS (SI)(AX*4), Y4
	MOVQ 40(BX), AX
	VMOVUPS (SI)(AX*4), Y5
	MOVQ 48(BX), AX
	VMOVUPS (SI)(AX*4), Y6
	MOVQ 56(BX), AX
	VMOVUPS (SI)(AX*4), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 64(DI)
	VMOVUPS Y10, 128(DI)
	VMOVUPS Y11, 192(DI)
	VMOVUPS Y12, 256(DI)
	VMOVUPS Y13, 320(DI)
	VMOVUPS Y14, 384(DI)
	VMOVUPS Y15, 448(DI)
	VZEROUPPER
	RET
