package cpuops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestVectorLoopsMatchGo: the AVX2 loops (where the CPU has them) give the
// same bits as the portable ones, for every length around the vector widths.
func TestVectorLoopsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for n := 0; n < 70; n++ {
		src, dst := randF32(rng, n), randF32(rng, n)
		want := slices.Clone(dst)
		addToGo(want, src)
		got := slices.Clone(dst)
		addTo(got, src)
		if !slices.Equal(got, want) {
			t.Fatalf("addTo, n=%d: %v, want %v", n, got, want)
		}

		y, dy := randF32(rng, n), randF32(rng, n)
		for i := range y {
			switch i % 4 {
			case 0:
				y[i] = 0
			case 1:
				y[i] = float32(math.Abs(float64(y[i])))
			case 2:
				y[i] = float32(math.NaN())
			}
		}
		for _, bias := range []float32{0, -0.5, float32(math.Copysign(0, -1))} {
			x := slices.Clone(y)
			for i := range x {
				if i%5 == 3 {
					x[i] = float32(math.Copysign(0, -1)) // −0 + −0 = −0: must come out +0
				}
			}
			want, got := slices.Clone(x), slices.Clone(x)
			biasReLUGo(want, bias)
			biasReLU(got, bias)
			for i := range want {
				if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
					t.Fatalf("biasReLU(%v), n=%d, i=%d: %v (bits %x), want %v (bits %x)", bias, n, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}

		wm, gm := make([]float32, n), make([]float32, n)
		reluMaskGo(wm, y, dy)
		reluMask(gm, y, dy)
		for i := range wm {
			if math.Float32bits(wm[i]) != math.Float32bits(gm[i]) {
				t.Fatalf("reluMask, n=%d, i=%d: %v, want %v", n, i, gm[i], wm[i])
			}
		}
	}
}
