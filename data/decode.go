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

// The JPEG decoders a Decoder can use (Decoder.Kind, LoaderConfig.Decoder).
const (
	// DecoderAuto is libjpeg-turbo when it can be loaded, else image/jpeg.
	DecoderAuto = "auto"
	// DecoderTurbo is libjpeg-turbo (libturbojpeg.so.0, loaded at run
	// time): about 2.7x image/jpeg's speed on one core, and it can decode
	// at 1/2, 1/4 or 1/8 size in the DCT domain. Asking for it where it is
	// missing is an error.
	DecoderTurbo = "turbo"
	// DecoderGo is the standard library's image/jpeg: always there.
	DecoderGo = "go"
)

// TurboAvailable says why libjpeg-turbo cannot be used in this process,
// or nil if it can.
func TurboAvailable() error { return loadTurbo() }

// DecoderName names the JPEG decoder that kind ("" = DecoderAuto) resolves
// to in this process, with the reason when auto falls back, for a run to
// print once.
func DecoderName(kind string) string {
	switch kind {
	case DecoderGo:
		return "image/jpeg (asked for)"
	case DecoderTurbo:
		if err := loadTurbo(); err != nil {
			return "unavailable: " + err.Error()
		}
		return "libjpeg-turbo (libturbojpeg, DCT-domain scaling)"
	}
	if err := loadTurbo(); err != nil {
		return "image/jpeg (" + err.Error() + ")"
	}
	return "libjpeg-turbo (libturbojpeg, DCT-domain scaling)"
}

// checkDecoderKind resolves kind to DecoderTurbo or DecoderGo.
func checkDecoderKind(kind string) (string, error) {
	switch kind {
	case "", DecoderAuto:
		if loadTurbo() == nil {
			return DecoderTurbo, nil
		}
		return DecoderGo, nil
	case DecoderTurbo:
		if err := loadTurbo(); err != nil {
			return "", fmt.Errorf("data: decoder %q: %w", kind, err)
		}
		return DecoderTurbo, nil
	case DecoderGo:
		return DecoderGo, nil
	}
	return "", fmt.Errorf("data: unknown decoder %q: want %q, %q or %q", kind, DecoderAuto, DecoderTurbo, DecoderGo)
}

// Header is what an image file's header says, read before its pixels.
type Header struct {
	Format        string // "JPEG" or "PNG"
	Width, Height int
	// Scalable says the pixels can be decoded at 1/2, 1/4 or 1/8 size
	// (a JPEG, with libjpeg-turbo, not CMYK).
	Scalable bool

	file int64      // the file's bytes
	cost decodeCost // what each decoder allocates for it
}

// need is the memory a decode of the image takes, by libjpeg-turbo or by
// the standard library: the file, the decoder's own allocations and the
// full-size RGB output.
func (h Header) need(turbo bool) int64 {
	n := h.file + 4*int64(h.Width)*int64(h.Height)
	if turbo {
		return n + h.cost.turbo
	}
	return n + h.cost.std
}

// Decoder is Decode with buffers kept between calls: the file bytes and the
// output image are reused, so the image it returns is valid only until the
// next call. A Decoder is not safe for concurrent use; give each goroutine
// its own. The zero value is ready to use (with DecoderAuto).
type Decoder struct {
	MaxPixels int // 0 = DefaultMaxPixels
	// MaxBytes is the memory one decode may take, estimated from the
	// header (the file, the decoder's allocations and the RGB output);
	// 0 = DefaultMaxDecodeBytes.
	MaxBytes int64
	Kind     string // DecoderAuto (""), DecoderTurbo or DecoderGo

	file  []byte
	path  []byte // path with a NUL, for open(2)
	rd    bytes.Reader
	out   *image.NRGBA
	kind  string // resolved Kind
	turbo *turboHandle
	err   error  // from resolving Kind
	used  string // the decoder of the last DecodeScaled: DecoderTurbo or DecoderGo
}

// Decode is the package-level Decode, reusing d's buffers.
func (d *Decoder) Decode(path string) (img *image.NRGBA, err error) {
	b, err := d.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h, err := d.DecodeHeader(path, b)
	if err != nil {
		return nil, err
	}
	img, _, err = d.DecodeScaled(path, b, h, 1)
	return img, err
}

// ReadFile reads the whole file into d's buffer, which it returns (valid
// until the next call).
func (d *Decoder) ReadFile(path string) ([]byte, error) { return d.read(path) }

// init resolves d.Kind once.
func (d *Decoder) init() error {
	if d.kind != "" || d.err != nil {
		return d.err
	}
	d.kind, d.err = checkDecoderKind(d.Kind)
	if d.err == nil && d.kind == DecoderTurbo {
		d.turbo, d.err = newTurboHandle()
	}
	return d.err
}

// resetTurbo gives d a fresh libjpeg-turbo handle after one failed on a
// file, so that no file changes how the next ones decode. Failing to make
// one (out of memory) is not the file's fault: the error is no
// *ImageError, so it stops a run even with bad_images: skip.
func (d *Decoder) resetTurbo() error {
	if err := d.turbo.reset(); err != nil {
		d.turbo, d.err = nil, fmt.Errorf("data: libjpeg-turbo: a fresh handle after a bad file: %w", err)
		return d.err
	}
	return nil
}

// Resolved names the decoder d uses for JPEGs: DecoderTurbo or DecoderGo.
func (d *Decoder) Resolved() (string, error) {
	err := d.init()
	return d.kind, err
}

// DecodeHeader reads the format and size of the image in b (read from
// path, which names it in errors) and refuses, before any pixel is
// decoded, one of more than MaxPixels pixels or one whose decode would
// take more than MaxBytes of memory.
func (d *Decoder) DecodeHeader(path string, b []byte) (Header, error) {
	if err := d.init(); err != nil {
		return Header{}, err
	}
	if len(b) == 0 {
		return Header{}, &ImageError{path, ErrEmptyFile}
	}
	var h Header
	switch {
	case bytes.HasPrefix(b, []byte{0xff, 0xd8}):
		h.Format = "JPEG"
		if d.turbo != nil {
			w, ht, cmyk, err := d.turbo.header(b)
			if err == nil && w > 0 && ht > 0 {
				h.Width, h.Height, h.Scalable = w, ht, !cmyk
				break
			}
			if err := d.resetTurbo(); err != nil {
				return Header{}, err
			}
			// Let image/jpeg have its say: its errors are the ones the
			// tests and users know, and it reads some files turbo won't.
		}
		cfg, err := d.config(path, h.Format, jpeg.DecodeConfig, b)
		if err != nil {
			return Header{}, err
		}
		h.Width, h.Height = cfg.Width, cfg.Height
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		h.Format = "PNG"
		cfg, err := d.config(path, h.Format, png.DecodeConfig, b)
		if err != nil {
			return Header{}, err
		}
		h.Width, h.Height = cfg.Width, cfg.Height
	default:
		return Header{}, &ImageError{path, fmt.Errorf("%w: content starts with %q", ErrUnsupported, b[:min(len(b), 8)])}
	}
	limit := d.MaxPixels
	if limit <= 0 {
		limit = DefaultMaxPixels
	}
	if h.Width <= 0 || h.Height <= 0 {
		return Header{}, &ImageError{path, fmt.Errorf("%w: %s header says %dx%d", ErrCorrupt, h.Format, h.Width, h.Height)}
	}
	if int64(h.Width)*int64(h.Height) > int64(limit) {
		return Header{}, &ImageError{path, fmt.Errorf("%w: %s of %dx%d = %d pixels exceeds the limit of %d (max_pixels)",
			ErrTooLarge, h.Format, h.Width, h.Height, int64(h.Width)*int64(h.Height), limit)}
	}
	h.file = int64(len(b))
	if h.Format == "JPEG" {
		h.cost = jpegCost(b, h.Width, h.Height)
	} else {
		h.cost = pngCost(b, h.Width, h.Height)
	}
	turbo := h.Scalable && d.turbo != nil
	if need := h.need(turbo); need > d.maxBytes() {
		return Header{}, &ImageError{path, fmt.Errorf("%w: %s of %dx%d (%s) needs about %d bytes to decode, more than the limit of %d (max_decode_bytes)",
			ErrTooLarge, h.Format, h.Width, h.Height, h.cost.what(), need, d.maxBytes())}
	}
	if d.out != nil && int64(cap(d.out.Pix)) > keepBytes && int64(cap(d.out.Pix)) > 4*int64(h.Width)*int64(h.Height) {
		d.out = nil // see keepBytes
	}
	return h, nil
}

// keepBytes is the largest buffer a Decoder keeps for the next image when
// that image needs less: reusing buffers saves allocating per image, but
// one outsized image must not hold its memory for the rest of the run. A
// worker's memory is then its current decode (within MaxBytes) plus at
// most 2 x keepBytes of buffers it keeps.
const keepBytes = 16 << 20

func (d *Decoder) maxBytes() int64 {
	if d.MaxBytes <= 0 {
		return DefaultMaxDecodeBytes
	}
	return d.MaxBytes
}

func (d *Decoder) config(path, format string, decodeConfig func(io.Reader) (image.Config, error), b []byte) (cfg image.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &ImageError{path, fmt.Errorf("%w: %s decoder panicked: %v", ErrCorrupt, format, r)}
		}
	}()
	d.rd.Reset(b)
	cfg, err = decodeConfig(&d.rd)
	if err != nil {
		return cfg, &ImageError{path, decodeErr(format, err)}
	}
	return cfg, nil
}

// DecodeScaled decodes the image in b, whose header h DecodeHeader read,
// at 1/scale of its size (scale 1, 2, 4 or 8; 1 unless h.Scalable), as
// opaque RGB in an NRGBA with origin (0, 0) of ceil(Width/scale) x
// ceil(Height/scale) pixels. It returns the scale it used: 1 when it fell
// back to image/jpeg for this file (CMYK, or a file libjpeg-turbo
// refused). The image is d's buffer, valid until the next call.
func (d *Decoder) DecodeScaled(path string, b []byte, h Header, scale int) (img *image.NRGBA, used int, err error) {
	if err := d.init(); err != nil {
		return nil, 0, err
	}
	if scale != 1 && scale != 2 && scale != 4 && scale != 8 {
		return nil, 0, fmt.Errorf("data: decode scale 1/%d: want 1, 2, 4 or 8", scale)
	}
	if h.Format == "JPEG" && h.Scalable && d.turbo != nil {
		w, ht := (h.Width+scale-1)/scale, (h.Height+scale-1)/scale
		d.out = reuseNRGBA(d.out, w, ht)
		terr := d.turbo.decode(b, d.out.Pix, w, ht)
		if terr == nil {
			d.used = DecoderTurbo
			return d.out, scale, nil
		}
		if err := d.resetTurbo(); err != nil {
			return nil, 0, err
		}
		// A file with a flaw libjpeg-turbo warns about: image/jpeg decides,
		// if it can within the memory budget.
		if need := h.need(false); need > d.maxBytes() {
			return nil, 0, &ImageError{path, fmt.Errorf("%w: libjpeg-turbo refused it (%v), and image/jpeg would need about %d bytes to decode this %dx%d %s JPEG, more than the limit of %d (max_decode_bytes)",
				ErrTooLarge, terr, need, h.Width, h.Height, h.cost.what(), d.maxBytes())}
		}
	}
	d.used = DecoderGo
	var decode func(io.Reader) (image.Image, error)
	switch h.Format {
	case "JPEG":
		decode = jpeg.Decode
	case "PNG":
		decode = png.Decode
	default:
		return nil, 0, &ImageError{path, fmt.Errorf("%w: format %q", ErrUnsupported, h.Format)}
	}
	img, err = d.decodeStd(path, h.Format, decode, b)
	return img, 1, err
}

// decodeStd decodes with the standard library, which allocates the image
// anew each time, and converts it into d's NRGBA buffer.
func (d *Decoder) decodeStd(path, format string, decode func(io.Reader) (image.Image, error), b []byte) (img *image.NRGBA, err error) {
	// The decoders themselves are the last line of defence; a panic inside
	// one is a broken file, not a broken program.
	defer func() {
		if r := recover(); r != nil {
			img, err = nil, &ImageError{path, fmt.Errorf("%w: %s decoder panicked: %v", ErrCorrupt, format, r)}
		}
	}()
	d.rd.Reset(b)
	src, err := decode(&d.rd)
	if err != nil {
		return nil, &ImageError{path, decodeErr(format, err)}
	}
	d.out = toNRGBA(src, d.out)
	return d.out, nil
}

// reuseNRGBA returns dst resized to w x h at origin (0, 0), reallocating
// only when its pixels are too few.
func reuseNRGBA(dst *image.NRGBA, w, h int) *image.NRGBA {
	if dst == nil || cap(dst.Pix) < 4*w*h {
		dst = &image.NRGBA{Pix: make([]uint8, 4*w*h)}
	}
	dst.Pix = dst.Pix[:4*w*h]
	dst.Stride = 4 * w
	dst.Rect = image.Rect(0, 0, w, h)
	return dst
}

// read reads the file at path into d.file, growing it only when a file is
// larger than any before it.
func (d *Decoder) read(path string) ([]byte, error) {
	if cap(d.file) > keepBytes {
		d.file = nil // see keepBytes
	}
	limit := maxFileBytes(d.MaxPixels)
	if d.maxBytes() < limit {
		limit = d.maxBytes() // the file is part of a decode's memory
	}
	b, err := readFile(path, d.file, &d.path, limit)
	if cap(b) > cap(d.file) {
		d.file = b[:0]
	}
	var big *fileSizeError
	if errors.As(err, &big) {
		return nil, &ImageError{path, fmt.Errorf("%w: %v", ErrTooLarge, err)}
	}
	if err != nil {
		return nil, &ImageError{path, fmt.Errorf("%w: %w", ErrUnreadable, err)}
	}
	return b, nil
}

// maxFileBytes bounds the bytes read for one image, so that a huge file
// named .jpg is refused before it is read into memory: no JPEG or PNG of
// maxPixels pixels needs more than 4 bytes a pixel (RGBA, stored
// uncompressed) and a megabyte of headers.
func maxFileBytes(maxPixels int) int64 {
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	return 4*int64(min(maxPixels, MaxPixelsLimit)) + 1<<20
}

// fileSizeError is a file too large to be an image within the pixel limit.
type fileSizeError struct{ size, limit int64 }

func (e *fileSizeError) Error() string {
	return fmt.Sprintf("the file has %d bytes, more than any image within max_pixels and max_decode_bytes can take (%d)", e.size, e.limit)
}

func fileTooLarge(size, limit int64) error { return &fileSizeError{size, limit} }

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
// reusing dst's pixels when they are large enough. The types a decoder
// returns have a loop of their own each; the rest go through the colour
// model (anyToNRGBA).
func toNRGBA(src image.Image, dst *image.NRGBA) *image.NRGBA {
	r := src.Bounds()
	w, h := r.Dx(), r.Dy()
	dst = reuseNRGBA(dst, w, h)
	pix := dst.Pix
	switch s := src.(type) {
	case *image.YCbCr:
		ycbcrToNRGBA(dst, s)
	case *image.Gray:
		grayToNRGBA(dst, s)
	case *image.CMYK:
		cmykToNRGBA(dst, s)
	case *image.NRGBA:
		nrgbaToNRGBA(dst, s)
	// The types below go through color.NRGBAModel's arithmetic, without
	// its Convert, which boxes every pixel into an interface: 8 to 16
	// bytes of garbage a pixel (784 MB for a 7000x7000 16-bit PNG), beyond
	// any budget a header can promise.
	case *image.RGBA:
		fillUnpremultiplied(pix, dst.Stride, w, h, func(x, y int) (uint32, uint32, uint32, uint32) {
			return s.RGBAAt(r.Min.X+x, r.Min.Y+y).RGBA()
		})
	case *image.RGBA64:
		fillUnpremultiplied(pix, dst.Stride, w, h, func(x, y int) (uint32, uint32, uint32, uint32) {
			return s.RGBA64At(r.Min.X+x, r.Min.Y+y).RGBA()
		})
	case *image.NRGBA64:
		fillUnpremultiplied(pix, dst.Stride, w, h, func(x, y int) (uint32, uint32, uint32, uint32) {
			return s.NRGBA64At(r.Min.X+x, r.Min.Y+y).RGBA()
		})
	case *image.Gray16:
		fillUnpremultiplied(pix, dst.Stride, w, h, func(x, y int) (uint32, uint32, uint32, uint32) {
			return s.Gray16At(r.Min.X+x, r.Min.Y+y).RGBA()
		})
	case *image.Paletted:
		palettedToNRGBA(dst, s)
	default:
		anyToNRGBA(dst, src)
	}
	return dst
}

// ycbcrToNRGBA converts s into dst, which is s's size with origin (0, 0).
func ycbcrToNRGBA(dst *image.NRGBA, s *image.YCbCr) {
	r, pix := s.Rect, dst.Pix
	w, h := r.Dx(), r.Dy()
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
}

// grayToNRGBA converts s into dst, which is s's size with origin (0, 0).
func grayToNRGBA(dst *image.NRGBA, s *image.Gray) {
	w, h, pix := s.Rect.Dx(), s.Rect.Dy(), dst.Pix
	for y := 0; y < h; y++ {
		row := s.Pix[y*s.Stride : y*s.Stride+w]
		o := y * dst.Stride
		for _, g := range row {
			pix[o], pix[o+1], pix[o+2], pix[o+3] = g, g, g, 255
			o += 4
		}
	}
}

// cmykToNRGBA converts s into dst, which is s's size with origin (0, 0).
func cmykToNRGBA(dst *image.NRGBA, s *image.CMYK) {
	w, h, pix := s.Rect.Dx(), s.Rect.Dy(), dst.Pix
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
}

// nrgbaToNRGBA copies s into dst, which is s's size with origin (0, 0),
// making every pixel opaque.
func nrgbaToNRGBA(dst *image.NRGBA, s *image.NRGBA) {
	w, h, pix := s.Rect.Dx(), s.Rect.Dy(), dst.Pix
	for y := 0; y < h; y++ {
		o := y * dst.Stride
		copy(pix[o:o+4*w], s.Pix[y*s.Stride:])
		for x := 0; x < w; x++ {
			pix[o+4*x+3] = 255
		}
	}
}

// palettedToNRGBA converts s into dst, which is s's size with origin
// (0, 0), through a table of the palette's un-premultiplied colours. An
// index past the palette panics, as s.At does.
func palettedToNRGBA(dst *image.NRGBA, s *image.Paletted) {
	r, pix := s.Rect, dst.Pix
	w, h := r.Dx(), r.Dy()
	var lut [256][3]uint8
	for i, c := range s.Palette[:min(len(s.Palette), 256)] {
		lut[i][0], lut[i][1], lut[i][2] = unpremultiply(c.RGBA())
	}
	n := len(s.Palette) // an index past the palette is an error, as in At
	for y := 0; y < h; y++ {
		row := s.Pix[y*s.Stride:][:w]
		o := y * dst.Stride
		for _, i := range row {
			if int(i) >= n {
				panic(fmt.Sprintf("palette index %d of a %d-colour palette", i, n))
			}
			c := &lut[i]
			pix[o], pix[o+1], pix[o+2], pix[o+3] = c[0], c[1], c[2], 255
			o += 4
		}
	}
}

// anyToNRGBA converts any other image into dst, which is src's size with
// origin (0, 0): the colour model does the un-premultiplying.
func anyToNRGBA(dst *image.NRGBA, src image.Image) {
	r, pix := src.Bounds(), dst.Pix
	w, h := r.Dx(), r.Dy()
	for y := 0; y < h; y++ {
		o := y * dst.Stride
		for x := 0; x < w; x++ {
			c := color.NRGBAModel.Convert(src.At(r.Min.X+x, r.Min.Y+y)).(color.NRGBA)
			pix[o], pix[o+1], pix[o+2], pix[o+3] = c.R, c.G, c.B, 255
			o += 4
		}
	}
}

// fillUnpremultiplied writes the w x h pixels that at gives (premultiplied
// 16-bit components, as color.Color's RGBA) into pix as opaque 8-bit RGBX
// rows of stride bytes. at is called with typed accessors (RGBA64At and
// the like), which return colours by value: no pixel is boxed.
func fillUnpremultiplied(pix []uint8, stride, w, h int, at func(x, y int) (r, g, b, a uint32)) {
	for y := 0; y < h; y++ {
		o := y * stride
		for x := 0; x < w; x++ {
			pix[o], pix[o+1], pix[o+2] = unpremultiply(at(x, y))
			pix[o+3] = 255
			o += 4
		}
	}
}

// unpremultiply is color.NRGBAModel's conversion of a colour's
// premultiplied 16-bit components to straight 8-bit RGB.
func unpremultiply(r, g, b, a uint32) (uint8, uint8, uint8) {
	switch a {
	case 0xffff:
		return uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)
	case 0:
		return 0, 0, 0
	}
	return uint8((r * 0xffff / a) >> 8), uint8((g * 0xffff / a) >> 8), uint8((b * 0xffff / a) >> 8)
}
