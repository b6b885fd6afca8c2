package augment

import (
	"image"
	"math"
	"testing"
)

// TestColorJitter runs Train with the identity geometry and checks each
// jitter op, alone and together, against torchvision's formulas computed
// here in float64. The factors and op order are replayed from the same seed
// in the documented draw order: crop, flip, order, one factor per op.
func TestColorJitter(t *testing.T) {
	const size = 6
	img := testImage(size, size)
	tests := []struct {
		name     string
		strength [3]float64 // brightness, contrast, saturation
	}{
		{"brightness", [3]float64{0.9, 0, 0}},
		{"brightness, factor from 0", [3]float64{1.5, 0, 0}},
		{"contrast", [3]float64{0, 0.9, 0}},
		{"saturation", [3]float64{0, 0, 0.9}},
		{"all three, random order", [3]float64{0.6, 0.7, 0.8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := identityParams(size)
			p.Brightness, p.Contrast, p.Saturation = tt.strength[0], tt.strength[1], tt.strength[2]
			tr, err := NewTrain(p)
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float32, 3*size*size)
			plain := refJitter(img, size, [3]int{}, [3]float64{}, [3]float64{})
			changed, orders := 0, map[[3]int]bool{}
			for seed := range uint64(30) {
				if err := tr.Apply(img, newRand(seed), dst); err != nil {
					t.Fatal(err)
				}

				rng := newRand(seed)
				CropRect(size, size, p.Scale, p.Ratio, rng)
				rng.Float64() // flip
				order := [3]int{0, 1, 2}
				for i := 2; i > 0; i-- {
					k := rng.IntN(i + 1)
					order[i], order[k] = order[k], order[i]
				}
				orders[order] = true
				var factor [3]float64
				for op, s := range tt.strength {
					if s > 0 {
						lo, hi := math.Max(0, 1-s), 1+s
						factor[op] = lo + (hi-lo)*rng.Float64()
					}
				}

				want := refJitter(img, size, order, tt.strength, factor)
				for i := range dst {
					if d := math.Abs(float64(dst[i]) - want[i]); d > 2e-6 {
						t.Fatalf("seed %d (order %v, factors %.3f): value %d = %.6f, want %.6f", seed, order, factor, i, dst[i], want[i])
					}
					if math.Abs(want[i]-plain[i]) > 1e-3 {
						changed++
					}
				}
			}
			if changed == 0 {
				t.Error("the jitter never changed a value")
			}
			if tt.name == "all three, random order" && len(orders) != 6 {
				t.Errorf("saw %d of the 6 op orders", len(orders))
			}
		})
	}
}

// refJitter applies torchvision's ColorJitter to the whole of img in
// float64 and returns CHW values; ops with strength 0 are off.
func refJitter(img *image.NRGBA, size int, order [3]int, strength, factor [3]float64) []float64 {
	n := size * size
	px := make([][3]float64, n)
	for y := range size {
		for x := range size {
			px[y*size+x] = rgb01(img, x, y)
		}
	}
	luma := func(p [3]float64) float64 { return 0.299*p[0] + 0.587*p[1] + 0.114*p[2] }
	blend := func(v, toward, f float64) float64 { return math.Min(math.Max(f*v+(1-f)*toward, 0), 1) }
	for _, op := range order {
		if strength[op] == 0 {
			continue
		}
		f := factor[op]
		mean := 0.0
		for _, p := range px {
			mean += luma(p) / float64(n)
		}
		for i, p := range px {
			g := luma(p)
			for c := range 3 {
				switch op {
				case 0: // brightness: blend with black
					px[i][c] = blend(p[c], 0, f)
				case 1: // contrast: blend with the image's mean gray
					px[i][c] = blend(p[c], mean, f)
				case 2: // saturation: blend with the pixel's gray
					px[i][c] = blend(p[c], g, f)
				}
			}
		}
	}
	out := make([]float64, 3*n)
	for i, p := range px {
		for c := range 3 {
			out[c*n+i] = p[c]
		}
	}
	return out
}
