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
