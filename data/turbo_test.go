package data

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"io"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"stoke/augment"
)

// needTurbo skips a test when libjpeg-turbo cannot be loaded.
func needTurbo(t testing.TB) {
	t.Helper()
	if err := TurboAvailable(); err != nil {
		t.Skipf("libjpeg-turbo is not installed, so its decoder is not tested (Debian: apt-get install libturbojpeg0): %v", err)
	}
}

// pixelDiff returns the mean and largest absolute difference between the
// RGB channels of two images of the same size, in levels of 255.
func pixelDiff(t *testing.T, a, b *image.NRGBA) (mean float64, worst int) {
	t.Helper()
	if a.Rect != b.Rect {
		t.Fatalf("sizes differ: %v and %v", a.Rect, b.Rect)
	}
	sum, n := 0, 0
	for i := range a.Pix {
		if i%4 == 3 {
			if a.Pix[i] != 255 || b.Pix[i] != 255 {
				t.Fatalf("alpha at byte %d is %d and %d, want 255", i, a.Pix[i], b.Pix[i])
			}
			continue
		}
		d := int(a.Pix[i]) - int(b.Pix[i])
		if d < 0 {
			d = -d
		}
		sum += d
		worst = max(worst, d)
		n++
	}
	return float64(sum) / float64(n), worst
}

// TestTurboMatchesGo decodes the same JPEGs with both decoders at full
// size. They differ by IDCT rounding and by chroma upsampling (image/jpeg
// replicates the 4:2:0 chroma samples; libjpeg-turbo interpolates them, as
// PIL sees them), so the bound is statistical. On these 24 px images of
// saturated shapes, where nearly every pixel is near a colour edge, the
// measured mean difference is 2 to 4.5 levels of 255 and the worst pixel
// 62 (at the edges, where the two upsamplings disagree most): the bounds
// are a mean of 6 and a worst pixel of 80. After the resize, batches agree
// far better (TestLoaderTurboMatchesGo).
func TestTurboMatchesGo(t *testing.T) {
	needTurbo(t)
	_, idx := testDataset(t)
	goDec := Decoder{Kind: DecoderGo}
	tjDec := Decoder{Kind: DecoderTurbo}
	if k, err := tjDec.Resolved(); err != nil || k != DecoderTurbo {
		t.Fatalf("turbo decoder resolved to %q, %v", k, err)
	}
	for _, s := range idx.Samples {
		g, err := goDec.Decode(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		gc := *g
		gc.Pix = append([]uint8(nil), g.Pix...)
		tj, err := tjDec.Decode(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		mean, worst := pixelDiff(t, &gc, tj)
		t.Logf("%s: mean |diff| %.3f, max %d", filepath.Base(s.Path), mean, worst)
		if mean > 6 || worst > 80 {
			t.Errorf("%s: turbo and image/jpeg differ by %.3f levels on average, %d at most", s.Path, mean, worst)
		}
	}
}

// TestTurboScaledSize checks the scaled decodes' sizes (rounded up, as
// TurboJPEG's TJSCALED) and that each is the full decode shrunk: its mean
// colour is the same within 2 levels.
func TestTurboScaledSize(t *testing.T) {
	needTurbo(t)
	_, idx := testDataset(t)
	d := Decoder{Kind: DecoderTurbo}
	path := idx.Samples[0].Path
	b, err := d.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.DecodeHeader(path, b)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Scalable || h.Format != "JPEG" {
		t.Fatalf("header %+v: want a scalable JPEG", h)
	}
	meanOf := func(m *image.NRGBA) (s [3]float64) {
		for i := 0; i < len(m.Pix); i += 4 {
			for c := range 3 {
				s[c] += float64(m.Pix[i+c])
			}
		}
		for c := range 3 {
			s[c] /= float64(len(m.Pix) / 4)
		}
		return s
	}
	var full [3]float64
	for _, k := range []int{1, 2, 4, 8} {
		img, used, err := d.DecodeScaled(path, b, h, k)
		if err != nil || used != k {
			t.Fatalf("scale 1/%d: used 1/%d, %v", k, used, err)
		}
		want := image.Rect(0, 0, (h.Width+k-1)/k, (h.Height+k-1)/k)
		if img.Rect != want {
			t.Fatalf("scale 1/%d: %v, want %v", k, img.Rect, want)
		}
		m := meanOf(img)
		if k == 1 {
			full = m
		}
		for c := range 3 {
			if math.Abs(m[c]-full[c]) > 2 {
				t.Errorf("scale 1/%d: channel %d mean %.2f, full size %.2f", k, c, m[c], full[c])
			}
		}
	}
}

func TestDCTScale(t *testing.T) {
	tests := []struct {
		w, h, out, want int
	}{
		{256, 256, 64, 4}, {255, 256, 64, 2}, {512, 512, 64, 8}, {600, 130, 64, 2},
		{127, 400, 64, 1}, {256, 256, 224, 1}, {448, 460, 224, 2},
	}
	for _, tt := range tests {
		if got := DCTScale(image.Rect(3, 5, 3+tt.w, 5+tt.h), tt.out, tt.out); got != tt.want {
			t.Errorf("DCTScale(%dx%d to %d) = %d, want %d", tt.w, tt.h, tt.out, got, tt.want)
		}
	}
}

// loadEpoch returns the epoch's batches, copied: X or U8, and labels.
func loadEpoch(t *testing.T, cfg LoaderConfig, epoch int) (xs [][]float32, us [][]uint8, labels [][]int32) {
	xs, us, labels, _ = loadEpochN(t, cfg, epoch)
	return xs, us, labels
}

// loadEpochN is loadEpoch that also returns each batch's N.
func loadEpochN(t *testing.T, cfg LoaderConfig, epoch int) (xs [][]float32, us [][]uint8, labels [][]int32, ns []int) {
	t.Helper()
	l, err := NewLoader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	it := l.Epoch(context.Background(), epoch)
	defer it.Close()
	for {
		b, err := it.Next()
		if err == io.EOF {
			return xs, us, labels, ns
		}
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, append([]float32(nil), b.X...))
		us = append(us, append([]uint8(nil), b.U8...))
		labels = append(labels, append([]int32(nil), b.Labels...))
		ns = append(ns, b.N)
		b.Release()
	}
}

// augmentCfg is a loader with the real training transform, jitter on, at
// an 8 px output: on the 24 px test images, crops of 16 px or more decode
// at 1/2 with libjpeg-turbo and smaller ones at full size, so both run.
func augmentCfg(t *testing.T, idx *Index) LoaderConfig {
	t.Helper()
	p := augment.DefaultTrainParams(8)
	p.Brightness, p.Contrast, p.Saturation = 0.4, 0.4, 0.4
	tr, err := augment.NewTrain(p)
	if err != nil {
		t.Fatal(err)
	}
	return LoaderConfig{Index: idx, Transform: tr, BatchSize: 4, Prefetch: 2, Shuffle: true, Seed: 9}
}

// TestLoaderRegionSameWhateverWorkers checks that batches of the real
// transform are bit-identical across worker counts, for each decoder and
// each batch type.
func TestLoaderRegionSameWhateverWorkers(t *testing.T) {
	_, idx := testDataset(t)
	for _, dec := range []string{DecoderGo, DecoderTurbo} {
		for _, dtype := range []string{DTypeFloat32, DTypeUint8} {
			t.Run(dec+"/"+dtype, func(t *testing.T) {
				if dec == DecoderTurbo {
					needTurbo(t)
				}
				cfg := augmentCfg(t, idx)
				cfg.Decoder, cfg.DType = dec, dtype
				wantX, wantU, wantL := loadEpoch(t, cfg, 1)
				for _, w := range []int{1, 3} {
					cfg.Workers = w
					x, u, l := loadEpoch(t, cfg, 1)
					for i := range wantL {
						if !equalBits(x[i], wantX[i]) || string(u[i]) != string(wantU[i]) || !slicesEqual(l[i], wantL[i]) {
							t.Fatalf("%d workers: batch %d differs from 0 workers", w, i)
						}
					}
				}
			})
		}
	}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLoaderUint8MatchesFloat32 checks that uint8 batches, normalized by
// augment.NormalizeU8, equal the float32 batches up to the uint8 rounding:
// half a level of 255, divided by std.
func TestLoaderUint8MatchesFloat32(t *testing.T) {
	_, idx := testDataset(t)
	cfg := augmentCfg(t, idx)
	cfg.Decoder = DecoderGo
	xs, _, _, ns := loadEpochN(t, cfg, 0)
	cfg.DType = DTypeUint8
	_, us, _ := loadEpoch(t, cfg, 0)
	p := cfg.Transform.(*augment.Train).Params()
	tol := 0.5/255/float64(min(p.Std[0], p.Std[1], p.Std[2])) + 1e-5
	for i := range xs {
		got := make([]float32, len(us[i]))
		augment.NormalizeU8(got, us[i], p.Size, p.Mean, p.Std)
		for j := range got[:ns[i]*3*p.Size*p.Size] {
			if d := math.Abs(float64(got[j] - xs[i][j])); d > tol {
				t.Fatalf("batch %d value %d: uint8 path %.5f, float32 path %.5f (tolerance %.5f)", i, j, got[j], xs[i][j], tol)
			}
		}
	}
}

// TestLoaderTurboMatchesGo compares whole epochs of the real transform,
// libjpeg-turbo with DCT scaling against image/jpeg at full size. Beyond
// the decoders' own differences (TestTurboMatchesGo), a crop decoded at
// 1/2 or 1/4 is resized from fewer pixels. In [0, 1] units before
// normalization, measured: mean 0.003 and worst 0.036 at full size, mean
// 0.005 and worst 0.08 with DCT scaling; the bounds are a mean of 0.01
// (2.5 levels of 255) and a worst value of 0.15.
func TestLoaderTurboMatchesGo(t *testing.T) {
	needTurbo(t)
	_, idx := testDataset(t)
	for _, noScale := range []bool{true, false} {
		cfg := augmentCfg(t, idx)
		cfg.NoDCTScale = noScale
		cfg.Decoder = DecoderGo
		gx, _, _ := loadEpoch(t, cfg, 0)
		cfg.Decoder = DecoderTurbo
		tx, _, _ := loadEpoch(t, cfg, 0)
		std := cfg.Transform.(*augment.Train).Params().Std
		plane := 8 * 8
		sum, n, worst := 0.0, 0, 0.0
		for i := range gx {
			for j := range gx[i] {
				c := (j / plane) % 3
				d := math.Abs(float64(gx[i][j]-tx[i][j])) * float64(std[c])
				sum += d
				worst = max(worst, d)
				n++
			}
		}
		t.Logf("no DCT scaling %v: mean |diff| %.4f, max %.4f (in [0, 1] units)", noScale, sum/float64(n), worst)
		if sum/float64(n) > 0.01 || worst > 0.15 {
			t.Errorf("no DCT scaling %v: turbo and image/jpeg batches differ by %.4f on average and %.4f at most; want at most 0.01 and 0.15", noScale, sum/float64(n), worst)
		}
	}
}

// gradientJPEG is a w x h JPEG of smooth gradients (4:2:0, as image/jpeg
// writes it), large enough that a cut can fall in its scan.
func gradientJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(4*x), uint8(4*y), uint8(x^y), 255
		}
	}
	return encodeJPEG(t, img)
}

// badJPEGs are broken versions of good: cut at every 7th byte (in the
// headers, the tables and the scan) and with 24 bytes of the scan
// overwritten at several places.
func badJPEGs(good []byte) map[string][]byte {
	bad := map[string][]byte{}
	for n := 2; n < len(good)-2; n += 7 {
		bad[fmt.Sprintf("cut at %d", n)] = good[:n]
	}
	sos := bytes.Index(good, []byte{0xff, 0xda})
	for _, at := range []int{sos + 20, (sos + len(good)) / 2, len(good) - 40} {
		b := bytes.Clone(good)
		for i := at; i < at+24; i++ {
			b[i] = byte(0x5a + 37*i)
		}
		bad[fmt.Sprintf("scan overwritten at %d", at)] = b
	}
	return bad
}

// decodeResult is what one file decodes to on a Decoder: the pixels, the
// decoder that made them, or the error.
type decodeResult struct {
	pix  []byte
	rect image.Rectangle
	used string
	err  string
}

func decodeOn(d *Decoder, path string, b []byte, scale int) decodeResult {
	h, err := d.DecodeHeader(path, b)
	if err != nil {
		return decodeResult{err: err.Error()}
	}
	img, _, err := d.DecodeScaled(path, b, h, scale)
	if err != nil {
		return decodeResult{err: err.Error()}
	}
	return decodeResult{pix: bytes.Clone(img.Pix), rect: img.Rect, used: d.used}
}

// TestTurboBadFileChangesNothingAfterIt: a truncated or corrupt JPEG must
// leave a Decoder's libjpeg-turbo handle as it found it. The next good
// image decodes to the same pixels, by libjpeg-turbo, as on a fresh
// Decoder; and a bad file decodes (or fails) the same after another bad
// file as on a fresh Decoder. libjpeg-turbo 2.1 leaves a handle that failed
// mid-file broken: without a reset the next header says 0x0, or the next
// image goes to image/jpeg at full size.
func TestTurboBadFileChangesNothingAfterIt(t *testing.T) {
	needTurbo(t)
	good := gradientJPEG(t, 64, 64)
	bad := badJPEGs(good)
	for _, scale := range []int{1, 2} {
		want := decodeOn(&Decoder{Kind: DecoderTurbo}, "good.jpg", good, scale)
		if want.err != "" || want.used != DecoderTurbo {
			t.Fatalf("scale 1/%d: a fresh Decoder gives %q by %q, want the pixels by libjpeg-turbo", scale, want.err, want.used)
		}
		names := slices.Sorted(maps.Keys(bad))
		for i, name := range names {
			d := Decoder{Kind: DecoderTurbo}
			prev := bad[names[(i+1)%len(names)]]
			decodeOn(&d, "prev.jpg", prev, scale)
			gotBad := decodeOn(&d, "bad.jpg", bad[name], scale)
			if wantBad := decodeOn(&Decoder{Kind: DecoderTurbo}, "bad.jpg", bad[name], scale); !reflect.DeepEqual(gotBad, wantBad) {
				t.Errorf("scale 1/%d, %s: after another bad file %q by %q, on a fresh Decoder %q by %q",
					scale, name, gotBad.err, gotBad.used, wantBad.err, wantBad.used)
			}
			got := decodeOn(&d, "good.jpg", good, scale)
			switch {
			case got.err != "":
				t.Errorf("scale 1/%d, after %s: the good image fails: %s", scale, name, got.err)
			case got.used != DecoderTurbo:
				t.Errorf("scale 1/%d, after %s: the good image went to %q, want %q", scale, name, got.used, DecoderTurbo)
			case !reflect.DeepEqual(got, want):
				t.Errorf("scale 1/%d, after %s: the good image's pixels differ from a fresh Decoder's", scale, name)
			}
		}
	}
}
