package augment

import (
	"image"
	"math"
	"testing"

	"github.com/disintegration/imaging"
)

// TestEvalCentreCrop checks Eval where the resize is the identity, so the
// output is a known window of the input, normalized.
func TestEvalCentreCrop(t *testing.T) {
	mean, std := [3]float32{0.1, 0.2, 0.3}, [3]float32{0.5, 0.25, 2}
	tests := []struct {
		name      string
		w, h      int
		size      int
		ratio     float64
		left, top int
	}{
		{"wide", 8, 6, 4, 4.0 / 6, 2, 1},
		// (9-4)/2 = 2.5: Python's round gives 2.
		{"odd margin, half to even", 9, 6, 4, 4.0 / 6, 2, 1},
		{"tall", 6, 9, 4, 4.0 / 6, 1, 2},
		{"default 224 of 256", 256, 256, 224, 0.875, 16, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := testImage(tt.w, tt.h)
			e, err := NewEval(EvalParams{Size: tt.size, ResizeRatio: tt.ratio, Mean: mean, Std: std})
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float32, 3*tt.size*tt.size)
			if err := e.Apply(img, nil, dst); err != nil {
				t.Fatal(err)
			}
			for y := range tt.size {
				for x := range tt.size {
					px := rgb01(img, tt.left+x, tt.top+y)
					for c := range 3 {
						want := (px[c] - float64(mean[c])) / float64(std[c])
						if d := math.Abs(float64(at(dst, tt.size, c, x, y)) - want); d > 1e-5 {
							t.Fatalf("channel %d at (%d,%d) = %.5f, want input (%d,%d): %.5f", c, x, y, at(dst, tt.size, c, x, y), tt.left+x, tt.top+y, want)
						}
					}
				}
			}
		})
	}
}

// TestEvalResize checks a real resize against imaging: 240x180 to Size 64
// resizes to 97x73 (torchvision truncates the long side) and crops at
// (16, 4): both offsets are x.5, rounded half to even.
func TestEvalResize(t *testing.T) {
	img := testImage(240, 180)
	e, err := NewEval(EvalParams{Size: 64, ResizeRatio: 0.875, Std: [3]float32{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 3*64*64)
	if err := e.Apply(img, nil, dst); err != nil {
		t.Fatal(err)
	}
	ref := imaging.Crop(imaging.Resize(img, 97, 73, imaging.Linear), image.Rect(16, 4, 80, 68))
	for y := range 64 {
		for x := range 64 {
			want := rgb01(ref, x, y)
			for c := range 3 {
				if d := math.Abs(float64(at(dst, 64, c, x, y)) - want[c]); d > 1.0/255+1e-5 {
					t.Fatalf("channel %d at (%d,%d) = %.4f, imaging %.4f", c, x, y, at(dst, 64, c, x, y), want[c])
				}
			}
		}
	}
}

func TestResizedSize(t *testing.T) {
	tests := []struct{ w, h, short, ww, wh int }{
		{240, 180, 73, 97, 73},
		{180, 240, 73, 73, 97},
		{500, 375, 256, 341, 256},
		{256, 256, 256, 256, 256},
		{300, 200, 73, 109, 73}, // 109.5 truncates, as torchvision's int()
	}
	for _, tt := range tests {
		if w, h := resizedSize(tt.w, tt.h, tt.short); w != tt.ww || h != tt.wh {
			t.Errorf("resizedSize(%d, %d, %d) = %d, %d; want %d, %d", tt.w, tt.h, tt.short, w, h, tt.ww, tt.wh)
		}
	}
}
