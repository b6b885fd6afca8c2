#include "textflag.h"

// func padRowsAVX512(dst, src *float32, rows, w, wp int, tail, gap uint16)
// For r < rows: dst[r·wp : r·wp+w] = src[r·w : r·w+w], and the 2P floats
// after each such row of dst (the right pad of this row, the left pad of
// the next) set to 0, P the bits set in gap / 2: the inner rows of a
// padded plane. w/16 full vectors a row, then the w%16 floats left in the
// lanes of tail (masked, so nothing past a row is read or written).
TEXT ·padRowsAVX512(SB), NOSPLIT, $0-44
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    rows+16(FP), CX
	MOVQ    w+24(FP), R8
	MOVQ    wp+32(FP), R9
	MOVWLZX tail+40(FP), AX
	KMOVW   AX, K1
	MOVWLZX gap+42(FP), AX
	KMOVW   AX, K2
	SHLQ    $2, R9             // dst row stride in bytes
	MOVQ    R8, R10
	SHRQ    $4, R10            // full vectors a row
	SHLQ    $2, R8             // src row stride in bytes: the gap's offset
	VPXORD  Z1, Z1, Z1
	TESTQ   CX, CX
	JZ      pdone

prow:
	XORQ  BX, BX
	MOVQ  R10, DX
	TESTQ DX, DX
	JZ    ptail

pvec:
	VMOVUPS (SI)(BX*1), Z0
	VMOVUPS Z0, (DI)(BX*1)
	ADDQ    $64, BX
	DECQ    DX
	JNZ     pvec

ptail:
	VMOVUPS (SI)(BX*1), K1, Z0
	VMOVUPS Z0, K1, (DI)(BX*1)
	VMOVUPS Z1, K2, (DI)(R8*1)
	ADDQ    R8, SI
	ADDQ    R9, DI
	DECQ    CX
	JNZ     prow

pdone:
	VZEROUPPER
	RET

// stride2Idx: the dword indices of VPERMPS that put float i of a vector
// in lanes 2i and 2i+1 (i < 8).
DATA stride2Idx<>+0(SB)/4, $0
DATA stride2Idx<>+4(SB)/4, $0
DATA stride2Idx<>+8(SB)/4, $1
DATA stride2Idx<>+12(SB)/4, $1
DATA stride2Idx<>+16(SB)/4, $2
DATA stride2Idx<>+20(SB)/4, $2
DATA stride2Idx<>+24(SB)/4, $3
DATA stride2Idx<>+28(SB)/4, $3
DATA stride2Idx<>+32(SB)/4, $4
DATA stride2Idx<>+36(SB)/4, $4
DATA stride2Idx<>+40(SB)/4, $5
DATA stride2Idx<>+44(SB)/4, $5
DATA stride2Idx<>+48(SB)/4, $6
DATA stride2Idx<>+52(SB)/4, $6
DATA stride2Idx<>+56(SB)/4, $7
DATA stride2Idx<>+60(SB)/4, $7
GLOBL stride2Idx<>(SB), RODATA|NOPTR, $64

// func addStride2RowsAVX512(dst, src *float32, w, rows, ld, srcLd int, tail uint8)
// For r < rows and i < w: dst[r·ld + 2i] += src[r·srcLd + i]: col2im's
// rows at stride 2, ld and srcLd the strides in floats between dst's and
// src's rows. Eight floats of src at a time go to the even lanes of one
// vector (VPERMPS), and the even lanes of 16 floats of dst are loaded,
// added to and stored under the mask 0x5555, so the odd floats are not
// touched; the last w%8 floats of a row under tail (its low w%8 bits set)
// and the even lanes below 2·(w%8), so that nothing past a row's
// dst[2w−2] or src[w−1] is read or written.
TEXT ·addStride2RowsAVX512(SB), NOSPLIT, $0-49
	MOVQ      dst+0(FP), DI
	MOVQ      src+8(FP), R12
	MOVQ      w+16(FP), R8
	MOVQ      rows+24(FP), R9
	MOVQ      ld+32(FP), R10
	SHLQ      $2, R10             // dst's row stride in bytes
	MOVQ      srcLd+40(FP), R13
	SHLQ      $2, R13             // src's row stride in bytes
	MOVL      $0x5555, AX
	KMOVW     AX, K1
	MOVBLZX   tail+48(FP), AX
	KMOVW     AX, K2              // the tail's floats of src
	MOVQ      R8, CX
	ANDQ      $7, CX
	SHLQ      $1, CX
	MOVL      $1, DX
	SHLL      CX, DX
	SUBL      $1, DX              // the low 2·(w%8) bits
	ANDL      $0x5555, DX
	KMOVW     DX, K3              // the tail's even lanes of dst
	VMOVDQU32 stride2Idx<>(SB), Z2
	TESTQ     R9, R9
	JZ        s2done

s2row:
	MOVQ      DI, R11
	MOVQ      R12, SI
	MOVQ      R8, CX

s2loop:
	CMPQ      CX, $8
	JL        s2tail
	VMOVUPS   (SI), Y0
	VPERMPS   Z0, Z2, Z0
	VMOVUPS.Z (R11), K1, Z1
	VADDPS    Z0, Z1, K1, Z1
	VMOVUPS   Z1, K1, (R11)
	ADDQ      $32, SI
	ADDQ      $64, R11
	SUBQ      $8, CX
	JMP       s2loop

s2tail:
	TESTQ     CX, CX
	JZ        s2next
	VMOVUPS.Z (SI), K2, Z0
	VPERMPS   Z0, Z2, Z0
	VMOVUPS.Z (R11), K3, Z1
	VADDPS    Z0, Z1, K3, Z1
	VMOVUPS   Z1, K3, (R11)

s2next:
	ADDQ      R10, DI
	ADDQ      R13, R12
	DECQ      R9
	JNZ       s2row

s2done:
	VZEROUPPER
	RET
