package augment

import (
	"image"
	"math"
	"sync"
	"testing"

	"github.com/disintegration/imaging"
)

// TestTrainFlip checks that HFlip=1 mirrors the output and HFlip=0 leaves it.
func TestTrainFlip(t *testing.T) {
	const size = 8
	img := testImage(size, size)
	for _, tt := range []struct {
		name  string
		hflip float64
	}{{"always", 1}, {"never", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			p := identityParams(size)
			p.HFlip = tt.hflip
			tr, err := NewTrain(p)
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float32, 3*size*size)
			for seed := range uint64(5) {
				if err := tr.Apply(img, newRand(seed), dst); err != nil {
					t.Fatal(err)
				}
				for y := range size {
					for x := range size {
						sx := x
						if tt.hflip == 1 {
							sx = size - 1 - x
						}
						want := rgb01(img, sx, y)
						for c := range 3 {
							if d := math.Abs(float64(at(dst, size, c, x, y)) - want[c]); d > 1e-6 {
								t.Fatalf("seed %d: channel %d at (%d,%d) = %.5f, want pixel (%d,%d) = %.5f", seed, c, x, y, at(dst, size, c, x, y), sx, y, want[c])
							}
						}
					}
				}
			}
		})
	}
}

// TestTrainMatchesImaging replays the crop and flip draws and checks the
// whole geometry against imaging's Crop, Resize (Linear) and FlipH.
func TestTrainMatchesImaging(t *testing.T) {
	img := testImage(120, 90)
	p := DefaultTrainParams(40)
	p.Mean, p.Std = [3]float32{}, [3]float32{1, 1, 1}
	tr, err := NewTrain(p)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 3*40*40)
	flips := 0
	for seed := range uint64(20) {
		if err := tr.Apply(img, newRand(seed), dst); err != nil {
			t.Fatal(err)
		}
		rng := newRand(seed)
		crop := CropRect(120, 90, p.Scale, p.Ratio, rng)
		ref := imaging.Resize(imaging.Crop(img, crop), 40, 40, imaging.Linear)
		if rng.Float64() < p.HFlip {
			ref = imaging.FlipH(ref)
			flips++
		}
		for y := range 40 {
			for x := range 40 {
				want := rgb01(ref, x, y)
				for c := range 3 {
					if d := math.Abs(float64(at(dst, 40, c, x, y)) - want[c]); d > 1.0/255+1e-5 {
						t.Fatalf("seed %d crop %v: channel %d at (%d,%d) = %.4f, imaging %.4f", seed, crop, c, x, y, at(dst, 40, c, x, y), want[c])
					}
				}
			}
		}
	}
	if flips == 0 || flips == 20 {
		t.Errorf("%d of 20 samples flipped with HFlip 0.5", flips)
	}
}

func TestTrainDeterminism(t *testing.T) {
	p := DefaultTrainParams(32)
	p.Brightness, p.Contrast, p.Saturation = 0.4, 0.4, 0.4
	tr, err := NewTrain(p)
	if err != nil {
		t.Fatal(err)
	}
	img := testImage(64, 48)
	run := func(seed uint64) []float32 {
		dst := make([]float32, 3*32*32)
		if err := tr.Apply(img, newRand(seed), dst); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	const seeds = 8
	outs := make([][]float32, seeds)
	for s := range outs {
		outs[s] = run(uint64(s))
		again := run(uint64(s))
		for i := range again {
			if math.Float32bits(again[i]) != math.Float32bits(outs[s][i]) {
				t.Fatalf("seed %d: value %d differs between runs: %v, %v", s, i, again[i], outs[s][i])
			}
		}
	}
	for a := range outs {
		for b := a + 1; b < seeds; b++ {
			if equalBits(outs[a], outs[b]) {
				t.Errorf("seeds %d and %d give the same output", a, b)
			}
		}
	}

	// Several goroutines sharing tr, each with its own rng, give the same
	// bits as the sequential runs (and -race sees no race).
	var wg sync.WaitGroup
	for s := range seeds {
		wg.Go(func() {
			dst := make([]float32, 3*32*32)
			for range 10 {
				if err := tr.Apply(img, newRand(uint64(s)), dst); err != nil {
					t.Error(err)
					return
				}
				if !equalBits(dst, outs[s]) {
					t.Errorf("seed %d: concurrent output differs from sequential", s)
					return
				}
			}
		})
	}
	wg.Wait()
}

func equalBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestTrainNormalize checks (v - mean) / std per channel on a constant image.
func TestTrainNormalize(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 5, 7))
	for i := 0; i < len(img.Pix); i += 4 {
		copy(img.Pix[i:], []uint8{51, 102, 204, 255}) // 0.2, 0.4, 0.8
	}
	p := DefaultTrainParams(4)
	tr, err := NewTrain(p)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 3*4*4)
	if err := tr.Apply(img, newRand(1), dst); err != nil {
		t.Fatal(err)
	}
	want := [3]float64{(0.2 - 0.485) / 0.229, (0.4 - 0.456) / 0.224, (0.8 - 0.406) / 0.225}
	for c := range 3 {
		for i := range 16 {
			if d := math.Abs(float64(dst[c*16+i]) - want[c]); d > 1e-5 {
				t.Fatalf("channel %d value %d = %.6f, want %.6f", c, i, dst[c*16+i], want[c])
			}
		}
	}
}
