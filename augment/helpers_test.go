package augment

import (
	"image"
	"image/color"
	"math/rand/v2"
)

// transform is data.Transform, restated so the tests check that Train and
// Eval satisfy it without importing package data.
type transform interface {
	Size() int
	Apply(img image.Image, rng *rand.Rand, dst []float32) error
}

var (
	_ transform = (*Train)(nil)
	_ transform = (*Eval)(nil)
)

// testImage returns a w x h opaque image whose pixels differ from their
// neighbours in every channel, so a pixel in the wrong place shows.
func testImage(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetNRGBA(x, y, color.NRGBA{
				R: uint8(x*37 + y*11),
				G: uint8(x*5 + y*71 + 13),
				B: uint8(x*29 + y*3 + 101),
				A: 255,
			})
		}
	}
	return m
}

// at returns channel c of pixel (x, y) of a CHW plane set of side s.
func at(pix []float32, s, c, x, y int) float32 { return pix[c*s*s+y*s+x] }

// rgb01 returns the pixel (x, y) of m as floats in [0, 1].
func rgb01(m *image.NRGBA, x, y int) [3]float64 {
	c := m.NRGBAAt(x, y)
	return [3]float64{float64(c.R) / 255, float64(c.G) / 255, float64(c.B) / 255}
}

// identityParams gives a Train that keeps a size x size image as it is:
// whole-image crop, no flip, no jitter, no normalization.
func identityParams(size int) TrainParams {
	return TrainParams{
		Size:  size,
		Scale: [2]float64{1, 1},
		Ratio: [2]float64{1, 1},
		Std:   [3]float32{1, 1, 1},
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }
