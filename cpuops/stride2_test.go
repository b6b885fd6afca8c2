package cpuops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddStride2Rows: col2im's stride-2 add (AVX-512 where it runs) adds
// src[r·w+i] to dst[r·ld+2i] with the bits of a float32 add, for every
// width around the vector's 8 and a few rows, leaves every other float of
// dst as it was (a NaN's payload and −0 included), and writes nothing
// past the last row's dst[2w−2] (the rest of the array holds a sentinel).
func TestAddStride2Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const sentinel = 12345.5
	for w := 1; w < 42; w++ {
		for _, rows := range []int{1, 2, 5} {
			ld := 2*w + 3
			src := randF32(rng, rows*w)
			end := (rows-1)*ld + 2*w - 1
			big := randF32(rng, end+20)
			for i := end; i < len(big); i++ {
				big[i] = sentinel
			}
			for i := 1; i < end; i += 4 {
				big[i] = math.Float32frombits(0x7fc01234) // a NaN with a payload
			}
			big[0] = float32(math.Copysign(0, -1))
			src[0] = float32(math.Copysign(0, -1)) // −0 + −0 = −0
			want := slices.Clone(big)
			for r := 0; r < rows; r++ {
				for i := 0; i < w; i++ {
					want[r*ld+2*i] += src[r*w+i]
				}
			}
			got := slices.Clone(big)
			addStride2Rows(got[:end], src, w, rows, ld)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("w=%d rows=%d (AVX-512 %v): dst[%d] = %v (bits %x), want %v (bits %x)", w, rows, useAVX512, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}
