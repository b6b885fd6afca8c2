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

// BenchmarkApplyRegion is the loader's path: the region drawn first, then
// the transform (jitter 0.4) on an image decoded at 1/scale, into float32
// or uint8, slot after slot of a batch of 64 as the loader writes them (at
// 224 px a float32 batch is 38 MB: one reused output would stay in cache).
// impl is the code: vector (AVX2 where the CPU has it), go (the pure-Go
// loops) or legacy (the code before the vector kernels, legacy_test.go).
func BenchmarkApplyRegion(b *testing.B) {
	for _, tc := range []struct {
		size, scale int
		dtype       string
	}{{64, 2, "float32"}, {64, 2, "uint8"}, {224, 1, "float32"}, {224, 1, "uint8"}} {
		for _, impl := range []string{"vector", "go", "legacy"} {
			b.Run(fmt.Sprintf("%d/1:%d/%s/%s", tc.size, tc.scale, tc.dtype, impl), func(b *testing.B) {
				img := testImage(256/tc.scale, 256/tc.scale)
				p := DefaultTrainParams(tc.size)
				p.Brightness, p.Contrast, p.Saturation = 0.4, 0.4, 0.4
				tr, err := NewTrain(p)
				if err != nil {
					b.Fatal(err)
				}
				const slots = 64
				sample := 3 * tc.size * tc.size
				var f32 []float32
				var u8 []uint8
				if tc.dtype == "uint8" {
					u8 = make([]uint8, slots*sample)
				} else {
					f32 = make([]float32, slots*sample)
				}
				rng := newRand(1)
				ls := &legacyScratch{}
				saved := useAVX2
				defer func() { useAVX2 = saved }()
				useAVX2 = impl == "vector" && hasAVX2
				b.ReportAllocs()
				k := 0
				for b.Loop() {
					var fs []float32
					var us []uint8
					if u8 != nil {
						us = u8[k*sample : (k+1)*sample]
					} else {
						fs = f32[k*sample : (k+1)*sample]
					}
					k = (k + 1) % slots
					src, _, _ := tr.Region(256, 256, rng)
					if impl == "legacy" {
						tr.legacyApplyRegion(ls, img, tc.scale, src, rng, fs, us)
					} else if err := tr.ApplyRegion(img, tc.scale, src, rng, fs, us); err != nil {
						b.Fatal(err)
					}
				}
				reportImgPerSec(b)
			})
		}
	}
}

func BenchmarkNormalizeU8(b *testing.B) {
	benchSizes(b, func(b *testing.B, size int) {
		src := make([]uint8, 64*3*size*size)
		dst := make([]float32, len(src))
		b.ReportAllocs()
		for b.Loop() {
			NormalizeU8(dst, src, size, ImageNetMean, ImageNetStd)
		}
		b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "img/s")
	})
}
