package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// hugePNG is a valid PNG signature and IHDR claiming w x h pixels, with a
// correct CRC, and no pixel data after it.
func hugePNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// hugeJPEG patches the SOF0 frame header of a small JPEG to claim w x h.
func hugeJPEG(t testing.TB, w, h uint16) []byte {
	b := encodeJPEG(t, image.NewGray(image.Rect(0, 0, 8, 8)))
	i := bytes.Index(b, []byte{0xff, 0xc0})
	if i < 0 {
		t.Fatal("no SOF0 marker")
	}
	binary.BigEndian.PutUint16(b[i+5:], h)
	binary.BigEndian.PutUint16(b[i+7:], w)
	return b
}

func TestDecodeFormats(t *testing.T) {
	dir := t.TempDir()
	rgba := image.NewNRGBA(image.Rect(0, 0, 4, 3))
	for i := range rgba.Pix {
		rgba.Pix[i] = uint8(i * 7)
	}
	rgba.SetNRGBA(1, 1, color.NRGBA{200, 100, 50, 0}) // transparent: colour kept, alpha dropped
	gray := image.NewGray(image.Rect(0, 0, 16, 8))
	for i := range gray.Pix {
		gray.Pix[i] = 120
	}
	pal := image.NewPaletted(image.Rect(0, 0, 5, 5), color.Palette{color.RGBA{10, 20, 30, 255}, color.RGBA{250, 0, 0, 255}})
	pal.SetColorIndex(2, 2, 1)
	ycc := image.NewYCbCr(image.Rect(0, 0, 16, 16), image.YCbCrSubsampleRatio420)
	for i := range ycc.Y {
		ycc.Y[i] = 81 // pure red is Y=81 Cb=90 Cr=240 (JFIF)
	}
	for i := range ycc.Cb {
		ycc.Cb[i], ycc.Cr[i] = 90, 240
	}

	tests := []struct {
		name string
		data []byte
		w, h int
		x, y int
		want color.NRGBA
		tol  int
	}{
		{"png nrgba", encodePNG(t, rgba), 4, 3, 1, 1, color.NRGBA{200, 100, 50, 255}, 0},
		{"png gray", encodePNG(t, gray), 16, 8, 3, 3, color.NRGBA{120, 120, 120, 255}, 0},
		{"png paletted", encodePNG(t, pal), 5, 5, 2, 2, color.NRGBA{250, 0, 0, 255}, 0},
		{"jpeg gray", encodeJPEG(t, gray), 16, 8, 5, 5, color.NRGBA{120, 120, 120, 255}, 2},
		{"jpeg ycbcr", encodeJPEG(t, ycc), 16, 16, 7, 7, color.NRGBA{254, 0, 0, 255}, 24},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_"), tc.data)
			img, err := Decode(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			n, ok := img.(*image.NRGBA)
			if !ok {
				t.Fatalf("Decode returned %T, want *image.NRGBA", img)
			}
			if n.Rect != image.Rect(0, 0, tc.w, tc.h) {
				t.Errorf("bounds %v, want %dx%d at the origin", n.Rect, tc.w, tc.h)
			}
			got := n.NRGBAAt(tc.x, tc.y)
			d := max(absDiff(got.R, tc.want.R), absDiff(got.G, tc.want.G), absDiff(got.B, tc.want.B))
			if d > tc.tol || got.A != 255 {
				t.Errorf("pixel (%d,%d) = %v, want %v within %d", tc.x, tc.y, got, tc.want, tc.tol)
			}
			for i := 3; i < len(n.Pix); i += 4 {
				if n.Pix[i] != 255 {
					t.Fatalf("alpha %d at byte %d, want 255 everywhere", n.Pix[i], i)
				}
			}
		})
	}
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// The JPEG decoder yields CMYK for Adobe CMYK files, which Go cannot write,
// so the conversion is checked directly; premultiplied RGBA likewise.
func TestToNRGBAConversions(t *testing.T) {
	cmyk := image.NewCMYK(image.Rect(2, 3, 5, 6))
	cmyk.SetCMYK(3, 4, color.CMYK{10, 200, 30, 40})
	rgba := image.NewRGBA(image.Rect(0, 0, 2, 2))
	rgba.SetRGBA(1, 0, color.RGBA{50, 25, 0, 128}) // premultiplied: straight is ~(99, 49, 0)
	tests := []struct {
		name string
		src  image.Image
		x, y int
		want color.NRGBA
	}{
		{"cmyk", cmyk, 1, 1, func() color.NRGBA {
			r, g, b := color.CMYKToRGB(10, 200, 30, 40)
			return color.NRGBA{r, g, b, 255}
		}()},
		{"rgba premultiplied", rgba, 1, 0, color.NRGBA{99, 49, 0, 255}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := toNRGBA(tc.src, nil)
			if got.Rect.Min != (image.Point{}) {
				t.Errorf("origin %v, want (0,0)", got.Rect.Min)
			}
			if c := got.NRGBAAt(tc.x, tc.y); c != tc.want {
				t.Errorf("pixel = %v, want %v", c, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	dir := t.TempDir()
	good := encodeJPEG(t, image.NewGray(image.Rect(0, 0, 64, 64)))
	tests := []struct {
		name      string
		data      []byte // nil: no file is written
		path      string // when data is nil
		maxPixels int
		want      error
		say       string
	}{
		{name: "truncated.jpg", data: good[:len(good)/2], want: ErrCorrupt, say: "truncated"},
		{name: "zero.jpg", data: []byte{}, want: ErrEmptyFile, say: "empty"},
		{name: "text.jpg", data: []byte("hello, I am not a picture"), want: ErrUnsupported, say: "hello"},
		{name: "gif.png", data: []byte("GIF89a\x01\x00\x01\x00"), want: ErrUnsupported, say: "GIF89a"},
		{name: "huge.png", data: hugePNG(60000, 60000), want: ErrTooLarge, say: "60000x60000"},
		{name: "huge.jpg", data: hugeJPEG(t, 60000, 60000), want: ErrTooLarge, say: "60000x60000"},
		{name: "over limit.jpg", data: good, maxPixels: 64*64 - 1, want: ErrTooLarge, say: "limit of 4095"},
		{name: "garbage after soi.jpg", data: append([]byte{0xff, 0xd8}, bytes.Repeat([]byte{0x42}, 100)...), want: ErrCorrupt},
		{name: "missing", path: "does-not-exist.jpg", want: fs.ErrNotExist, say: "does-not-exist.jpg"},
		{name: "a folder", path: ".", want: ErrUnreadable, say: "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.path)
			if tc.data != nil {
				p = writeFile(t, dir, tc.name, tc.data)
			}
			img, err := Decode(p, tc.maxPixels)
			if err == nil {
				t.Fatalf("Decode succeeded (%v), want an error", img.Bounds())
			}
			if img != nil {
				t.Errorf("Decode returned a non-nil image with error %v", err)
			}
			var ie *ImageError
			if !errors.As(err, &ie) || ie.Path != p {
				t.Errorf("error %v is not an *ImageError for %s", err, p)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v does not wrap %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("error %q should name %s and say %q", err, p, tc.say)
			}
		})
	}
}

// A header claiming 60000x60000 (3.6 gigapixels, 14 GB as NRGBA) must be
// refused before any pixel memory is allocated.
func TestDecodeRefusesBeforeAllocating(t *testing.T) {
	dir := t.TempDir()
	for name, b := range map[string][]byte{"huge.png": hugePNG(60000, 60000), "huge.jpg": hugeJPEG(t, 60000, 60000)} {
		p := writeFile(t, dir, name, b)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decode(p, 0)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: err = %v, want ErrTooLarge", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("%s: Decode allocated %d bytes before refusing", name, got)
		}
	}
}

func TestDecoderReuse(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.png", encodePNG(t, image.NewGray(image.Rect(0, 0, 8, 8))))
	b := writeFile(t, dir, "b.png", encodePNG(t, image.NewGray(image.Rect(0, 0, 4, 2))))
	var d Decoder
	first, err := d.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	second, err := d.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if &first.Pix[0] != &second.Pix[0] || second.Rect.Dx() != 4 || second.Rect.Dy() != 2 || second.Stride != 16 {
		t.Errorf("Decoder did not reuse its output: %v stride %d", second.Rect, second.Stride)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encodeJPEG(f, image.NewGray(image.Rect(0, 0, 8, 8))))
	f.Add(encodePNG(f, image.NewNRGBA(image.Rect(0, 0, 3, 3))))
	f.Add(hugePNG(1, 1))
	f.Add([]byte{0xff, 0xd8, 0xff})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "x.jpg")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		img, err := Decode(p, 1<<20)
		if err != nil {
			var ie *ImageError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *ImageError", err)
			}
			return
		}
		if _, ok := img.(*image.NRGBA); !ok {
			t.Fatalf("Decode returned %T", img)
		}
	})
}
