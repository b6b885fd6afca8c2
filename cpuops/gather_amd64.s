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

// LOAD4(r, zr, xr, zo, xo) loads taps r, r+4, r+8 and r+12 (their
// offsets at 8r(BX), 8(r+4)(BX), ...) into the four 128-bit lanes of zr,
// pixels 0-3, and of zo, pixels 4-7 (xr and xo: their low lanes).
#define LOAD4(r, zr, xr, zo, xo) \
	MOVQ (8*r)(BX), AX \
	VMOVUPS (SI)(AX*4), xr \
	VMOVUPS 16(SI)(AX*4), xo \
	MOVQ (8*(r+4))(BX), AX \
	VINSERTF32X4 $1, (SI)(AX*4), zr, zr \
	VINSERTF32X4 $1, 16(SI)(AX*4), zo, zo \
	MOVQ (8*(r+8))(BX), AX \
	VINSERTF32X4 $2, (SI)(AX*4), zr, zr \
	VINSERTF32X4 $2, 16(SI)(AX*4), zo, zo \
	MOVQ (8*(r+12))(BX), AX \
	VINSERTF32X4 $3, (SI)(AX*4), zr, zr \
	VINSERTF32X4 $3, 16(SI)(AX*4), zo, zo

// T4x4(a, b, c, d, o0, o1, o2, o3): in each 128-bit lane, the 4x4
// transpose of rows a..d into o0..o3 (Z8-Z11 scratch).
#define T4x4(a, b, c, d, o0, o1, o2, o3) \
	VUNPCKLPS b, a, Z8 \
	VUNPCKHPS b, a, Z9 \
	VUNPCKLPS d, c, Z10 \
	VUNPCKHPS d, c, Z11 \
	VSHUFPS $0x44, Z10, Z8, o0 \
	VSHUFPS $0xEE, Z10, Z8, o1 \
	VSHUFPS $0x44, Z11, Z9, o2 \
	VSHUFPS $0xEE, Z11, Z9, o3

// func transpose16x8AVX512(dst, src *float32, offs *int)
// For i < 8, j < 16: dst[16i + j] = src[offs[j] + i]: sixteen taps of an
// im2col matrix over eight pixels in a row, written as eight 16-wide
// panel rows. Lane L of Zr holds tap r+4L (r < 4), pixels 0-3 (Zr) or 4-7
// (Z(r+4)), so a 4x4 transpose within the lanes leaves pixel i's 16 taps
// in order: no cross-lane step, against transpose8AVX2's two 8x8
// transposes with one each.
TEXT ·transpose16x8AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), BX
	LOAD4(0, Z0, X0, Z4, X4)
	LOAD4(1, Z1, X1, Z5, X5)
	LOAD4(2, Z2, X2, Z6, X6)
	LOAD4(3, Z3, X3, Z7, X7)
	T4x4(Z0, Z1, Z2, Z3, Z12, Z13, Z14, Z15)
	T4x4(Z4, Z5, Z6, Z7, Z16, Z17, Z18, Z19)
	VMOVUPS Z12, 0(DI)
	VMOVUPS Z13, 64(DI)
	VMOVUPS Z14, 128(DI)
	VMOVUPS Z15, 192(DI)
	VMOVUPS Z16, 256(DI)
	VMOVUPS Z17, 320(DI)
	VMOVUPS Z18, 384(DI)
	VMOVUPS Z19, 448(DI)
	VZEROUPPER
	RET

// func copyRows16s2AVX512(dst, src *float32, offs *int, n, c0, c1 int, idx *int32)
// For q < n: dst[16q+i] = src[offs[q]+c0+2i] and dst[16q+8+i] =
// src[offs[q]+c1+2i] for i < 8, a panel of an im2col matrix whose 16
// pixels are two runs of 8 at stride 2 (one run of 16 where c1 = c0+16):
// each half's 15 floats by a masked load (no float past the last one
// used is read), the even ones picked by VPERMT2PS (idx: 0, 2, …, 30).
TEXT ·copyRows16s2AVX512(SB), NOSPLIT, $0-56
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), SI
	MOVQ      offs+16(FP), BX
	MOVQ      n+24(FP), CX
	MOVQ      c0+32(FP), R8
	MOVQ      c1+40(FP), R9
	MOVQ      idx+48(FP), AX
	VMOVDQU32 (AX), Z2
	MOVL      $0x7fff, DX
	KMOVW     DX, K1
	LEAQ      (SI)(R8*4), R8
	LEAQ      (SI)(R9*4), R9
	TESTQ     CX, CX
	JZ        s2done

s2loop:
	MOVQ      (BX), DX
	VMOVUPS.Z (R8)(DX*4), K1, Z0
	VMOVUPS.Z (R9)(DX*4), K1, Z1
	VPERMT2PS Z1, Z2, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $8, BX
	ADDQ      $64, DI
	DECQ      CX
	JNZ       s2loop

s2done:
	VZEROUPPER
	RET
