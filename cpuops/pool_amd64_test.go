package cpuops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPool2x2AVX512SameBits: the AVX-512 row loop of pool2x2 gives the Go
// loop's outputs and argmax bit for bit, with NaNs, ±0, ±Inf and ties
// (the first maximum wins), on widths with and without a 16-output tail
// and odd sizes (the last row and column dropped).
func TestPool2x2AVX512SameBits(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512")
	}
	defer func(u bool) { useAVX512 = u }(useAVX512)
	rng := rand.New(rand.NewPCG(9, 10))
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)), 1, -1}
	for _, s := range [][3]int{{2, 32, 32}, {3, 7, 34}, {1, 4, 64}, {2, 5, 67}, {1, 2, 96}, {2, 64, 64}} {
		C, H, W := s[0], s[1], s[2]
		x := make([]float32, C*H*W)
		for i := range x {
			switch r := rng.IntN(10); {
			case r < 2:
				x[i] = special[rng.IntN(len(special))]
			case r < 4 && i > 0:
				x[i] = x[i-1] // a tie
			default:
				x[i] = float32(rng.NormFloat64())
			}
		}
		o := C * (H / 2) * (W / 2)
		var outs [2][]float32
		var args [2][]uint8
		for v, avx := range []bool{false, true} {
			useAVX512 = avx
			outs[v], args[v] = make([]float32, o), make([]uint8, o)
			pool2x2(x, C, H, W, outs[v], args[v])
		}
		bits := func(f []float32) []uint32 {
			u := make([]uint32, len(f))
			for i, v := range f {
				u[i] = math.Float32bits(v)
			}
			return u
		}
		if !slices.Equal(bits(outs[0]), bits(outs[1])) || !slices.Equal(args[0], args[1]) {
			for i := range outs[0] {
				if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) || args[0][i] != args[1][i] {
					t.Fatalf("C, H, W = %v: output %d: AVX-512 %v (argmax %d), Go %v (argmax %d)", s, i, outs[1][i], args[1][i], outs[0][i], args[0][i])
				}
			}
		}
	}
}

// BenchmarkPool2x2 pools the reference CNN's first conv output (32 planes
// of 64×64) with the Go loop and the AVX-512 one, in 3 alternating rounds;
// ns-cpu is per call, by process CPU time.
func BenchmarkPool2x2(b *testing.B) {
	const C, H, W = 32, 64, 64
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, C*H*W)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	out, arg := make([]float32, C*H*W/4), make([]uint8, C*H*W/4)
	for r := 1; r <= 3; r++ {
		for _, v := range []struct {
			name string
			avx  bool
		}{{"go", false}, {"avx512", true}} {
			b.Run(fmt.Sprintf("r%d/%s", r, v.name), func(b *testing.B) {
				if v.avx && !useAVX512 {
					b.Skip("no AVX-512")
				}
				defer func(u bool) { useAVX512 = u }(useAVX512)
				useAVX512 = v.avx
				cpu0 := cpuTime()
				for b.Loop() {
					pool2x2(x, C, H, W, out, arg)
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "ns-cpu/op")
			})
		}
	}
}
