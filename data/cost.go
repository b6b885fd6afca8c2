package data

import (
	"bytes"
	"encoding/binary"
)

// What one decode costs in memory, estimated from the file's header before
// any pixel is allocated, so that a small file cannot make a worker
// allocate gigabytes (a 381 KB PNG of 7000x7000 16-bit RGBA decodes into
// 392 MB). Each figure counts the allocations of the decoder that will run,
// as its source shows them (image/jpeg's reader.go and scan.go, image/png's
// reader.go, libjpeg-turbo's jdcoefct.c); the file bytes and the RGB output
// (4 bytes a pixel) are added by decodeNeed.

// DefaultMaxDecodeBytes is the memory budget of one decode when none is
// given: 512 MiB. Every 8-bit image within DefaultMaxPixels fits when
// libjpeg-turbo decodes it, and so does any baseline JPEG or 8-bit PNG
// through the standard library; a 16-bit RGBA PNG (12 bytes a pixel in all)
// fits up to about 44 megapixels.
const DefaultMaxDecodeBytes = 512 << 20

// MaxPixelsLimit is the largest pixel limit accepted: 2^32 pixels, 65536 x
// 65536 (the largest JPEG), 16 GiB as RGBA. Limits above it would overflow
// the byte arithmetic, and no decode of such an image fits in memory.
const MaxPixelsLimit = 1 << 32

// decodeCost is what decoding an image allocates beyond its file and the
// RGB output, for each decoder that may run.
type decodeCost struct {
	std   int64 // image/jpeg or image/png
	turbo int64 // libjpeg-turbo (JPEG only; its output is the RGB buffer itself)
	// What drives the figures, for messages (kept as facts, not a string,
	// so that a header allocates nothing).
	png              bool
	depth, colorType byte // PNG
	trns, interlaced bool // PNG
	progressive      bool // JPEG
	nComp            int  // JPEG
	layoutUnknown    bool
}

// what names the layout that drives the figure: "16-bit RGBA",
// "progressive colour".
func (c decodeCost) what() string {
	if c.layoutUnknown {
		return "unknown layout"
	}
	if !c.png {
		s := "baseline"
		if c.progressive {
			s = "progressive"
		}
		return s + map[int]string{1: " gray", 3: " colour", 4: " 4-component (CMYK)"}[c.nComp]
	}
	s := map[byte]string{0: "gray", 2: "RGB", 3: "palette", 4: "gray+alpha"}[c.colorType]
	if s == "" {
		s = "RGBA"
	}
	if c.depth == 16 {
		s = "16-bit " + s
	}
	if c.trns && c.colorType == 0 {
		s += " with transparency"
	}
	if c.interlaced {
		s += ", interlaced"
	}
	return s
}

// pngCost reads a PNG's IHDR and the chunks before its first IDAT. image/png
// decodes into an image of 1 (gray, palette), 2 (16-bit gray), 4 (8-bit
// colour, or gray with a tRNS chunk) or 8 bytes a pixel (16-bit colour),
// twice over when interlaced (each Adam7 pass is its own image, then merged).
func pngCost(b []byte, w, h int) decodeCost {
	const ihdrAt = 8 + 8 // signature, then IHDR's length and type
	if len(b) < ihdrAt+13 {
		return decodeCost{std: 8 * int64(w) * int64(h) * 2, png: true, layoutUnknown: true}
	}
	depth, colorType, interlaced := b[ihdrAt+8], b[ihdrAt+9], b[ihdrAt+12] == 1
	trns := false
	for i := 8; i+8 <= len(b); {
		n := int64(binary.BigEndian.Uint32(b[i:]))
		typ := string(b[i+4 : i+8])
		if typ == "IDAT" || typ == "IEND" {
			break
		}
		if typ == "tRNS" {
			trns = true
		}
		if n > int64(len(b)) {
			break
		}
		i += 12 + int(n)
	}
	var bpp int64
	switch colorType {
	case 0: // gray
		bpp = 1
		if depth == 16 {
			bpp = 2
		}
		if trns {
			bpp *= 4 // NRGBA or NRGBA64
		}
	case 3: // palette
		bpp = 1
	default: // RGB, gray+alpha, RGBA, and anything the decoder will refuse
		bpp = 4
		if depth == 16 {
			bpp = 8
		}
	}
	img := bpp * int64(w) * int64(h)
	if interlaced {
		img *= 2
	}
	rows := 2 * (8*int64(w) + 1) // the current and previous row, unfiltered
	return decodeCost{std: img + rows, png: true, depth: depth, colorType: colorType, trns: trns, interlaced: interlaced}
}

// jpegFrame is what a JPEG's frame header (SOFn) and markers before it say.
type jpegFrame struct {
	progressive bool
	nComp       int
	h, v        [4]int // sampling factors
	rgb         bool   // stored as RGB, which image/jpeg converts into a new RGBA image
}

// readJPEGFrame walks the markers from SOI to the first SOFn (ITU T.81,
// B.1.1.3 and B.2.2). ok is false when there is none before the scan or the
// end of b.
func readJPEGFrame(b []byte) (f jpegFrame, ok bool) {
	jfif, adobe, adobeTransform := false, false, byte(0)
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			return f, false
		}
		m := b[i+1]
		switch {
		case m == 0xff: // fill byte
			i++
			continue
		case m == 0x01 || m >= 0xd0 && m <= 0xd8: // TEM, RSTn, SOI: no length
			i += 2
			continue
		case m == 0xd9 || m == 0xda: // EOI or a scan before any frame
			return f, false
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		if n < 2 || i+2+n > len(b) {
			return f, false
		}
		seg := b[i+4 : i+2+n]
		switch {
		case m == 0xe0 && bytes.HasPrefix(seg, []byte("JFIF\x00")):
			jfif = true
		case m == 0xee && len(seg) >= 12 && bytes.HasPrefix(seg, []byte("Adobe")):
			adobe, adobeTransform = true, seg[11]
		case m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc:
			if len(seg) < 6 {
				return f, false
			}
			f.progressive = m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce
			f.nComp = int(seg[5])
			if f.nComp < 1 || f.nComp > 4 || len(seg) < 6+3*f.nComp {
				return f, false
			}
			var ids [4]byte
			for c := range f.nComp {
				ids[c] = seg[6+3*c]
				f.h[c], f.v[c] = max(int(seg[7+3*c]>>4), 1), max(int(seg[7+3*c]&15), 1)
			}
			if f.nComp == 1 {
				f.h[0], f.v[0] = 1, 1 // image/jpeg ignores a lone component's factors
			}
			// image/jpeg's isRGB.
			f.rgb = f.nComp == 3 && !jfif && (adobe && adobeTransform == 0 || !adobe && ids[0] == 'R' && ids[1] == 'G' && ids[2] == 'B')
			return f, true
		}
		i += 2 + n
	}
	return f, false
}

// jpegCost estimates both decoders' allocations for a w x h JPEG.
// image/jpeg keeps every component's samples, rounded up to whole MCUs (1
// byte each), converts RGB and 4-component files into a new 4-byte image,
// and for a progressive file keeps every coefficient as an int32 (4 bytes a
// sample). libjpeg-turbo writes into the RGB buffer directly and keeps the
// coefficients of a progressive file only, as int16 (2 bytes a sample).
func jpegCost(b []byte, w, h int) decodeCost {
	f, ok := readJPEGFrame(b)
	if !ok { // not expected once a header decoder accepted the file: the worst case
		f = jpegFrame{progressive: true, nComp: 4, h: [4]int{1, 1, 1, 1}, v: [4]int{1, 1, 1, 1}, rgb: true}
	}
	hmax, vmax := 1, 1
	for c := range f.nComp {
		hmax, vmax = max(hmax, f.h[c]), max(vmax, f.v[c])
	}
	mxx := (int64(w) + 8*int64(hmax) - 1) / (8 * int64(hmax))
	myy := (int64(h) + 8*int64(vmax) - 1) / (8 * int64(vmax))
	var samples int64
	for c := range f.nComp {
		samples += 64 * int64(f.h[c]) * int64(f.v[c]) * mxx * myy
	}
	pixels := int64(w) * int64(h)
	c := decodeCost{std: samples, progressive: f.progressive, nComp: f.nComp, layoutUnknown: !ok}
	if f.rgb || f.nComp == 4 {
		c.std += 4 * pixels
	}
	if f.progressive {
		c.std += 4 * samples
		c.turbo = 2 * samples
	}
	return c
}
