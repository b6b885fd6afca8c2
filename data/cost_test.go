package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDecodeCostIsWhatDecodingAllocates checks the header-based estimate of
// a decode's memory against what image/jpeg and image/png really allocate
// (the Go heap: the file, the decoder's image, the RGB output), on images
// large enough for the pixels to dominate. The estimate must cover the
// allocations, less the decoders' fixed overhead (Huffman tables, zlib
// window: under 128 KiB), and not exceed them by more than a quarter.
func TestDecodeCostIsWhatDecodingAllocates(t *testing.T) {
	dir := t.TempDir()
	const w, h = 640, 480
	fill := func(img interface{ Set(x, y int, c color.Color) }, alpha bool) {
		for y := range h {
			for x := range w {
				a := uint8(255)
				if alpha {
					a = uint8(x + y)
				}
				img.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x ^ y), a})
			}
		}
	}
	gray := image.NewGray(image.Rect(0, 0, w, h))
	fill(gray, false)
	gray16 := image.NewGray16(image.Rect(0, 0, w, h))
	fill(gray16, false)
	rgb := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(rgb, false)
	nrgba := image.NewNRGBA(image.Rect(0, 0, w, h))
	fill(nrgba, true)
	rgb16 := image.NewRGBA64(image.Rect(0, 0, w, h))
	fill(rgb16, false)
	nrgba64 := image.NewNRGBA64(image.Rect(0, 0, w, h))
	fill(nrgba64, true)
	pal := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White, color.NRGBA{200, 10, 10, 255}})
	fill(pal, false)
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"gray.png", encodePNG(t, gray)},
		{"gray16.png", encodePNG(t, gray16)},
		{"rgb.png", encodePNG(t, rgb)},
		{"rgba.png", encodePNG(t, nrgba)},
		{"rgb16.png", encodePNG(t, rgb16)},
		{"rgba16.png", encodePNG(t, nrgba64)},
		{"palette.png", encodePNG(t, pal)},
		{"gray.jpg", encodeJPEG(t, gray)},
		{"ycbcr420.jpg", encodeJPEG(t, rgb)},
		{"rgb.jpg", fixture("rgb.jpg")},                         // cjpeg -rgb: image/jpeg converts it to RGBA
		{"progressive-444.jpg", fixture("progressive-444.jpg")}, // cjpeg -progressive -sample 1x1
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name, tc.b)
			d := Decoder{Kind: DecoderGo}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b, err := d.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			hd, err := d.DecodeHeader(p, b)
			if err == nil {
				_, _, err = d.DecodeScaled(p, b, hd, 1)
			}
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			got, est := int64(after.TotalAlloc-before.TotalAlloc), hd.need(false)
			t.Logf("%s (%s): estimate %d bytes, allocated %d (%.2fx)", tc.name, hd.cost.what(), est, got, float64(est)/float64(got))
			if est < got-128<<10 || float64(est) > 1.25*float64(got) {
				t.Errorf("%s: estimated %d bytes, image/jpeg or image/png allocated %d", tc.name, est, got)
			}
		})
	}
}

// TestToNRGBAFastPathsMatchTheColourModel: the conversions that skip
// color.NRGBAModel.Convert's per-pixel allocation give its pixels exactly,
// on random pixels (premultiplied ones kept valid, c <= a), at an origin
// other than (0, 0); and allocate nothing into a buffer large enough.
func TestToNRGBAFastPathsMatchTheColourModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rect := image.Rect(3, 2, 40, 31)
	u16 := func(max uint32) uint16 { return uint16(rng.Uint32N(max + 1)) }
	rgba := image.NewRGBA(rect)
	rgba64 := image.NewRGBA64(rect)
	nrgba64 := image.NewNRGBA64(rect)
	gray16 := image.NewGray16(rect)
	pal := image.NewPaletted(rect, color.Palette{color.RGBA{10, 20, 30, 255}, color.NRGBA{200, 100, 50, 77}, color.Alpha{0}, color.Gray16{999}})
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			a := uint8(rng.Uint32N(256))
			if x%5 == 0 {
				a = 255
			}
			rgba.SetRGBA(x, y, color.RGBA{uint8(rng.Uint32N(uint32(a) + 1)), uint8(rng.Uint32N(uint32(a) + 1)), uint8(rng.Uint32N(uint32(a) + 1)), a})
			a16 := u16(0xffff)
			rgba64.SetRGBA64(x, y, color.RGBA64{u16(uint32(a16)), u16(uint32(a16)), u16(uint32(a16)), a16})
			nrgba64.SetNRGBA64(x, y, color.NRGBA64{u16(0xffff), u16(0xffff), u16(0xffff), u16(0xffff)})
			gray16.SetGray16(x, y, color.Gray16{u16(0xffff)})
			pal.SetColorIndex(x, y, uint8(rng.Uint32N(4)))
		}
	}
	for _, src := range []image.Image{rgba, rgba64, nrgba64, gray16, pal} {
		got := toNRGBA(src, nil)
		for y := rect.Min.Y; y < rect.Max.Y; y++ {
			for x := rect.Min.X; x < rect.Max.X; x++ {
				want := color.NRGBAModel.Convert(src.At(x, y)).(color.NRGBA)
				want.A = 255
				if c := got.NRGBAAt(x-rect.Min.X, y-rect.Min.Y); c != want {
					t.Fatalf("%T at (%d,%d): %v, the colour model gives %v", src, x, y, c, want)
				}
			}
		}
		if n := testing.AllocsPerRun(3, func() { toNRGBA(src, got) }); n != 0 {
			t.Errorf("%T: %v allocations per conversion into a reused buffer", src, n)
		}
	}
}

// png16Header is a PNG signature and IHDR for a w x h 16-bit RGBA image
// (8 bytes a pixel once decoded), without pixel data.
func png16Header(w, h uint32) []byte {
	b := hugePNG(w, h)
	b[8+8+8], b[8+8+9] = 16, 6
	chunk := b[8+4 : 8+8+13]
	binary.BigEndian.PutUint32(b[8+8+13:], crc32.ChecksumIEEE(chunk))
	return b
}

// TestDecodeRefusesWhatWouldExceedItsMemoryBudget: a decode is refused from
// the header when its estimated memory exceeds the budget, with the file,
// the figure and the limit named, before its pixels are allocated; and
// the same header within a larger budget goes on to the pixels.
func TestDecodeRefusesWhatWouldExceedItsMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	// 7000x7000 = 49 M pixels, under the 50 M default; 12 bytes a pixel.
	p := writeFile(t, dir, "bomb16.png", png16Header(7000, 7000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(p, 0)
	runtime.ReadMemStats(&after)
	t.Logf("what the user sees: %v", err)
	var ie *ImageError
	if !errors.As(err, &ie) || ie.Path != p || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v, want an ErrTooLarge *ImageError for %s", err, p)
	}
	for _, say := range []string{"7000x7000", "16-bit RGBA", fmt.Sprint(DefaultMaxDecodeBytes), "max_decode_bytes"} {
		if !strings.Contains(err.Error(), say) {
			t.Errorf("error %q does not say %q", err, say)
		}
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("%d bytes allocated before refusing", got)
	}
	d := Decoder{MaxBytes: 1 << 30}
	if _, err := d.Decode(p); errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("within a 1 GiB budget: error %v, want the missing pixel data (ErrCorrupt)", err)
	}

	// A progressive JPEG of 640x480 needs 5.9 MB in image/jpeg (its
	// coefficients, 4 bytes a sample), 3.3 MB in libjpeg-turbo (2 bytes).
	prog, err := os.ReadFile(filepath.Join("testdata", "progressive-444.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	pp := writeFile(t, dir, "prog.jpg", prog)
	_, err = (&Decoder{Kind: DecoderGo, MaxBytes: 4 << 20}).Decode(pp)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "progressive") {
		t.Errorf("progressive JPEG in 4 MiB by image/jpeg: error %v, want ErrTooLarge naming it progressive", err)
	}
	if TurboAvailable() == nil {
		if _, err := (&Decoder{Kind: DecoderTurbo, MaxBytes: 4 << 20}).Decode(pp); err != nil {
			t.Errorf("progressive JPEG in 4 MiB by libjpeg-turbo: %v", err)
		}
	}
}

// TestTurboFallbackStaysWithinTheBudget: a JPEG that libjpeg-turbo accepts
// from its header, then refuses mid-scan, goes to image/jpeg only if
// image/jpeg's larger decode fits the budget too.
func TestTurboFallbackStaysWithinTheBudget(t *testing.T) {
	needTurbo(t)
	good := gradientJPEG(t, 64, 64)
	sos := bytes.Index(good, []byte{0xff, 0xda})
	cut := good[:sos+(len(good)-sos)/2]
	var d Decoder
	h, err := d.DecodeHeader("cut.jpg", cut)
	if err != nil {
		t.Fatal(err)
	}
	turboNeed, stdNeed := h.need(true), h.need(false)
	d = Decoder{MaxBytes: (turboNeed + stdNeed) / 2}
	h, err = d.DecodeHeader("cut.jpg", cut)
	if err != nil {
		t.Fatalf("budget %d, libjpeg-turbo needs %d: header refused: %v", d.MaxBytes, turboNeed, err)
	}
	_, _, err = d.DecodeScaled("cut.jpg", cut, h, 1)
	t.Logf("what the user sees: %v", err)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "libjpeg-turbo refused it") {
		t.Errorf("budget %d, image/jpeg needs %d: error %v, want ErrTooLarge after libjpeg-turbo's refusal", d.MaxBytes, stdNeed, err)
	}
	d = Decoder{MaxBytes: stdNeed}
	if h, err = d.DecodeHeader("cut.jpg", cut); err == nil {
		_, _, err = d.DecodeScaled("cut.jpg", cut, h, 1)
	}
	if errors.Is(err, ErrTooLarge) {
		t.Errorf("budget %d = image/jpeg's need: %v", d.MaxBytes, err)
	}
}

// TestMaxPixelsNearTheIntLimit: a pixel limit near 2^63 must not overflow
// the file-size limit (4 bytes a pixel): 2^61, 3 x 2^61 and MaxInt/4 made
// it negative, refusing every image; MaxInt made it 1 MiB.
func TestMaxPixelsNearTheIntLimit(t *testing.T) {
	p := writeFile(t, t.TempDir(), "ok.png", encodePNG(t, image.NewGray(image.Rect(0, 0, 8, 8))))
	for _, limit := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt / 4, 1 << 61, 3 << 61, MaxPixelsLimit + 1} {
		if _, err := Decode(p, limit); err != nil {
			t.Errorf("max pixels %d: %v", limit, err)
		}
	}
}

// TestDecodeHeaderAllocatesNothing: estimating a decode's memory is on the
// per-image path, so it must not allocate (messages are built on refusal
// only).
func TestDecodeHeaderAllocatesNothing(t *testing.T) {
	needTurbo(t) // image/jpeg's and image/png's DecodeConfig allocate
	jpg := gradientJPEG(t, 64, 64)
	prog, err := os.ReadFile(filepath.Join("testdata", "progressive-444.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	d := Decoder{Kind: DecoderTurbo}
	for name, b := range map[string][]byte{"baseline": jpg, "progressive": prog} {
		if _, err := d.DecodeHeader(name, b); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(10, func() { d.DecodeHeader(name, b) }); n != 0 {
			t.Errorf("%s JPEG: DecodeHeader allocates %v times", name, n)
		}
	}
}
