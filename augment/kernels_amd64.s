#include "textflag.h"

// The AVX2 versions of kernels.go's loops: the same float32 operations in
// the same order (no FMA), eight values a ymm register. Go's assembler
// writes AVX operands backwards: VSUBPS b, a, d is d = a - b.

DATA one<>+0(SB)/4, $0x3f800000   // 1.0
GLOBL one<>(SB), RODATA|NOPTR, $4
DATA c255<>+0(SB)/4, $0x437f0000  // 255.0
GLOBL c255<>(SB), RODATA|NOPTR, $4
DATA half<>+0(SB)/4, $0x3f000000  // 0.5
GLOBL half<>(SB), RODATA|NOPTR, $4

// func widenAVX2(dst *float32, src *uint8, n int)
TEXT ·widenAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
loop32:
	CMPQ CX, $32
	JL   loop8
	VPMOVZXBD (SI), Y0
	VPMOVZXBD 8(SI), Y1
	VPMOVZXBD 16(SI), Y2
	VPMOVZXBD 24(SI), Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $32, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  loop32
loop8:
	TESTQ CX, CX
	JZ    done
	VPMOVZXBD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $8, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop8
done:
	VZEROUPPER
	RET

// func hpassAVX2(out, row *float32, start, n *int32, w *float32, k, x0, sw int, flip bool)
//
// One output pixel at a time: its R, G, B (and A) sums in one xmm register,
// a broadcast weight times an RGBA float pixel per tap; then R, G and B go
// to their three planes. Walks the outputs backwards through the planes
// when flip.
TEXT ·hpassAVX2(SB), NOSPLIT, $0-65
	MOVQ out+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ start+16(FP), R8
	MOVQ n+24(FP), R9
	MOVQ w+32(FP), R10
	MOVQ k+40(FP), R11
	SHLQ $2, R11              // bytes of weights per output
	MOVQ x0+48(FP), AX
	SHLQ $4, AX
	SUBQ AX, SI               // pixel x at SI + 16x
	MOVQ sw+56(FP), CX
	MOVQ CX, R13
	SHLQ $2, R13              // bytes per plane
	MOVQ $4, BX               // step between outputs
	MOVBLZX flip+64(FP), DX
	TESTQ DX, DX
	JZ   begin
	LEAQ -4(DI)(R13*1), DI    // the last column
	NEGQ BX
begin:
	XORQ AX, AX
hloop:
	MOVLQSX (R8)(AX*4), R14
	SHLQ $4, R14
	ADDQ SI, R14
	MOVLQSX (R9)(AX*4), R12
	MOVQ R10, DX
	VXORPS X0, X0, X0
	TESTQ $1, R12             // an odd tap first, then pairs: still in order
	JZ   hpair
	VBROADCASTSS (DX), X1
	VMULPS (R14), X1, X1
	VADDPS X1, X0, X0
	ADDQ $4, DX
	ADDQ $16, R14
	DECQ R12
	JZ   hstore
hpair:
	VBROADCASTSS (DX), X1
	VMULPS (R14), X1, X1
	VBROADCASTSS 4(DX), X2
	VMULPS 16(R14), X2, X2
	VADDPS X1, X0, X0
	VADDPS X2, X0, X0
	ADDQ $8, DX
	ADDQ $32, R14
	SUBQ $2, R12
	JNZ  hpair
hstore:
	VMOVSS X0, (DI)
	VEXTRACTPS $1, X0, (DI)(R13*1)
	VEXTRACTPS $2, X0, (DI)(R13*2)
	ADDQ BX, DI
	ADDQ R11, R10
	INCQ AX
	CMPQ AX, CX
	JL   hloop
	RET

// func vpassAVX2(acc, in *float32, off *int, w *float32, taps, n int)
//
// acc[x] = min(sum_t w[t] * in[off[t] + x], 1): 32 values at a time (four
// independent sums over the taps), then 8.
TEXT ·vpassAVX2(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ off+16(FP), R8
	MOVQ w+24(FP), R9
	MOVQ taps+32(FP), R10
	MOVQ n+40(FP), CX
	VBROADCASTSS one<>(SB), Y15
vloop32:
	CMPQ CX, $32
	JL   vloop8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R8, BX
	MOVQ R9, R12
	MOVQ R10, R13
vtap32:
	MOVQ (BX), R11
	LEAQ (SI)(R11*4), R11
	VBROADCASTSS (R12), Y4
	VMULPS (R11), Y4, Y5
	VMULPS 32(R11), Y4, Y6
	VMULPS 64(R11), Y4, Y7
	VMULPS 96(R11), Y4, Y8
	VADDPS Y5, Y0, Y0
	VADDPS Y6, Y1, Y1
	VADDPS Y7, Y2, Y2
	VADDPS Y8, Y3, Y3
	ADDQ $8, BX
	ADDQ $4, R12
	DECQ R13
	JNZ  vtap32
	VMINPS Y15, Y0, Y0
	VMINPS Y15, Y1, Y1
	VMINPS Y15, Y2, Y2
	VMINPS Y15, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  vloop32
vloop8:
	TESTQ CX, CX
	JZ    vdone
	VXORPS Y0, Y0, Y0
	MOVQ R8, BX
	MOVQ R9, R12
	MOVQ R10, R13
vtap8:
	MOVQ (BX), R11
	LEAQ (SI)(R11*4), R11
	VBROADCASTSS (R12), Y4
	VMULPS (R11), Y4, Y5
	VADDPS Y5, Y0, Y0
	ADDQ $8, BX
	ADDQ $4, R12
	DECQ R13
	JNZ  vtap8
	VMINPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  vloop8
vdone:
	VZEROUPPER
	RET

// func storeF32AVX2(dst, src *float32, n int, m, inv float32)
TEXT ·storeF32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), Y14
	VBROADCASTSS inv+28(FP), Y15
floop32:
	CMPQ CX, $32
	JL   floop8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS Y14, Y0, Y0
	VSUBPS Y14, Y1, Y1
	VSUBPS Y14, Y2, Y2
	VSUBPS Y14, Y3, Y3
	VMULPS Y15, Y0, Y0
	VMULPS Y15, Y1, Y1
	VMULPS Y15, Y2, Y2
	VMULPS Y15, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  floop32
floop8:
	TESTQ CX, CX
	JZ    fdone
	VMOVUPS (SI), Y0
	VSUBPS Y14, Y0, Y0
	VMULPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  floop8
fdone:
	VZEROUPPER
	RET

// func storeU8AVX2(dst *uint8, src *float32, n int)
//
// uint8(v*255 + 0.5): truncating conversions, then packs that cannot
// saturate (the values are 0..255).
TEXT ·storeU8AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS c255<>(SB), Y14
	VBROADCASTSS half<>(SB), Y15
uloop:
	VMULPS (SI), Y14, Y0
	VADDPS Y15, Y0, Y0
	VCVTTPS2DQ Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW X1, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVQ X0, (DI)
	ADDQ $32, SI
	ADDQ $8, DI
	SUBQ $8, CX
	JNZ  uloop
	VZEROUPPER
	RET

// func brightnessAVX2(p *float32, n int, f float32)
TEXT ·brightnessAVX2(SB), NOSPLIT, $0-20
	MOVQ p+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS f+16(FP), Y13
	VXORPS Y14, Y14, Y14
	VBROADCASTSS one<>(SB), Y15
bloop32:
	CMPQ CX, $32
	JL   bloop8
	VMULPS (DI), Y13, Y0
	VMULPS 32(DI), Y13, Y1
	VMULPS 64(DI), Y13, Y2
	VMULPS 96(DI), Y13, Y3
	VMAXPS Y14, Y0, Y0
	VMAXPS Y14, Y1, Y1
	VMAXPS Y14, Y2, Y2
	VMAXPS Y14, Y3, Y3
	VMINPS Y15, Y0, Y0
	VMINPS Y15, Y1, Y1
	VMINPS Y15, Y2, Y2
	VMINPS Y15, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  bloop32
bloop8:
	TESTQ CX, CX
	JZ    bdone
	VMULPS (DI), Y13, Y0
	VMAXPS Y14, Y0, Y0
	VMINPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  bloop8
bdone:
	VZEROUPPER
	RET

// func contrastAVX2(p *float32, n int, f, m float32)
TEXT ·contrastAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS f+16(FP), Y12
	VBROADCASTSS m+20(FP), Y13
	VXORPS Y14, Y14, Y14
	VBROADCASTSS one<>(SB), Y15
cloop32:
	CMPQ CX, $32
	JL   cloop8
	VMULPS (DI), Y12, Y0
	VMULPS 32(DI), Y12, Y1
	VMULPS 64(DI), Y12, Y2
	VMULPS 96(DI), Y12, Y3
	VADDPS Y13, Y0, Y0
	VADDPS Y13, Y1, Y1
	VADDPS Y13, Y2, Y2
	VADDPS Y13, Y3, Y3
	VMAXPS Y14, Y0, Y0
	VMAXPS Y14, Y1, Y1
	VMAXPS Y14, Y2, Y2
	VMAXPS Y14, Y3, Y3
	VMINPS Y15, Y0, Y0
	VMINPS Y15, Y1, Y1
	VMINPS Y15, Y2, Y2
	VMINPS Y15, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  cloop32
cloop8:
	TESTQ CX, CX
	JZ    cdone
	VMULPS (DI), Y12, Y0
	VADDPS Y13, Y0, Y0
	VMAXPS Y14, Y0, Y0
	VMINPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  cloop8
cdone:
	VZEROUPPER
	RET

// func saturationAVX2(rp, gp, bp *float32, n int, f, omf float32, gw *[3]float32)
//
// m = omf * ((gw0*r + gw1*g) + gw2*b); each channel = clamp01(f*c + m).
TEXT ·saturationAVX2(SB), NOSPLIT, $0-48
	MOVQ rp+0(FP), AX
	MOVQ gp+8(FP), BX
	MOVQ bp+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS f+32(FP), Y8
	VBROADCASTSS omf+36(FP), Y9
	MOVQ gw+40(FP), SI
	VBROADCASTSS 0(SI), Y10
	VBROADCASTSS 4(SI), Y11
	VBROADCASTSS 8(SI), Y12
	VXORPS Y14, Y14, Y14
	VBROADCASTSS one<>(SB), Y15
sloop:
	VMOVUPS (AX), Y0
	VMOVUPS (BX), Y1
	VMOVUPS (DX), Y2
	VMULPS Y10, Y0, Y3
	VMULPS Y11, Y1, Y4
	VADDPS Y4, Y3, Y3
	VMULPS Y12, Y2, Y4
	VADDPS Y4, Y3, Y3
	VMULPS Y9, Y3, Y3         // m
	VMULPS Y8, Y0, Y0
	VMULPS Y8, Y1, Y1
	VMULPS Y8, Y2, Y2
	VADDPS Y3, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y3, Y2, Y2
	VMAXPS Y14, Y0, Y0
	VMAXPS Y14, Y1, Y1
	VMAXPS Y14, Y2, Y2
	VMINPS Y15, Y0, Y0
	VMINPS Y15, Y1, Y1
	VMINPS Y15, Y2, Y2
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, (BX)
	VMOVUPS Y2, (DX)
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  sloop
	VZEROUPPER
	RET

// func graySumAVX2(rp, gp, bp *float32, n int, s *[8]float64, gw *[3]float32)
//
// s[i%8] += float64(gray_i): lanes 0-3 in Y6, 4-7 in Y7.
TEXT ·graySumAVX2(SB), NOSPLIT, $0-48
	MOVQ rp+0(FP), AX
	MOVQ gp+8(FP), BX
	MOVQ bp+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ s+32(FP), DI
	MOVQ gw+40(FP), SI
	VBROADCASTSS 0(SI), Y10
	VBROADCASTSS 4(SI), Y11
	VBROADCASTSS 8(SI), Y12
	VMOVUPD (DI), Y6
	VMOVUPD 32(DI), Y7
gloop:
	VMULPS (AX), Y10, Y3
	VMULPS (BX), Y11, Y4
	VADDPS Y4, Y3, Y3
	VMULPS (DX), Y12, Y4
	VADDPS Y4, Y3, Y3
	VCVTPS2PD X3, Y4
	VEXTRACTF128 $1, Y3, X5
	VCVTPS2PD X5, Y5
	VADDPD Y4, Y6, Y6
	VADDPD Y5, Y7, Y7
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  gloop
	VMOVUPD Y6, (DI)
	VMOVUPD Y7, 32(DI)
	VZEROUPPER
	RET
