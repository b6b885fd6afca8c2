package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRoundVecMatchesScalar: the vector roundings roundSlice and
// bf16RoundSlice take (AVX2, AVX-512 and VCVTNE2PS2BF16 where the CPU has
// them) give
// roundMantissa's bits, and bf16BitsRNE's (a NaN cut to its top 16 bits),
// for every class of float32 (random bit patterns, NaNs with payloads in
// the bits they drop, infinities, the ties, values that round up to
// infinity, denormals) at TF32 and at bf16, and on every length up to 40
// (the AVX-512 loop's masked tail, the AVX2 loop's multiples of 8); the
// floats past what one does are left as they were.
func TestRoundVecMatchesScalar(t *testing.T) {
	type vec struct {
		name string
		f    func(s []float32, drop uint, nanMask uint32) int
	}
	var vecs []vec
	if HasAVX2() {
		vecs = append(vecs, vec{"AVX2", func(s []float32, drop uint, nanMask uint32) int {
			n := len(s) &^ 7
			if n > 0 {
				roundMantissaAVX2(&s[0], n, uint32(drop), uint32(1)<<(drop-1)-1, ^(uint32(1)<<drop - 1), nanMask)
			}
			return n
		}})
	}
	if HasAVX512() {
		vecs = append(vecs, vec{"AVX-512", func(s []float32, drop uint, nanMask uint32) int {
			if len(s) > 0 {
				roundMantissaAVX512(&s[0], len(s), uint32(drop), uint32(1)<<(drop-1)-1, ^(uint32(1)<<drop - 1), nanMask)
			}
			return len(s)
		}})
	}
	if len(vecs) == 0 {
		t.Skip("no AVX2: roundSlice is the scalar loop")
	}
	if roundCvt {
		vecs = append(vecs, vec{"VCVTNE2PS2BF16", func(s []float32, drop uint, nanMask uint32) int {
			if drop != 16 {
				return 0 // bf16 only
			}
			if len(s) > 0 {
				roundBF16AVX512BF16(&s[0], len(s), nanMask)
			}
			return len(s)
		}})
	}
	vecs = append(vecs, vec{"roundVecMasked", roundVecMasked})
	rng := rand.New(rand.NewPCG(3, 4))
	var u []uint32
	for range 1 << 16 {
		u = append(u, rng.Uint32())
	}
	for _, b := range []uint32{0x7f800000, 0xff800000, 0x7f800001, 0x7fc0ffff, 0xffbfffff, 0x7f7fffff, 0x7f7f8000,
		0x3f808000, 0x3f818000, 0x3f801000, 0x3f803000, 0x00000001, 0x00008000, 0x80018000, 0, 0x80000000,
		0x7f808000, 0x7fff8000, 0xff807fff, 0x7f80ffff} {
		u = append(u, b)
	}
	// Runs of 32 normal floats with a NaN or a denormal at each place
	// (the VCVTNE2PS2BF16 loop must send the 32 to the integer rounding).
	for _, b := range []uint32{0x7fa00001, 0x00008001, 0x80000001, 0xffc07fff} {
		for p := range 32 {
			for i := range 32 {
				v := 0x3f800000 | rng.Uint32()&0x807fffff
				if i == p {
					v = b
				}
				u = append(u, v)
			}
		}
	}
	u = append(u, 1, 2, 3) // a tail
	for _, v := range vecs {
		for _, c := range []struct {
			drop    uint
			nanMask uint32
			want    func(uint32) uint32
		}{
			{23 - 10, ^uint32(0), func(b uint32) uint32 { return math.Float32bits(roundMantissa(math.Float32frombits(b), 23-10)) }},
			{23 - 7, ^uint32(0), func(b uint32) uint32 { return math.Float32bits(roundMantissa(math.Float32frombits(b), 23-7)) }},
			{23 - 7, 0xffff0000, func(b uint32) uint32 { return bf16BitsRNE(math.Float32frombits(b)) << 16 }},
		} {
			check := func(u []uint32) {
				got := make([]float32, len(u))
				for i, b := range u {
					got[i] = math.Float32frombits(b)
				}
				n := v.f(got, c.drop, c.nanMask)
				for i, b := range u {
					w := b
					if i < n {
						w = c.want(b)
					}
					if g := math.Float32bits(got[i]); g != w {
						t.Fatalf("%s, drop %d, NaN mask %#08x, length %d: [%d] %#08x gives %#08x, want %#08x",
							v.name, c.drop, c.nanMask, len(u), i, b, g, w)
					}
				}
			}
			check(u)
			for l := 0; l <= 40; l++ {
				check(u[len(u)-l-3 : len(u)-3]) // the specials near the end, at every position of a tail
			}
		}
	}
}
