package augment

import (
	"image"
	"math"
	"math/rand/v2"
)

// CropRect picks the crop of RandomResizedCrop for a w x h image, with
// torchvision's algorithm (transforms.RandomResizedCrop.get_params, v0.2 to
// v0.26): up to 10 attempts drawing an area fraction uniformly from scale
// and an aspect ratio (width/height) log-uniformly from ratio, keeping the
// first crop that fits; otherwise a centre crop of the whole image with its
// aspect ratio clamped to ratio.
//
// The rectangle is relative to (0, 0); add the image's Bounds().Min. The rng
// draws per attempt are Float64 (area), Float64 (ratio), then on success
// IntN (top) and IntN (left), matching torchvision's order. Python's round
// (half to even) is used where torchvision rounds.
//
// One deviation: where torchvision's fallback would give a zero-sized crop
// (a 1-pixel side and a ratio range that excludes 1 by more than 2x), the
// side is kept at 1 pixel, so the rectangle is never empty for w, h >= 1.
func CropRect(w, h int, scale, ratio [2]float64, rng *rand.Rand) image.Rectangle {
	r, _ := cropRect(w, h, scale, ratio, rng)
	return r
}

// cropRect is CropRect that also says whether it fell back to the centre
// crop, for the tests.
func cropRect(w, h int, scale, ratio [2]float64, rng *rand.Rand) (r image.Rectangle, fallback bool) {
	area := float64(w) * float64(h)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * (scale[0] + (scale[1]-scale[0])*rng.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*rng.Float64())
		cw := int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch := int(math.RoundToEven(math.Sqrt(target / aspect)))
		if 0 < cw && cw <= w && 0 < ch && ch <= h {
			top := rng.IntN(h - ch + 1)
			left := rng.IntN(w - cw + 1)
			return image.Rect(left, top, left+cw, top+ch), false
		}
	}
	cw, ch := w, h
	switch in := float64(w) / float64(h); {
	case in < ratio[0]:
		ch = int(math.RoundToEven(float64(cw) / ratio[0]))
	case in > ratio[1]:
		cw = int(math.RoundToEven(float64(ch) * ratio[1]))
	}
	cw, ch = max(cw, 1), max(ch, 1)
	top, left := (h-ch)/2, (w-cw)/2
	return image.Rect(left, top, left+cw, top+ch), true
}
