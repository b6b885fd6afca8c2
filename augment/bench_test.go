package augment

import (
	"fmt"
	"image"
	"testing"

	"github.com/disintegration/imaging"
)

// The benchmarks take a 256x256 image, the usual stored size, to 64 and 224
// pixels. Run them at -cpu 1 to see one worker's throughput: imaging's
// functions (the comparison) spread over GOMAXPROCS goroutines; ours do not.

func benchSizes(b *testing.B, run func(b *testing.B, size int)) {
	for _, size := range []int{64, 224} {
		b.Run(fmt.Sprint(size), func(b *testing.B) { run(b, size) })
	}
}

func reportImgPerSec(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "img/s")
}

func BenchmarkTrainApply(b *testing.B) {
	img := testImage(256, 256)
	for _, jit := range []float64{0, 0.4} {
		b.Run(fmt.Sprintf("jitter=%g", jit), func(b *testing.B) {
			benchSizes(b, func(b *testing.B, size int) {
				p := DefaultTrainParams(size)
				p.Brightness, p.Contrast, p.Saturation = jit, jit, jit
				tr, err := NewTrain(p)
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]float32, 3*size*size)
				rng := newRand(1)
				b.ReportAllocs()
				for b.Loop() {
					if err := tr.Apply(img, rng, dst); err != nil {
						b.Fatal(err)
					}
				}
				reportImgPerSec(b)
			})
		})
	}
}

func BenchmarkEvalApply(b *testing.B) {
	img := testImage(256, 256)
	benchSizes(b, func(b *testing.B, size int) {
		e, err := NewEval(DefaultEvalParams(size))
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]float32, 3*size*size)
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Apply(img, nil, dst); err != nil {
				b.Fatal(err)
			}
		}
		reportImgPerSec(b)
	})
}

// BenchmarkImagingCropResize is the alternative not taken: imaging.Crop and
// imaging.Resize(Linear) on the crop Train draws, then a copy into CHW
// floats (no jitter, no normalize).
func BenchmarkImagingCropResize(b *testing.B) {
	img := testImage(256, 256)
	benchSizes(b, func(b *testing.B, size int) {
		p := DefaultTrainParams(size)
		dst := make([]float32, 3*size*size)
		rng := newRand(1)
		b.ReportAllocs()
		for b.Loop() {
			crop := CropRect(256, 256, p.Scale, p.Ratio, rng)
			m := imaging.Resize(imaging.Crop(img, crop), size, size, imaging.Linear)
			toCHW(m, dst)
		}
		reportImgPerSec(b)
	})
}

func toCHW(m *image.NRGBA, dst []float32) {
	n := m.Rect.Dx() * m.Rect.Dy()
	for i := range n {
		for c := range 3 {
			dst[c*n+i] = float32(m.Pix[4*i+c]) * (1.0 / 255)
		}
	}
}
