#include "textflag.h"

// LANEMASKS, at the top of a loop over CX tiles 16 a step: K1 has the
// step's m = min(CX, 16) low bits set, K2 and K3 the first and second 16
// of 2m (the floats of m tiles' column pairs); DX and R11 are scratch.
#define LANEMASKS \
	MOVQ    $16, DX; \
	CMPQ    CX, DX; \
	CMOVQLT CX, DX; \
	MOVQ    CX, R11; \
	MOVQ    DX, CX; \
	MOVQ    $1, DX; \
	SHLQ    CX, DX; \
	DECQ    DX; \
	KMOVW   DX, K1; \
	ADDQ    CX, CX; \
	MOVQ    $1, DX; \
	SHLQ    CX, DX; \
	DECQ    DX; \
	KMOVW   DX, K2; \
	SHRQ    $16, DX; \
	KMOVW   DX, K3; \
	MOVQ    R11, CX

// The Winograd F(2x2, 3x3) transforms (winograd.go), 16 tiles a step,
// lane i the tile i; the same adds in the same order as winoInGo and
// winoOutGo, so the same bits. idx is winoLanes: the even floats of two
// registers (0, 2, …, 30), the odd ones (1, 3, …, 31), and the
// interleave of two registers' low and high halves (0, 16, 1, 17, …).

// func winoInAVX512(dst *float32, stride int, src *float32, wp, n, rows int, idx *int32)
// For the rows strips of 4 rows of a padded plane at src (rows wp floats
// apart, strip r at src + 2r·wp) and tile t < n of a strip (columns 2t …
// 2t+3): dst[ξ·stride + r·n + t] = (Bᵀ d B)[ξ/4][ξ%4].
TEXT ·winoInAVX512(SB), NOSPLIT, $0-56
	MOVQ      dst+0(FP), R13
	MOVQ      stride+8(FP), R8
	SHLQ      $2, R8
	MOVQ      wp+24(FP), R9
	SHLQ      $2, R9
	MOVQ      n+32(FP), R10
	MOVQ      rows+40(FP), R12
	MOVQ      idx+48(FP), AX
	VMOVDQU32 (AX), Z30      // even
	VMOVDQU32 64(AX), Z31    // odd
	MOVQ      src+16(FP), AX
	TESTQ     R10, R10
	JLE       indone
	TESTQ     R12, R12
	JLE       indone

instrip:
	MOVQ R13, DI
	MOVQ AX, SI
	MOVQ R10, CX

inloop:
	LANEMASKS

	// Row r of the strip into Z(4r) … Z(4r+3): e0 = d0−d2, e1 = d1+d2,
	// e2 = d2−d1, e3 = d1−d3, dj the floats 2t+j (Z20, Z16, Z21, Z18).
#define ROW(off, E0, E1, E2, E3) \
	VMOVUPS.Z off(SI), K2, Z16; \
	VMOVUPS.Z off+64(SI), K3, Z17; \
	VMOVUPS.Z off+8(SI), K2, Z18; \
	VMOVUPS.Z off+72(SI), K3, Z19; \
	VMOVAPS   Z16, Z20; \
	VPERMT2PS Z17, Z30, Z20; \
	VPERMT2PS Z17, Z31, Z16; \
	VMOVAPS   Z18, Z21; \
	VPERMT2PS Z19, Z30, Z21; \
	VPERMT2PS Z19, Z31, Z18; \
	VSUBPS    Z21, Z20, E0; \
	VADDPS    Z21, Z16, E1; \
	VSUBPS    Z16, Z21, E2; \
	VSUBPS    Z18, Z16, E3

	ROW(0, Z0, Z1, Z2, Z3)
	ADDQ R9, SI
	ROW(0, Z4, Z5, Z6, Z7)
	ADDQ R9, SI
	ROW(0, Z8, Z9, Z10, Z11)
	ADDQ R9, SI
	ROW(0, Z12, Z13, Z14, Z15)
	SUBQ R9, SI
	SUBQ R9, SI
	SUBQ R9, SI

	// U0j = e0j−e2j, U1j = e1j+e2j, U2j = e2j−e1j, U3j = e1j−e3j.
	MOVQ DI, DX
#define COL(E0, E1, E2, E3) \
	VSUBPS E2, E0, Z16; \
	VADDPS E2, E1, Z17; \
	VSUBPS E1, E2, Z18; \
	VSUBPS E3, E1, Z19

	// Z16 … Z19 (U0j … U3j) to ξ = j, 4+j, 8+j, 12+j: DX at ξ = j, TMP
	// a scratch register.
#define USTORE(TMP) \
	VMOVUPS Z16, K1, (DX); \
	VMOVUPS Z17, K1, (DX)(R8*4); \
	VMOVUPS Z18, K1, (DX)(R8*8); \
	LEAQ    (DX)(R8*8), TMP; \
	VMOVUPS Z19, K1, (TMP)(R8*4)

	COL(Z0, Z4, Z8, Z12)
	USTORE(BX)
	ADDQ R8, DX
	COL(Z1, Z5, Z9, Z13)
	USTORE(BX)
	ADDQ R8, DX
	COL(Z2, Z6, Z10, Z14)
	USTORE(BX)
	ADDQ R8, DX
	COL(Z3, Z7, Z11, Z15)
	USTORE(BX)

	ADDQ $64, DI
	ADDQ $128, SI
	SUBQ $16, CX
	JG   inloop

	LEAQ (R13)(R10*4), R13
	LEAQ (AX)(R9*2), AX
	DECQ R12
	JNZ  instrip

indone:
	VZEROUPPER
	RET

// func winoOutAVX512(dst *float32, w int, src *float32, stride, n, rows int, idx *int32)
// For tile t < n of strip s < rows: with m[ξ] = src[ξ·stride + s·n + t],
// Y = Aᵀ m A (2x2) into dst[(2s+r)·w + 2t + c].
TEXT ·winoOutAVX512(SB), NOSPLIT, $0-56
	MOVQ      dst+0(FP), R13
	MOVQ      w+8(FP), R9
	SHLQ      $2, R9
	MOVQ      stride+24(FP), R8
	SHLQ      $2, R8
	MOVQ      n+32(FP), R10
	MOVQ      rows+40(FP), R12
	MOVQ      idx+48(FP), AX
	VMOVDQU32 128(AX), Z30 // interleave, low halves
	VMOVDQU32 192(AX), Z31 // high halves
	MOVQ      src+16(FP), AX
	TESTQ     R10, R10
	JLE       outdone
	TESTQ     R12, R12
	JLE       outdone

outstrip:
	MOVQ R13, DI
	MOVQ AX, SI
	MOVQ R10, CX

outloop:
	LANEMASKS

	// Row r of m (m[4r … 4r+3]) into f0 = (m0+m1)+m2, f1 = (m1−m2)−m3.
#define MROW(F0, F1) \
	VMOVUPS.Z (DX), K1, Z16; \
	VMOVUPS.Z (DX)(R8*1), K1, Z17; \
	VMOVUPS.Z (DX)(R8*2), K1, Z18; \
	LEAQ      (DX)(R8*2), BX; \
	VMOVUPS.Z (BX)(R8*1), K1, Z19; \
	VADDPS    Z17, Z16, F0; \
	VADDPS    Z18, F0, F0; \
	VSUBPS    Z18, Z17, F1; \
	VSUBPS    Z19, F1, F1; \
	LEAQ      (DX)(R8*4), DX

	MOVQ SI, DX
	MROW(Z0, Z1)
	MROW(Z2, Z3)
	MROW(Z4, Z5)
	MROW(Z6, Z7)

	// Y0j = (f0j+f1j)+f2j, Y1j = (f1j−f2j)−f3j; each output row the
	// interleave of its Yr0 and Yr1.
	VADDPS    Z2, Z0, Z8
	VADDPS    Z4, Z8, Z8   // Y00
	VADDPS    Z3, Z1, Z9
	VADDPS    Z5, Z9, Z9   // Y01
	VSUBPS    Z4, Z2, Z10
	VSUBPS    Z6, Z10, Z10 // Y10
	VSUBPS    Z5, Z3, Z11
	VSUBPS    Z7, Z11, Z11 // Y11
	VMOVAPS   Z8, Z12
	VPERMT2PS Z9, Z30, Z12
	VPERMT2PS Z9, Z31, Z8
	VMOVUPS   Z12, K2, (DI)
	VMOVUPS   Z8, K3, 64(DI)
	VMOVAPS   Z10, Z13
	VPERMT2PS Z11, Z30, Z13
	VPERMT2PS Z11, Z31, Z10
	VMOVUPS   Z13, K2, (DI)(R9*1)
	VMOVUPS   Z10, K3, 64(DI)(R9*1)

	ADDQ $128, DI
	ADDQ $64, SI
	SUBQ $16, CX
	JG   outloop

	LEAQ (R13)(R9*2), R13
	LEAQ (AX)(R10*4), AX
	DECQ R12
	JNZ  outstrip

outdone:
	VZEROUPPER
	RET

// func winoWeightsAVX512(v *float32, stride int, w *float32, n, ls, flip int, idx *int32)
// For lane ci < n, with g the 3x3 kernel w[ci·ls:][:9] (turned by 180°,
// g[k] = w[ci·ls + 8 − k], where flip != 0: BackwardData's weights read
// where they lie): v[ξ·stride+ci] = (G g Gᵀ)[ξ/4][ξ%4]; idx is
// winoLanes (its 0 … 15 at byte 256). The same operations in the same
// order as winoWeightsGo.
TEXT ·winoWeightsAVX512(SB), NOSPLIT, $0-56
	MOVQ         v+0(FP), DI
	MOVQ         stride+8(FP), R8
	SHLQ         $2, R8
	MOVQ         w+16(FP), SI
	MOVQ         n+24(FP), CX
	MOVQ         ls+32(FP), DX
	MOVQ         flip+40(FP), R13
	MOVQ         idx+48(FP), AX
	VMOVDQU32    256(AX), Z31
	VPBROADCASTD DX, Z30
	VPMULLD      Z30, Z31, Z31 // lane i: i·ls
	SHLQ         $6, DX        // 16 lanes on: 16·ls floats
	MOVQ         DX, R12
	MOVL         $0x3f000000, DX // 0.5
	VPBROADCASTD DX, Z30
	LEAQ         (R8)(R8*2), R10
	TESTQ        CX, CX
	JLE          wdone

wloop:
	LANEMASKS

#define GATHER(off, Z) \
	KMOVW      K1, K2; \
	VXORPS     Z, Z, Z; \
	VGATHERDPS off(SI)(Z31*4), K2, Z

	GATHER(0, Z0)
	GATHER(4, Z1)
	GATHER(8, Z2)
	GATHER(12, Z3)
	GATHER(16, Z4)
	GATHER(20, Z5)
	GATHER(24, Z6)
	GATHER(28, Z7)
	GATHER(32, Z8)
	TESTQ R13, R13
	JZ    wgcols
	VMOVAPS Z0, Z9 // turned by 180°: g[k] <-> g[8−k]
	VMOVAPS Z8, Z0
	VMOVAPS Z9, Z8
	VMOVAPS Z1, Z9
	VMOVAPS Z7, Z1
	VMOVAPS Z9, Z7
	VMOVAPS Z2, Z9
	VMOVAPS Z6, Z2
	VMOVAPS Z9, Z6
	VMOVAPS Z3, Z9
	VMOVAPS Z5, Z3
	VMOVAPS Z9, Z5

wgcols:

	// G times (a, b, c): a, ½((a+b)+c), ½((a−b)+c), c.
#define GCOL(A, B, C, T1, T2) \
	VADDPS A, B, T1; \
	VADDPS C, T1, T1; \
	VMULPS Z30, T1, T1; \
	VSUBPS B, A, T2; \
	VADDPS C, T2, T2; \
	VMULPS Z30, T2, T2

	// Columns j of g (rows 0, 1, 2: Zj, Z(3+j), Z(6+j)): t0 = row 0,
	// t1, t2 into Z9 … Z14, t3 = row 2.
	GCOL(Z0, Z3, Z6, Z9, Z10)
	GCOL(Z1, Z4, Z7, Z11, Z12)
	GCOL(Z2, Z5, Z8, Z13, Z14)

	// Row r of G g (t_r0, t_r1, t_r2) times Gᵀ into v[4r … 4r+3].
#define GROW(A, B, C) \
	GCOL(A, B, C, Z15, Z16); \
	VMOVUPS A, K1, (DX); \
	VMOVUPS Z15, K1, (DX)(R8*1); \
	VMOVUPS Z16, K1, (DX)(R8*2); \
	VMOVUPS C, K1, (DX)(R10*1); \
	LEAQ    (DX)(R8*4), DX

	MOVQ DI, DX
	GROW(Z0, Z1, Z2)
	GROW(Z9, Z11, Z13)
	GROW(Z10, Z12, Z14)
	GROW(Z6, Z7, Z8)

	ADDQ $64, DI
	ADDQ R12, SI
	SUBQ $16, CX
	JG   wloop

wdone:
	VZEROUPPER
	RET

// func winoDyAVX512(dst *float32, stride int, src *float32, plane, w, n, rows, cnt int, idx *int32)
// The filter gradient's transform of dy, 16 channels a lane each: for
// the cnt (<= 16) planes at src (plane floats apart, rows w floats long)
// and their 2x2 tile t = s·n + u (strip s < rows, tile u < n, at rows 2s,
// 2s+1 and columns 2u, 2u+1): dst[ξ·stride + 16t + lane] = (A dy Aᵀ)[ξ/4][ξ%4],
// A = [1 0; 1 1; 1 −1; 0 −1]; lanes past cnt 0. idx is winoLanes, whose
// entries at bytes 256 … 319 are 0 … 15.
TEXT ·winoDyAVX512(SB), NOSPLIT, $0-72
	MOVQ         dst+0(FP), DI
	MOVQ         stride+8(FP), R8
	SHLQ         $2, R8
	MOVQ         src+16(FP), SI
	MOVQ         w+32(FP), R9
	SHLQ         $2, R9
	MOVQ         n+40(FP), R10
	MOVQ         rows+48(FP), R12
	MOVQ         cnt+56(FP), CX
	MOVQ         idx+64(FP), AX
	VMOVDQU32    256(AX), Z31 // lane i: i
	MOVQ         plane+24(FP), DX
	VPBROADCASTD DX, Z30
	VPMULLD      Z30, Z31, Z31 // lane i: i·plane
	MOVQ         $1, DX
	SHLQ         CX, DX
	DECQ         DX
	KMOVW        DX, K1
	MOVL         $0x80000000, DX
	VPBROADCASTD DX, Z29 // the sign bit
	TESTQ        R10, R10
	JLE          dydone
	TESTQ        R12, R12
	JLE          dydone

dystrip:
	MOVQ SI, R13 // the strip's first tile
	MOVQ R10, R11

dytile:
#define DYGATHER(off, Z) \
	KMOVW      K1, K2; \
	VXORPS     Z, Z, Z; \
	VGATHERDPS off(R13)(Z31*4), K2, Z

	DYGATHER(0, Z0)  // a = dy[2s][2u]
	DYGATHER(4, Z1)  // b = dy[2s][2u+1]
	LEAQ (R13)(R9*1), BX
	KMOVW      K1, K2
	VXORPS     Z2, Z2, Z2
	VGATHERDPS (BX)(Z31*4), K2, Z2  // c = dy[2s+1][2u]
	KMOVW      K1, K2
	VXORPS     Z3, Z3, Z3
	VGATHERDPS 4(BX)(Z31*4), K2, Z3 // d = dy[2s+1][2u+1]

	// Rows: (x0, x1) -> (x0, x0+x1, x0−x1, −x1).
	VADDPS Z1, Z0, Z4 // a+b
	VSUBPS Z1, Z0, Z5 // a−b
	VXORPS Z29, Z1, Z6 // −b
	VADDPS Z3, Z2, Z7 // c+d
	VSUBPS Z3, Z2, Z8 // c−d
	VXORPS Z29, Z3, Z9 // −d

	// Columns j: (r0j, r0j+r1j, r0j−r1j, −r1j) into ξ = 4i+j (rows r0j:
	// Z0, Z4, Z5, Z6; r1j: Z2, Z7, Z8, Z9).
	// DX walks ξ by one stride: the column j's four are 4 strides apart.
#define DYCOL(R0, R1) \
	VMOVUPS R0, (DX); \
	VADDPS  R1, R0, Z10; \
	LEAQ    (DX)(R8*4), BX; \
	VMOVUPS Z10, (BX); \
	VSUBPS  R1, R0, Z11; \
	VMOVUPS Z11, (DX)(R8*8); \
	VXORPS  Z29, R1, Z12; \
	LEAQ    (BX)(R8*8), BX; \
	VMOVUPS Z12, (BX)

	MOVQ DI, DX
	DYCOL(Z0, Z2)
	ADDQ R8, DX
	DYCOL(Z4, Z7)
	ADDQ R8, DX
	DYCOL(Z5, Z8)
	ADDQ R8, DX
	DYCOL(Z6, Z9)

	ADDQ $64, DI  // the next tile's row of the panel: NR = 16 floats
	ADDQ $8, R13  // 2 columns on
	DECQ R11
	JNZ  dytile

	LEAQ (SI)(R9*2), SI // 2 rows on
	DECQ R12
	JNZ  dystrip

dydone:
	VZEROUPPER
	RET

// func winoDwAVX512(dw *float32, dwStride int, src *float32, stride, cstride, n, cnt int, idx *int32)
// The filter gradient's inverse transform for cnt (<= 16) output
// channels, one a lane: for input channels c < n, with X[ξ] =
// src[ξ·stride + c·cstride + lane], the 3x3 Gᵀ X G into
// dw[lane·dwStride + 9c + 3k + l], Gᵀ = [1 ½ ½ 0; 0 ½ −½ 0; 0 ½ ½ 1]; per
// row of X (or of Gᵀ X): h = ½(x1+x2), y0 = x0+h, y1 = ½(x1−x2), y2 =
// h+x3. Each lane's 9 floats a channel follow the last (its writes stay
// in a few lines). idx is winoLanes (its 0 … 15 at byte 256).
TEXT ·winoDwAVX512(SB), NOSPLIT, $0-64
	MOVQ         dw+0(FP), DI
	MOVQ         dwStride+8(FP), DX
	MOVQ         src+16(FP), SI
	MOVQ         stride+24(FP), R8
	SHLQ         $2, R8
	MOVQ         cstride+32(FP), R9
	SHLQ         $2, R9
	MOVQ         n+40(FP), R10
	MOVQ         cnt+48(FP), CX
	MOVQ         idx+56(FP), AX
	VMOVDQU32    256(AX), Z31
	VPBROADCASTD DX, Z30
	VPMULLD      Z30, Z31, Z31 // lane i: i·dwStride
	MOVQ         $1, DX
	SHLQ         CX, DX
	DECQ         DX
	KMOVW        DX, K1
	MOVL         $0x3f000000, DX
	VPBROADCASTD DX, Z30 // ½
	TESTQ        R10, R10
	JLE          dwdone

dwloop:
	// The rows of X: Z(4i) … Z(4i+3) = X[4i+j].
	MOVQ SI, DX
#define XLOAD(X) \
	VMOVUPS.Z (DX), K1, X; \
	ADDQ      R8, DX
	XLOAD(Z0)
	XLOAD(Z1)
	XLOAD(Z2)
	XLOAD(Z3)
	XLOAD(Z4)
	XLOAD(Z5)
	XLOAD(Z6)
	XLOAD(Z7)
	XLOAD(Z8)
	XLOAD(Z9)
	XLOAD(Z10)
	XLOAD(Z11)
	XLOAD(Z12)
	XLOAD(Z13)
	XLOAD(Z14)
	XLOAD(Z15)

	// (y0, y1, y2) = Gᵀ (x0, x1, x2, x3), into Y0, Y1, Y2.
#define GT(X0, X1, X2, X3, Y0, Y1, Y2) \
	VADDPS X2, X1, Z28; \
	VMULPS Z30, Z28, Z28; \
	VADDPS Z28, X0, Y0; \
	VSUBPS X2, X1, Y1; \
	VMULPS Z30, Y1, Y1; \
	VADDPS X3, Z28, Y2

	// Gᵀ X: rows k of R, each over the columns j (Z16 … Z27: R[k][j] at Z(16+4k+j)).
	GT(Z0, Z4, Z8, Z12, Z16, Z20, Z24)
	GT(Z1, Z5, Z9, Z13, Z17, Z21, Z25)
	GT(Z2, Z6, Z10, Z14, Z18, Z22, Z26)
	GT(Z3, Z7, Z11, Z15, Z19, Z23, Z27)
	// (Gᵀ X) G: row k's (R[k][0..3]) -> dw[3k+l], scattered.
#define SCATTER(off, Z) \
	KMOVW       K1, K2; \
	VSCATTERDPS Z, K2, off(DI)(Z31*4)
	GT(Z16, Z17, Z18, Z19, Z0, Z1, Z2)
	SCATTER(0, Z0)
	SCATTER(4, Z1)
	SCATTER(8, Z2)
	GT(Z20, Z21, Z22, Z23, Z0, Z1, Z2)
	SCATTER(12, Z0)
	SCATTER(16, Z1)
	SCATTER(20, Z2)
	GT(Z24, Z25, Z26, Z27, Z0, Z1, Z2)
	SCATTER(24, Z0)
	SCATTER(28, Z1)
	SCATTER(32, Z2)

	ADDQ $36, DI
	ADDQ R9, SI
	DECQ R10
	JNZ  dwloop

dwdone:
	VZEROUPPER
	RET

// func winoInGAVX512(dst *float32, stride int, src *float32, offs *int32, wp, n int)
// winoIn for tiles anywhere: tile t < n reads src[offs[t] + r·wp + c]
// (r, c < 4), gathered, into dst[ξ·stride + t]: for planes narrower than
// 32, whose strips fill only W/2 of winoInAVX512's 16 lanes. The same
// adds in the same order, so the same bits.
TEXT ·winoInGAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ offs+24(FP), BX
	MOVQ wp+32(FP), R9
	MOVQ n+40(FP), CX
	VPBROADCASTD R9, Z30 // wp
	TESTQ CX, CX
	JLE   gdone

gloop:
	LANEMASKS

	VMOVDQU32.Z (BX), K1, Z31 // the tiles' origins, row 0

	// Row r: d0 … d3 gathered at origin + r·wp + c, then e0 = d0−d2,
	// e1 = d1+d2, e2 = d2−d1, e3 = d1−d3 into E0 … E3.
#define GROW4(E0, E1, E2, E3) \
	KMOVW      K1, K2; \
	VXORPS     Z16, Z16, Z16; \
	VGATHERDPS (SI)(Z31*4), K2, Z16; \
	KMOVW      K1, K2; \
	VXORPS     Z17, Z17, Z17; \
	VGATHERDPS 4(SI)(Z31*4), K2, Z17; \
	KMOVW      K1, K2; \
	VXORPS     Z18, Z18, Z18; \
	VGATHERDPS 8(SI)(Z31*4), K2, Z18; \
	KMOVW      K1, K2; \
	VXORPS     Z19, Z19, Z19; \
	VGATHERDPS 12(SI)(Z31*4), K2, Z19; \
	VSUBPS     Z18, Z16, E0; \
	VADDPS     Z18, Z17, E1; \
	VSUBPS     Z17, Z18, E2; \
	VSUBPS     Z19, Z17, E3; \
	VPADDD     Z30, Z31, Z31

	GROW4(Z0, Z1, Z2, Z3)
	GROW4(Z4, Z5, Z6, Z7)
	GROW4(Z8, Z9, Z10, Z11)
	GROW4(Z12, Z13, Z14, Z15)

	MOVQ DI, DX
	COL(Z0, Z4, Z8, Z12)
	USTORE(R10)
	ADDQ R8, DX
	COL(Z1, Z5, Z9, Z13)
	USTORE(R10)
	ADDQ R8, DX
	COL(Z2, Z6, Z10, Z14)
	USTORE(R10)
	ADDQ R8, DX
	COL(Z3, Z7, Z11, Z15)
	USTORE(R10)

	ADDQ $64, DI
	ADDQ $64, BX
	SUBQ $16, CX
	JG   gloop

gdone:
	VZEROUPPER
	RET

// func winoOutSAVX512(dst *float32, w int, src *float32, stride int, offs *int32, n int)
// winoOut for tiles anywhere: tile t < n, with m[ξ] = src[ξ·stride + t],
// gets Aᵀ m A (2x2) scattered to dst[offs[t] + r·w + c]: for planes
// narrower than 32. The same adds in the same order, so the same bits.
TEXT ·winoOutSAVX512(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	MOVQ         w+8(FP), R9
	MOVQ         src+16(FP), SI
	MOVQ         stride+24(FP), R8
	SHLQ         $2, R8
	MOVQ         offs+32(FP), R10
	MOVQ         n+40(FP), CX
	VPBROADCASTD R9, Z30 // w
	TESTQ        CX, CX
	JLE          sdone

sloop:
	LANEMASKS

	VMOVDQU32.Z (R10), K1, Z31 // the tiles' origins
	VPADDD      Z30, Z31, Z29 // and one row on

	MOVQ SI, DX
	MROW(Z0, Z1)
	MROW(Z2, Z3)
	MROW(Z4, Z5)
	MROW(Z6, Z7)
	VADDPS Z2, Z0, Z8
	VADDPS Z4, Z8, Z8   // Y00
	VADDPS Z3, Z1, Z9
	VADDPS Z5, Z9, Z9   // Y01
	VSUBPS Z4, Z2, Z10
	VSUBPS Z6, Z10, Z10 // Y10
	VSUBPS Z5, Z3, Z11
	VSUBPS Z7, Z11, Z11 // Y11

	KMOVW       K1, K2
	VSCATTERDPS Z8, K2, (DI)(Z31*4)
	KMOVW       K1, K2
	VSCATTERDPS Z9, K2, 4(DI)(Z31*4)
	KMOVW       K1, K2
	VSCATTERDPS Z10, K2, (DI)(Z29*4)
	KMOVW       K1, K2
	VSCATTERDPS Z11, K2, 4(DI)(Z29*4)

	ADDQ $64, SI
	ADDQ $64, R10
	SUBQ $16, CX
	JG   sloop

sdone:
	VZEROUPPER
	RET
