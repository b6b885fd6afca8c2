package data

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"os"
)

// DefaultMaxPixels is the size limit Decode applies when given 0: 50
// megapixels, about 200 MB once decoded, far above any training image.
const DefaultMaxPixels = 50_000_000

// The kinds of bad image, wrapped by ImageError. Match them with errors.Is.
var (
	ErrEmptyFile   = errors.New("file is empty (zero bytes)")
	ErrUnsupported = errors.New("unsupported image format (only JPEG and PNG are read)")
	ErrCorrupt     = errors.New("corrupt or truncated image")
	ErrTooLarge    = errors.New("image too large")
	ErrUnreadable  = errors.New("cannot read file")
)

// ImageError is an image that could not be loaded: the file and what is
// wrong with it. Err wraps one of ErrEmptyFile, ErrUnsupported, ErrCorrupt,
// ErrTooLarge or ErrUnreadable (or a Transform's error, in the Loader).
type ImageError struct {
	Path string
	Err  error
}

func (e *ImageError) Error() string { return "data: image " + e.Path + ": " + e.Err.Error() }
func (e *ImageError) Unwrap() error { return e.Err }

// Decode reads a JPEG (baseline or progressive; YCbCr, grayscale or CMYK)
// or PNG file and returns its pixels as RGB in an *image.NRGBA with origin
// (0, 0) and alpha 255 (any alpha channel is dropped, as PIL's
// convert("RGB") does). The header is checked first: an image of more than
// maxPixels pixels (0 = DefaultMaxPixels) is refused before its pixels are
// allocated. Every error is an *ImageError naming the file.
func Decode(path string, maxPixels int) (image.Image, error) {
	d := Decoder{MaxPixels: maxPixels}
	img, err := d.Decode(path)
	if err != nil {
		return nil, err
	}
	return img, nil
}

// Decoder is Decode with buffers kept between calls: the file bytes and the
// output image are reused, so the image it returns is valid only until the
// next call. A Decoder is not safe for concurrent use; give each goroutine
// its own. The zero value is ready to use.
type Decoder struct {
	MaxPixels int // 0 = DefaultMaxPixels

	file []byte
	rd   bytes.Reader
	out  *image.NRGBA
}

// Decode is the package-level Decode, reusing d's buffers.
func (d *Decoder) Decode(path string) (img *image.NRGBA, err error) {
	b, err := d.read(path)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, &ImageError{path, ErrEmptyFile}
	}
	var decodeConfig func(io.Reader) (image.Config, error)
	var decode func(io.Reader) (image.Image, error)
	var format string
	switch {
	case bytes.HasPrefix(b, []byte{0xff, 0xd8}):
		format, decodeConfig, decode = "JPEG", jpeg.DecodeConfig, jpeg.Decode
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		format, decodeConfig, decode = "PNG", png.DecodeConfig, png.Decode
	default:
		return nil, &ImageError{path, fmt.Errorf("%w: content starts with %q", ErrUnsupported, b[:min(len(b), 8)])}
	}
	// The decoders themselves are the last line of defence; a panic inside
	// one is a broken file, not a broken program.
	defer func() {
		if r := recover(); r != nil {
			img, err = nil, &ImageError{path, fmt.Errorf("%w: %s decoder panicked: %v", ErrCorrupt, format, r)}
		}
	}()
	d.rd.Reset(b)
	cfg, err := decodeConfig(&d.rd)
	if err != nil {
		return nil, &ImageError{path, decodeErr(format, err)}
	}
	limit := d.MaxPixels
	if limit <= 0 {
		limit = DefaultMaxPixels
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, &ImageError{path, fmt.Errorf("%w: %s header says %dx%d", ErrCorrupt, format, cfg.Width, cfg.Height)}
	}
	if int64(cfg.Width)*int64(cfg.Height) > int64(limit) {
		return nil, &ImageError{path, fmt.Errorf("%w: %s of %dx%d = %d pixels exceeds the limit of %d (max_pixels)",
			ErrTooLarge, format, cfg.Width, cfg.Height, int64(cfg.Width)*int64(cfg.Height), limit)}
	}
	d.rd.Reset(b)
	src, err := decode(&d.rd)
	if err != nil {
		return nil, &ImageError{path, decodeErr(format, err)}
	}
	d.out = toNRGBA(src, d.out)
	return d.out, nil
}

func (d *Decoder) read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ImageError{path, fmt.Errorf("%w: %w", ErrUnreadable, err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &ImageError{path, fmt.Errorf("%w: %w", ErrUnreadable, err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, &ImageError{path, fmt.Errorf("%w: not a regular file (%s)", ErrUnreadable, fi.Mode().Type())}
	}
	n := int(fi.Size())
	if cap(d.file) < n {
		d.file = make([]byte, n)
	}
	d.file = d.file[:n]
	if _, err := io.ReadFull(f, d.file); err != nil {
		return nil, &ImageError{path, fmt.Errorf("%w: %w", ErrUnreadable, err)}
	}
	return d.file, nil
}

func decodeErr(format string, err error) error {
	switch err.(type) {
	case jpeg.UnsupportedError, png.UnsupportedError:
		return fmt.Errorf("%w: %s feature not supported: %v", ErrUnsupported, format, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s data ends early (truncated file)", ErrCorrupt, format)
	}
	return fmt.Errorf("%w: %s: %v", ErrCorrupt, format, err)
}

// toNRGBA converts src to opaque RGB in an NRGBA with origin (0, 0),
// reusing dst's pixels when they are large enough.
func toNRGBA(src image.Image, dst *image.NRGBA) *image.NRGBA {
	r := src.Bounds()
	w, h := r.Dx(), r.Dy()
	if dst == nil || cap(dst.Pix) < 4*w*h {
		dst = &image.NRGBA{Pix: make([]uint8, 4*w*h)}
	}
	dst.Pix = dst.Pix[:4*w*h]
	dst.Stride = 4 * w
	dst.Rect = image.Rect(0, 0, w, h)
	pix := dst.Pix
	switch s := src.(type) {
	case *image.YCbCr:
		for y := 0; y < h; y++ {
			o := y * dst.Stride
			for x := 0; x < w; x++ {
				yi := s.YOffset(r.Min.X+x, r.Min.Y+y)
				ci := s.COffset(r.Min.X+x, r.Min.Y+y)
				pix[o], pix[o+1], pix[o+2] = color.YCbCrToRGB(s.Y[yi], s.Cb[ci], s.Cr[ci])
				pix[o+3] = 255
				o += 4
			}
		}
	case *image.Gray:
		for y := 0; y < h; y++ {
			row := s.Pix[y*s.Stride : y*s.Stride+w]
			o := y * dst.Stride
			for _, g := range row {
				pix[o], pix[o+1], pix[o+2], pix[o+3] = g, g, g, 255
				o += 4
			}
		}
	case *image.CMYK:
		for y := 0; y < h; y++ {
			i := y * s.Stride
			o := y * dst.Stride
			for x := 0; x < w; x++ {
				pix[o], pix[o+1], pix[o+2] = color.CMYKToRGB(s.Pix[i], s.Pix[i+1], s.Pix[i+2], s.Pix[i+3])
				pix[o+3] = 255
				i += 4
				o += 4
			}
		}
	case *image.NRGBA:
		for y := 0; y < h; y++ {
			o := y * dst.Stride
			copy(pix[o:o+4*w], s.Pix[y*s.Stride:])
			for x := 0; x < w; x++ {
				pix[o+4*x+3] = 255
			}
		}
	default:
		// RGBA (premultiplied), Paletted, 16-bit and the rest: the colour
		// model does the un-premultiplying.
		for y := 0; y < h; y++ {
			o := y * dst.Stride
			for x := 0; x < w; x++ {
				c := color.NRGBAModel.Convert(src.At(r.Min.X+x, r.Min.Y+y)).(color.NRGBA)
				pix[o], pix[o+1], pix[o+2], pix[o+3] = c.R, c.G, c.B, 255
				o += 4
			}
		}
	}
	return dst
}
