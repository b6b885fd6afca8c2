package data

import (
	"fmt"
	"image"
	"math/rand/v2"
)

// A loader worker turns one sample into its slot of a batch in five
// stages, each a function of its own so that a benchmark can time them one
// at a time on the loader's own code (bench-data: bench/data.go):
//
//	Decoder.ReadFile       the file's bytes
//	Decoder.DecodeHeader   format and size, before any pixel
//	PlanCrop               the transform's crop, drawn from the sample's RNG, and the DCT scale it allows
//	Decoder.DecodeScaled   the pixels, at that scale
//	ApplyCrop              crop, resize, flip, jitter, normalize (or quantize) into the slot

// Crop is what a RegionTransform reads of one image: Src, in full-size
// pixels, resized to OutW x OutH; Scale is the DCT scale divisor the decode
// may use for it (1, 2, 4 or 8).
type Crop struct {
	Src        image.Rectangle
	OutW, OutH int
	Scale      int
}

// PlanCrop draws tf's crop of the image h describes from rng (the sample's
// stream, SampleSource.For), and picks the largest DCT scale the crop
// allows (DCTScale), or 1 when the file cannot be decoded scaled or
// noScale is set. ApplyCrop then goes on with the same rng.
func PlanCrop(tf RegionTransform, h Header, rng *rand.Rand, noScale bool) Crop {
	src, w, ht := tf.Region(h.Width, h.Height, rng)
	c := Crop{Src: src, OutW: w, OutH: ht, Scale: 1}
	if h.Scalable && !noScale {
		c.Scale = DCTScale(src, w, ht)
	}
	return c
}

// ApplyCrop finishes a sample: tf's ApplyRegion of img, decoded at scale
// (the one DecodeScaled used), over c.Src, drawing the rest of the sample's
// random numbers from rng, into exactly one of f32 and u8. Its error names
// path.
func ApplyCrop(tf RegionTransform, img image.Image, scale int, c Crop, rng *rand.Rand, path string, f32 []float32, u8 []uint8) error {
	if err := tf.ApplyRegion(img, scale, c.Src, rng, f32, u8); err != nil {
		return fmt.Errorf("data: transforming %s: %w", path, err)
	}
	return nil
}
