package augment

import (
	"image"
	"math"
	"testing"
)

// TestApplyRegionUint8 checks that the uint8 output is the float output
// before normalization, rounded: round(255 v), exactly.
func TestApplyRegionUint8(t *testing.T) {
	img := testImage(90, 70)
	p := DefaultTrainParams(24)
	p.Brightness, p.Contrast, p.Saturation = 0.5, 0.5, 0.5
	p.Mean, p.Std = [3]float32{}, [3]float32{1, 1, 1}
	for _, jit := range []bool{false, true} {
		q := p
		if !jit {
			q.Brightness, q.Contrast, q.Saturation = 0, 0, 0
		}
		tr, err := NewTrain(q)
		if err != nil {
			t.Fatal(err)
		}
		f := make([]float32, 3*24*24)
		u := make([]uint8, 3*24*24)
		for seed := range uint64(20) {
			if err := tr.Apply(img, newRand(seed), f); err != nil {
				t.Fatal(err)
			}
			rng := newRand(seed)
			src, _, _ := tr.Region(90, 70, rng)
			if err := tr.ApplyRegion(img, 1, src, rng, nil, u); err != nil {
				t.Fatal(err)
			}
			for i := range f {
				if want := uint8(f[i]*255 + 0.5); u[i] != want {
					t.Fatalf("jitter %v seed %d value %d: uint8 %d, float %.5f rounds to %d", jit, seed, i, u[i], f[i], want)
				}
			}
		}
	}
}

// TestApplyRegionScaled checks the DCT-scaled path's geometry: the same
// crop, in full-size pixels, of a smooth image rendered at full and at
// half size (as a 1/2-scale decode delivers it) gives nearly the same
// output. A misplaced box would shift the gradients by far more than the
// bounds: a mean of 0.01 and a worst value of 0.05, in [0, 1] units.
func TestApplyRegionScaled(t *testing.T) {
	tr, err := NewTrain(identityParams(32))
	if err != nil {
		t.Fatal(err)
	}
	smooth := func(w, h int) *image.NRGBA {
		m := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				o := m.PixOffset(x, y)
				fx, fy := float64(x)/float64(w), float64(y)/float64(h)
				m.Pix[o] = uint8(255 * fx)
				m.Pix[o+1] = uint8(255 * fy)
				m.Pix[o+2] = uint8(127 + 127*math.Sin(6*fx+4*fy))
				m.Pix[o+3] = 255
			}
		}
		return m
	}
	big, small := smooth(256, 192), smooth(128, 96)
	src := image.Rect(40, 20, 200, 180)
	a := make([]float32, 3*32*32)
	b := make([]float32, 3*32*32)
	if err := tr.ApplyRegion(big, 1, src, newRand(1), a, nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.ApplyRegion(small, 2, src, newRand(1), b, nil); err != nil {
		t.Fatal(err)
	}
	sum, worst := 0.0, 0.0
	for i := range a {
		d := math.Abs(float64(a[i] - b[i]))
		sum += d
		worst = max(worst, d)
	}
	if mean := sum / float64(len(a)); mean > 0.01 || worst > 0.05 {
		t.Errorf("1/2-scale input differs from full size by %.4f on average, %.4f at most", mean, worst)
	}
}

func TestNormalizeU8(t *testing.T) {
	const size = 3
	src := make([]uint8, 2*3*size*size)
	for i := range src {
		src[i] = uint8(i * 37)
	}
	dst := make([]float32, len(src))
	NormalizeU8(dst, src, size, ImageNetMean, ImageNetStd)
	for i, u := range src {
		c := (i / (size * size)) % 3
		want := (float64(u)/255 - float64(ImageNetMean[c])) / float64(ImageNetStd[c])
		if d := math.Abs(float64(dst[i]) - want); d > 1e-6 {
			t.Fatalf("value %d (%d, channel %d) = %.7f, want %.7f", i, u, c, dst[i], want)
		}
	}
}

func TestApplyRegionChecks(t *testing.T) {
	tr, err := NewTrain(DefaultTrainParams(4))
	if err != nil {
		t.Fatal(err)
	}
	img := testImage(8, 8)
	f, u := make([]float32, 48), make([]uint8, 48)
	for _, tc := range []struct {
		name  string
		scale int
		f     []float32
		u     []uint8
	}{{"both outputs", 1, f, u}, {"no output", 1, nil, nil}, {"scale 3", 3, f, nil}, {"short uint8", 1, nil, u[:5]}} {
		if err := tr.ApplyRegion(img, tc.scale, image.Rect(0, 0, 8, 8), newRand(1), tc.f, tc.u); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
