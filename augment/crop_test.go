package augment

import (
	"image"
	"math"
	"testing"
)

func TestCropRectInside(t *testing.T) {
	shapes := [][2]int{{224, 224}, {500, 375}, {375, 500}, {1, 1}, {3, 500}, {500, 3}, {2, 2}, {17, 1000}}
	scales := [][2]float64{{0.08, 1}, {1, 1}, {0.5, 0.5}, {0.01, 0.02}}
	ratios := [][2]float64{{3.0 / 4, 4.0 / 3}, {1, 1}, {2, 3}, {0.1, 0.2}}
	for _, sh := range shapes {
		w, h := sh[0], sh[1]
		img := image.Rect(0, 0, w, h)
		area := float64(w * h)
		for _, sc := range scales {
			for _, ra := range ratios {
				fallbacks := 0
				for seed := range uint64(200) {
					r, fb := cropRect(w, h, sc, ra, newRand(seed))
					if r.Empty() || !r.In(img) {
						t.Fatalf("%dx%d scale %v ratio %v seed %d: %v not a non-empty part of %v", w, h, sc, ra, seed, r, img)
					}
					if fb {
						fallbacks++
						continue
					}
					// The drawn area and ratio are within range; the sides
					// are that rounded, each by at most half a pixel.
					cw, ch := float64(r.Dx()), float64(r.Dy())
					if (cw-0.5)*(ch-0.5) > sc[1]*area+1e-9 || (cw+0.5)*(ch+0.5) < sc[0]*area-1e-9 {
						t.Errorf("%dx%d scale %v seed %d: %v has area fraction %.4f", w, h, sc, seed, r, cw*ch/area)
					}
					if (cw-0.5)/(ch+0.5) > ra[1]+1e-9 || (cw+0.5)/(ch-0.5) < ra[0]-1e-9 {
						t.Errorf("%dx%d ratio %v seed %d: %v has ratio %.4f", w, h, ra, seed, r, cw/ch)
					}
				}
				t.Logf("%dx%d scale %v ratio %v: %d/200 fallbacks", w, h, sc, ra, fallbacks)
			}
		}
	}
}

// TestCropRectExact checks crops whose size the algorithm fixes: the
// fallback centre crops, and fixed scale and ratio.
func TestCropRectExact(t *testing.T) {
	def, sq := [2]float64{3.0 / 4, 4.0 / 3}, [2]float64{1, 1}
	tests := []struct {
		name         string
		w, h         int
		scale, ratio [2]float64
		want         image.Rectangle // for a fallback; else only its size counts
		fallback     bool
	}{
		{"tall fallback, ratio clamped", 3, 500, [2]float64{0.08, 1}, def, image.Rect(0, 248, 3, 252), true},
		{"wide fallback, ratio clamped", 500, 3, [2]float64{0.08, 1}, def, image.Rect(248, 0, 252, 3), true},
		{"fallback within ratio", 100, 10, [2]float64{1, 1}, sq, image.Rect(45, 0, 55, 10), true},
		{"1x1, zero height kept at 1", 1, 1, [2]float64{0.08, 1}, [2]float64{3, 4}, image.Rect(0, 0, 1, 1), true},
		{"fixed 0.5 area, ratio 2", 200, 100, [2]float64{0.5, 0.5}, [2]float64{2, 2}, image.Rect(0, 0, 141, 71), false},
		// sqrt(0.25*25) = 2.5: Python's round gives 2, not 3.
		{"round half to even", 5, 5, [2]float64{0.25, 0.25}, sq, image.Rect(0, 0, 2, 2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(50) {
				r, fb := cropRect(tt.w, tt.h, tt.scale, tt.ratio, newRand(seed))
				if fb != tt.fallback {
					t.Fatalf("seed %d: fallback = %v, want %v (%v)", seed, fb, tt.fallback, r)
				}
				if fb && r != tt.want || !fb && r.Size() != tt.want.Size() {
					t.Fatalf("seed %d: got %v, want %v", seed, r, tt.want)
				}
			}
		})
	}
}

// TestCropRectPositions checks that every top and left offset occurs,
// the last one included (torch.randint's upper bound is exclusive).
func TestCropRectPositions(t *testing.T) {
	seen := map[image.Point]bool{}
	for seed := range uint64(2000) {
		r := CropRect(10, 8, [2]float64{0.25, 0.25}, [2]float64{1, 1}, newRand(seed))
		if r.Size() != image.Pt(4, 4) { // round(sqrt(20)) = 4
			t.Fatalf("seed %d: %v, want a 4x4 crop", seed, r)
		}
		seen[r.Min] = true
	}
	if len(seen) != 7*5 {
		t.Errorf("saw %d distinct positions, want all 7*5", len(seen))
	}
}

// TestCropRectAreaSpread checks that the drawn area fraction covers the
// whole Scale range, not one end of it.
func TestCropRectAreaSpread(t *testing.T) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for seed := range uint64(500) {
		r := CropRect(1000, 1000, [2]float64{0.08, 1}, [2]float64{3.0 / 4, 4.0 / 3}, newRand(seed))
		f := float64(r.Dx()*r.Dy()) / 1e6
		lo, hi = min(lo, f), max(hi, f)
	}
	if lo > 0.1 || hi < 0.9 {
		t.Errorf("area fractions span [%.3f, %.3f], want about [0.08, 1]", lo, hi)
	}
}
