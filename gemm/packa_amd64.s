#include "textflag.h"

// packAIdx: the dword indices of VPERMPS for the six output vectors of a
// block of 16 columns: lane t of output j takes column (16j+t)/6 of its
// row (packA6AVX512).
DATA packAIdx<>+0x000(SB)/4, $0
DATA packAIdx<>+0x004(SB)/4, $0
DATA packAIdx<>+0x008(SB)/4, $0
DATA packAIdx<>+0x00c(SB)/4, $0
DATA packAIdx<>+0x010(SB)/4, $0
DATA packAIdx<>+0x014(SB)/4, $0
DATA packAIdx<>+0x018(SB)/4, $1
DATA packAIdx<>+0x01c(SB)/4, $1
DATA packAIdx<>+0x020(SB)/4, $1
DATA packAIdx<>+0x024(SB)/4, $1
DATA packAIdx<>+0x028(SB)/4, $1
DATA packAIdx<>+0x02c(SB)/4, $1
DATA packAIdx<>+0x030(SB)/4, $2
DATA packAIdx<>+0x034(SB)/4, $2
DATA packAIdx<>+0x038(SB)/4, $2
DATA packAIdx<>+0x03c(SB)/4, $2
DATA packAIdx<>+0x040(SB)/4, $2
DATA packAIdx<>+0x044(SB)/4, $2
DATA packAIdx<>+0x048(SB)/4, $3
DATA packAIdx<>+0x04c(SB)/4, $3
DATA packAIdx<>+0x050(SB)/4, $3
DATA packAIdx<>+0x054(SB)/4, $3
DATA packAIdx<>+0x058(SB)/4, $3
DATA packAIdx<>+0x05c(SB)/4, $3
DATA packAIdx<>+0x060(SB)/4, $4
DATA packAIdx<>+0x064(SB)/4, $4
DATA packAIdx<>+0x068(SB)/4, $4
DATA packAIdx<>+0x06c(SB)/4, $4
DATA packAIdx<>+0x070(SB)/4, $4
DATA packAIdx<>+0x074(SB)/4, $4
DATA packAIdx<>+0x078(SB)/4, $5
DATA packAIdx<>+0x07c(SB)/4, $5
DATA packAIdx<>+0x080(SB)/4, $5
DATA packAIdx<>+0x084(SB)/4, $5
DATA packAIdx<>+0x088(SB)/4, $5
DATA packAIdx<>+0x08c(SB)/4, $5
DATA packAIdx<>+0x090(SB)/4, $6
DATA packAIdx<>+0x094(SB)/4, $6
DATA packAIdx<>+0x098(SB)/4, $6
DATA packAIdx<>+0x09c(SB)/4, $6
DATA packAIdx<>+0x0a0(SB)/4, $6
DATA packAIdx<>+0x0a4(SB)/4, $6
DATA packAIdx<>+0x0a8(SB)/4, $7
DATA packAIdx<>+0x0ac(SB)/4, $7
DATA packAIdx<>+0x0b0(SB)/4, $7
DATA packAIdx<>+0x0b4(SB)/4, $7
DATA packAIdx<>+0x0b8(SB)/4, $7
DATA packAIdx<>+0x0bc(SB)/4, $7
DATA packAIdx<>+0x0c0(SB)/4, $8
DATA packAIdx<>+0x0c4(SB)/4, $8
DATA packAIdx<>+0x0c8(SB)/4, $8
DATA packAIdx<>+0x0cc(SB)/4, $8
DATA packAIdx<>+0x0d0(SB)/4, $8
DATA packAIdx<>+0x0d4(SB)/4, $8
DATA packAIdx<>+0x0d8(SB)/4, $9
DATA packAIdx<>+0x0dc(SB)/4, $9
DATA packAIdx<>+0x0e0(SB)/4, $9
DATA packAIdx<>+0x0e4(SB)/4, $9
DATA packAIdx<>+0x0e8(SB)/4, $9
DATA packAIdx<>+0x0ec(SB)/4, $9
DATA packAIdx<>+0x0f0(SB)/4, $10
DATA packAIdx<>+0x0f4(SB)/4, $10
DATA packAIdx<>+0x0f8(SB)/4, $10
DATA packAIdx<>+0x0fc(SB)/4, $10
DATA packAIdx<>+0x100(SB)/4, $10
DATA packAIdx<>+0x104(SB)/4, $10
DATA packAIdx<>+0x108(SB)/4, $11
DATA packAIdx<>+0x10c(SB)/4, $11
DATA packAIdx<>+0x110(SB)/4, $11
DATA packAIdx<>+0x114(SB)/4, $11
DATA packAIdx<>+0x118(SB)/4, $11
DATA packAIdx<>+0x11c(SB)/4, $11
DATA packAIdx<>+0x120(SB)/4, $12
DATA packAIdx<>+0x124(SB)/4, $12
DATA packAIdx<>+0x128(SB)/4, $12
DATA packAIdx<>+0x12c(SB)/4, $12
DATA packAIdx<>+0x130(SB)/4, $12
DATA packAIdx<>+0x134(SB)/4, $12
DATA packAIdx<>+0x138(SB)/4, $13
DATA packAIdx<>+0x13c(SB)/4, $13
DATA packAIdx<>+0x140(SB)/4, $13
DATA packAIdx<>+0x144(SB)/4, $13
DATA packAIdx<>+0x148(SB)/4, $13
DATA packAIdx<>+0x14c(SB)/4, $13
DATA packAIdx<>+0x150(SB)/4, $14
DATA packAIdx<>+0x154(SB)/4, $14
DATA packAIdx<>+0x158(SB)/4, $14
DATA packAIdx<>+0x15c(SB)/4, $14
DATA packAIdx<>+0x160(SB)/4, $14
DATA packAIdx<>+0x164(SB)/4, $14
DATA packAIdx<>+0x168(SB)/4, $15
DATA packAIdx<>+0x16c(SB)/4, $15
DATA packAIdx<>+0x170(SB)/4, $15
DATA packAIdx<>+0x174(SB)/4, $15
DATA packAIdx<>+0x178(SB)/4, $15
DATA packAIdx<>+0x17c(SB)/4, $15
GLOBL packAIdx<>(SB), RODATA|NOPTR, $384

// PERM6(j, m0, m1, m2, m3, m4, m5) writes output vector j (Z6+j) of a
// block: lane t from row i (Zi) where (16j+t) mod 6 = i, the lanes of
// row i being the mask K1+((i-4j) mod 6) (K1..K6 hold the lanes t with
// t mod 6 = 0..5). The six masks part the 16 lanes, so every lane is
// written.
#define PERM6(idx, out, m0, m1, m2, m3, m4, m5) \
	VPERMPS Z0, idx, m0, out \
	VPERMPS Z1, idx, m1, out \
	VPERMPS Z2, idx, m2, out \
	VPERMPS Z3, idx, m3, out \
	VPERMPS Z4, idx, m4, out \
	VPERMPS Z5, idx, m5, out

// func packA6AVX512(dst, a *float32, lda, rows, blocks int)
//
// packA's row panel of rows <= 6 rows (1 <= rows) for 16·blocks columns:
// dst[6q+i] = a[i·lda+q] for i < rows, 0 for rows <= i < 6, q < 16·blocks.
// Per block of 16 columns: the rows are loaded (zeros past rows), and
// each of the six output vectors gathers its lanes from the six rows by
// masked VPERMPS (Intel SDM vol. 2, VPERMPS), then is stored.
TEXT ·packA6AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), R8
	MOVQ lda+16(FP), AX
	MOVQ rows+24(FP), CX
	MOVQ blocks+32(FP), DX
	TESTQ DX, DX
	JZ   done
	SHLQ $2, AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	LEAQ (R11)(AX*1), R12
	LEAQ (R12)(AX*1), R13
	VMOVDQU32 packAIdx<>+0x000(SB), Z16
	VMOVDQU32 packAIdx<>+0x040(SB), Z17
	VMOVDQU32 packAIdx<>+0x080(SB), Z18
	VMOVDQU32 packAIdx<>+0x0c0(SB), Z19
	VMOVDQU32 packAIdx<>+0x100(SB), Z20
	VMOVDQU32 packAIdx<>+0x140(SB), Z21
	MOVW $0x1041, AX
	KMOVW AX, K1
	MOVW $0x2082, AX
	KMOVW AX, K2
	MOVW $0x4104, AX
	KMOVW AX, K3
	MOVW $0x8208, AX
	KMOVW AX, K4
	MOVW $0x0410, AX
	KMOVW AX, K5
	MOVW $0x0820, AX
	KMOVW AX, K6
	// The rows past rows stay zero.
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	XORQ BX, BX

loop:
	VMOVUPS (R8)(BX*1), Z0
	CMPQ CX, $2
	JLT  loaded
	VMOVUPS (R9)(BX*1), Z1
	CMPQ CX, $3
	JLT  loaded
	VMOVUPS (R10)(BX*1), Z2
	CMPQ CX, $4
	JLT  loaded
	VMOVUPS (R11)(BX*1), Z3
	CMPQ CX, $5
	JLT  loaded
	VMOVUPS (R12)(BX*1), Z4
	CMPQ CX, $6
	JLT  loaded
	VMOVUPS (R13)(BX*1), Z5

loaded:
	PERM6(Z16, Z6, K1, K2, K3, K4, K5, K6)
	PERM6(Z17, Z7, K3, K4, K5, K6, K1, K2)
	PERM6(Z18, Z8, K5, K6, K1, K2, K3, K4)
	PERM6(Z19, Z9, K1, K2, K3, K4, K5, K6)
	PERM6(Z20, Z10, K3, K4, K5, K6, K1, K2)
	PERM6(Z21, Z11, K5, K6, K1, K2, K3, K4)
	VMOVUPS Z6, (DI)
	VMOVUPS Z7, 64(DI)
	VMOVUPS Z8, 128(DI)
	VMOVUPS Z9, 192(DI)
	VMOVUPS Z10, 256(DI)
	VMOVUPS Z11, 320(DI)
	ADDQ $384, DI
	ADDQ $64, BX
	DECQ DX
	JNZ  loop
	VZEROUPPER

done:
	RET
