package data

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"stoke/augment"
)

// The stage benchmarks read 256x256 q90 JPEGs, the reference set:
// go test -run XXX -bench . -cpu 1 ./data/ (allocs/op is per image for the
// stages and per batch for the loader).

var (
	benchSetOnce sync.Once
	benchSetDir  string
	benchSetErr  error
)

func benchDataset(b *testing.B) *Index {
	b.Helper()
	benchSetOnce.Do(func() {
		benchSetDir, benchSetErr = os.MkdirTemp("", "stoke-data-bench-")
		if benchSetErr == nil {
			benchSetErr = Generate(filepath.Join(benchSetDir, "ds"), SynthOptions{Classes: 4, Train: 32, Val: 1, Size: 256, Seed: 3, Quality: 90})
		}
	})
	if benchSetErr != nil {
		b.Fatal(benchSetErr)
	}
	idx, _, err := Scan(filepath.Join(benchSetDir, "ds"))
	if err != nil {
		b.Fatal(err)
	}
	return idx
}

func reportImgPerSec(b *testing.B, imagesPerOp int) {
	b.ReportMetric(float64(b.N*imagesPerOp)/b.Elapsed().Seconds(), "img/s")
}

func BenchmarkReadFile(b *testing.B) {
	idx := benchDataset(b)
	var d Decoder
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := d.ReadFile(idx.Samples[i%len(idx.Samples)].Path); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportImgPerSec(b, 1)
}

// BenchmarkDecode is header + pixels from bytes in memory, per decoder and
// DCT scale (image/jpeg has only 1/1).
func BenchmarkDecode(b *testing.B) {
	idx := benchDataset(b)
	files := make([][]byte, len(idx.Samples))
	for i, s := range idx.Samples {
		var err error
		if files[i], err = os.ReadFile(s.Path); err != nil {
			b.Fatal(err)
		}
	}
	for _, kind := range []string{DecoderGo, DecoderTurbo} {
		for _, scale := range []int{1, 2, 4, 8} {
			if kind == DecoderGo && scale > 1 {
				continue
			}
			b.Run(fmt.Sprintf("%s/1:%d", kind, scale), func(b *testing.B) {
				if kind == DecoderTurbo {
					needTurbo(b)
				}
				d := Decoder{Kind: kind}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					f := files[i%len(files)]
					h, err := d.DecodeHeader("bench", f)
					if err == nil {
						_, _, err = d.DecodeScaled("bench", f, h, scale)
					}
					if err != nil {
						b.Fatal(err)
					}
					i++
				}
				reportImgPerSec(b, 1)
			})
		}
	}
}

// BenchmarkLoaderTrain is the whole loader at 0 workers (one core), with
// the real training transform: allocs/op
// is per batch of 64, across epochs (each new epoch's Iter allocates a few
// hundred bytes).
func BenchmarkLoaderTrain(b *testing.B) {
	idx := benchDataset(b)
	for _, kind := range []string{DecoderGo, DecoderTurbo} {
		for _, size := range []int{64, 224} {
			for _, dtype := range []string{DTypeFloat32, DTypeUint8} {
				b.Run(fmt.Sprintf("%s/%d/%s", kind, size, dtype), func(b *testing.B) {
					if kind == DecoderTurbo {
						needTurbo(b)
					}
					p := augment.DefaultTrainParams(size)
					p.Brightness, p.Contrast, p.Saturation = 0.4, 0.4, 0.4
					tr, err := augment.NewTrain(p)
					if err != nil {
						b.Fatal(err)
					}
					l, err := NewLoader(LoaderConfig{Index: idx, Transform: tr, BatchSize: 64, Shuffle: true, Seed: 1, Decoder: kind, DType: dtype, DropLast: true})
					if err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					epoch := 0
					it := l.Epoch(context.Background(), epoch)
					b.ReportAllocs()
					for b.Loop() {
						bt, err := it.Next()
						if err == io.EOF {
							it.Close()
							epoch++
							it = l.Epoch(context.Background(), epoch)
							bt, err = it.Next()
						}
						if err != nil {
							b.Fatal(err)
						}
						bt.Release()
					}
					it.Close()
					reportImgPerSec(b, 64)
				})
			}
		}
	}
}

// BenchmarkDecodeAfterBadFile is BenchmarkDecode's libjpeg-turbo 1:1 on a
// Decoder that first met a truncated JPEG: it must run as fast as on a
// fresh one ("fresh"), by libjpeg-turbo (it fails if an image goes to
// image/jpeg or is refused).
func BenchmarkDecodeAfterBadFile(b *testing.B) {
	idx := benchDataset(b)
	files := make([][]byte, len(idx.Samples))
	for i, s := range idx.Samples {
		var err error
		if files[i], err = os.ReadFile(s.Path); err != nil {
			b.Fatal(err)
		}
	}
	for _, after := range []string{"fresh", "after-truncated"} {
		b.Run(after, func(b *testing.B) {
			needTurbo(b)
			d := Decoder{Kind: DecoderTurbo}
			if after != "fresh" {
				// Cut in the Huffman tables: where libjpeg-turbo 2.1 left the
				// handle broken.
				cut := files[0][:bytes.Index(files[0], []byte{0xff, 0xda})-30]
				if h, err := d.DecodeHeader("cut", cut); err == nil {
					d.DecodeScaled("cut", cut, h, 1)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f := files[i%len(files)]
				h, err := d.DecodeHeader("bench", f)
				if err == nil {
					_, _, err = d.DecodeScaled("bench", f, h, 1)
				}
				if err != nil {
					b.Fatal(err)
				}
				if d.used != DecoderTurbo {
					b.Fatalf("image %d decoded by %s", i, d.used)
				}
				i++
			}
			reportImgPerSec(b, 1)
		})
	}
}
