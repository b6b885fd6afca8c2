package augment

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"testing"

	"github.com/disintegration/imaging"
)

// TestAxis checks the filter taps against Pillow's bilinear coefficients,
// worked by hand from libImaging/Resample.c's precompute_coeffs (less the
// zero-weight end taps, which are dropped).
func TestAxis(t *testing.T) {
	type taps struct {
		start int
		w     []float32
	}
	tests := []struct {
		name    string
		in, out int
		want    []taps
	}{
		{"identity", 3, 3, []taps{{0, []float32{1}}, {1, []float32{1}}, {2, []float32{1}}}},
		// Halving: the interior kernel is [1 3 3 1]/8; the edges lose a tap.
		{"downscale 2x", 8, 4, []taps{
			{0, []float32{3. / 7, 3. / 7, 1. / 7}},
			{1, []float32{1. / 8, 3. / 8, 3. / 8, 1. / 8}},
			{3, []float32{1. / 8, 3. / 8, 3. / 8, 1. / 8}},
			{5, []float32{1. / 7, 3. / 7, 3. / 7}},
		}},
		// Doubling: a, 3/4 a + 1/4 b, 1/4 a + 3/4 b, b.
		{"upscale 2x", 2, 4, []taps{{0, []float32{1}}, {0, []float32{.75, .25}}, {0, []float32{.25, .75}}, {1, []float32{1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a axis
			a.compute(tt.in, tt.out, 0, tt.out)
			for i, want := range tt.want {
				got := a.w[i*a.k : i*a.k+int(a.n[i])]
				if int(a.start[i]) != want.start || len(got) != len(want.w) {
					t.Fatalf("output %d: taps from %d, %v; want from %d, %v", i, a.start[i], got, want.start, want.w)
				}
				for j := range got {
					if math.Abs(float64(got[j]-want.w[j])) > 1e-7 {
						t.Fatalf("output %d: weights %v, want %v", i, got, want.w)
					}
				}
			}
		})
	}
}

// TestResampleMatchesImaging checks the crop + resize against imaging.Crop
// and imaging.Resize with imaging.Linear, an independent implementation of
// the same filter that rounds to uint8 after each pass.
func TestResampleMatchesImaging(t *testing.T) {
	img := testImage(97, 61)
	tests := []struct {
		crop image.Rectangle
		size int
	}{
		{image.Rect(0, 0, 97, 61), 32},   // shrink, unequal factors
		{image.Rect(10, 5, 50, 45), 13},  // shrink 3x
		{image.Rect(30, 20, 37, 29), 40}, // enlarge
		{image.Rect(0, 0, 97, 61), 97},   // stretch one side
	}
	for _, tt := range tests {
		dst := make([]float32, 3*tt.size*tt.size)
		resample(img, tt.crop, tt.size, tt.size, image.Rect(0, 0, tt.size, tt.size), false, dst)
		ref := imaging.Resize(imaging.Crop(img, tt.crop), tt.size, tt.size, imaging.Linear)
		// imaging rounds to uint8 twice: half a level each time.
		const tol = 1.0/255 + 1e-5
		for y := range tt.size {
			for x := range tt.size {
				want := rgb01(ref, x, y)
				for c := range 3 {
					if d := math.Abs(float64(at(dst, tt.size, c, x, y)) - want[c]); d > tol {
						t.Fatalf("crop %v to %d: channel %d at (%d,%d) = %.4f, imaging %.4f", tt.crop, tt.size, c, x, y, at(dst, tt.size, c, x, y), want[c])
					}
				}
			}
		}
	}
}

// TestImageTypes checks that every decoded-image type reads as the same
// colours as their *image.NRGBA copy, including a sub-image whose bounds do
// not start at (0, 0).
func TestImageTypes(t *testing.T) {
	const w, h = 40, 30
	src := testImage(w, h)

	rgba := image.NewRGBA(src.Bounds())
	draw.Draw(rgba, rgba.Bounds(), src, image.Point{}, draw.Src)
	ycc := image.NewYCbCr(src.Bounds(), image.YCbCrSubsampleRatio420)
	for y := range h {
		for x := range w {
			c := src.NRGBAAt(x, y)
			yy, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
			ycc.Y[ycc.YOffset(x, y)] = yy
			ci := ycc.COffset(x, y)
			ycc.Cb[ci], ycc.Cr[ci] = cb, cr
		}
	}
	gray := image.NewGray(src.Bounds())
	draw.Draw(gray, gray.Bounds(), src, image.Point{}, draw.Src)
	paletted := image.NewPaletted(src.Bounds(), nil)
	pal := map[color.NRGBA]uint8{}
	for y := range h {
		for x := range w {
			c := src.NRGBAAt(x, y)
			if _, ok := pal[c]; !ok && len(pal) < 256 {
				pal[c] = uint8(len(pal))
				paletted.Palette = append(paletted.Palette, c)
			}
		}
	}
	draw.Draw(paletted, paletted.Bounds(), src, image.Point{}, draw.Src)
	big := testImage(w+20, h+10)
	sub := big.SubImage(image.Rect(20, 10, w+20, h+10))

	tests := []struct {
		name string
		img  image.Image
	}{
		{"RGBA", rgba}, {"YCbCr", ycc}, {"Gray", gray}, {"Paletted (generic)", paletted}, {"NRGBA sub-image", sub},
	}
	eval, err := NewEval(EvalParams{Size: 16, ResizeRatio: 0.8, Std: [3]float32{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The reference: the same image drawn into an NRGBA at (0, 0).
			ref := image.NewNRGBA(image.Rect(0, 0, w, h))
			draw.Draw(ref, ref.Bounds(), tt.img, tt.img.Bounds().Min, draw.Src)
			want := make([]float32, 3*16*16)
			got := make([]float32, 3*16*16)
			if err := eval.Apply(ref, nil, want); err != nil {
				t.Fatal(err)
			}
			if err := eval.Apply(tt.img, nil, got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				// Go's own conversions and ours may round differently
				// by one level.
				if d := math.Abs(float64(got[i] - want[i])); d > 1.0/255+1e-6 {
					t.Fatalf("value %d = %.4f, want %.4f", i, got[i], want[i])
				}
			}
		})
	}
}
