package gemm

import (
	"fmt"
	"math"
)

// Precision is the precision a product's inputs are rounded to before they
// are multiplied; accumulation and the output stay float32 at every
// precision, as on NVIDIA's tensor cores (TF32: PyTorch's allow_tf32; bf16:
// torch.autocast's conv and matmul inputs).
type Precision uint8

const (
	FP32 Precision = iota // float32 inputs, unrounded: the plain SGEMM
	TF32                  // inputs rounded to TF32: float32's 8-bit exponent, 10 mantissa bits
	BF16                  // inputs rounded to bfloat16: float32's 8-bit exponent, 7 mantissa bits
)

// Precisions lists the precisions ParsePrecision accepts, in order.
var Precisions = []Precision{FP32, TF32, BF16}

// String is the precision's name in configs and flags: "fp32", "tf32" or
// "bf16".
func (p Precision) String() string {
	switch p {
	case FP32:
		return "fp32"
	case TF32:
		return "tf32"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("Precision(%d)", uint8(p))
}

// ParsePrecision is the precision named s ("fp32", "tf32" or "bf16",
// exactly); anything else (fp16, "") is an error naming the choices.
func ParsePrecision(s string) (Precision, error) {
	for _, p := range Precisions {
		if s == p.String() {
			return p, nil
		}
	}
	return FP32, fmt.Errorf("precision %q is not one of fp32, tf32, bf16", s)
}

// Round rounds x to p (FP32: x itself).
func (p Precision) Round(x float32) float32 {
	switch p {
	case TF32:
		return RoundTF32(x)
	case BF16:
		return RoundBF16(x)
	}
	return x
}

// RoundTF32 rounds x to the nearest TF32 value, ties to even, on the bits:
// 10 of float32's 23 mantissa bits are kept. Subnormals round on the same
// bit positions; a value past TF32's largest finite rounds to ±Inf; ±Inf
// stays; a NaN stays a NaN, made quiet. These are the conversions of the
// cuBLAS stand-in (cudaops/cudasim/fp.h, round_mantissa), bit for bit.
func RoundTF32(x float32) float32 { return roundMantissa(x, 23-10) }

// RoundBF16 rounds x to the nearest bfloat16 value (7 mantissa bits kept),
// as RoundTF32 does; the result's low 16 bits are zero but for a NaN's
// payload.
func RoundBF16(x float32) float32 { return roundMantissa(x, 23-7) }

// roundMantissa drops the low drop bits of x's mantissa, rounding to
// nearest with ties to even: adding half an ulp of the kept bits (less one,
// plus the kept lowest bit) carries into the kept bits, and on into the
// exponent, up to Inf, exactly when IEEE rounding would.
func roundMantissa(x float32, drop uint) float32 {
	u := math.Float32bits(x)
	if u&0x7f800000 == 0x7f800000 {
		if u&0x007fffff != 0 {
			u |= 0x00400000 // quiet the NaN
		}
		return math.Float32frombits(u)
	}
	half := uint32(1)<<(drop-1) - 1 + (u>>drop)&1
	return math.Float32frombits((u + half) &^ (uint32(1)<<drop - 1))
}

// roundSlice rounds every value of s to p in place (nothing at FP32).
func roundSlice(p Precision, s []float32) {
	var drop uint
	switch p {
	case TF32:
		drop = 23 - 10
	case BF16:
		drop = 23 - 7
	default:
		return
	}
	n := roundVec(s, drop) // AVX-512 or AVX2, the same bits
	for i, v := range s[n:] {
		s[n+i] = roundMantissa(v, drop)
	}
}

// RoundSlice rounds every value of s to p in place (nothing at FP32): the
// rounding the products at p give their inputs, for references and tests.
func RoundSlice(p Precision, s []float32) { roundSlice(p, s) }

// rounding is the rounding of packed panels to p, in place: nil at FP32.
func rounding(p Precision) func([]float32) {
	switch p {
	case TF32:
		return roundTF32Slice
	case BF16:
		return roundBF16Slice
	}
	return nil
}

func roundTF32Slice(s []float32) { roundSlice(TF32, s) }
func roundBF16Slice(s []float32) { roundSlice(BF16, s) }

// roundChunk is how many bytes of packed panels are packed and then
// rounded at a time (packARounded, packBRounded): a piece this size is
// still in L1 when it is rounded, where a second pass over a whole packed
// block of B (up to KC×NC floats, 4 MiB) would read and write it again in
// L2 or beyond. On an Intel Xeon of family 6 model 207 the AVX-512 pass
// took 0.096 ns a float in L1 and 0.145 over 4 MiB (BenchmarkRoundBF16,
// past the refill), and a resnet20 bf16 step about 2% less time.
const roundChunk = 16 << 10

// packBRounded is b.PackB(dst, pc, jc, kb, nb) with the panels then
// rounded by round (none where round is nil), in pieces of whole panels
// of about roundChunk bytes.
func packBRounded(dst []float32, b Panels, pc, jc, kb, nb int, round func([]float32)) {
	if round == nil {
		b.PackB(dst, pc, jc, kb, nb)
		return
	}
	step := max(1, roundChunk/(4*nr*kb)) * nr
	for j := 0; j < nb; j += step {
		w := min(step, nb-j)
		b.PackB(dst[j*kb:], pc, jc+j, kb, w)
		round(dst[j*kb : j*kb+(w+nr-1)/nr*nr*kb])
	}
}

// packARounded is packA(dst, a, lda, trans, ic, pc, mb, kb) with the
// panels then rounded by round (none where round is nil), in pieces of
// whole panels of about roundChunk bytes.
func packARounded(dst, a []float32, lda int, trans bool, ic, pc, mb, kb int, round func([]float32)) {
	if round == nil {
		packA(dst, a, lda, trans, ic, pc, mb, kb)
		return
	}
	step := max(1, roundChunk/(4*mr*kb)) * mr
	for i := 0; i < mb; i += step {
		h := min(step, mb-i)
		packA(dst[i*kb:], a, lda, trans, ic+i, pc, h, kb)
		round(dst[i*kb : i*kb+(h+mr-1)/mr*mr*kb])
	}
}
