package augment

import (
	"image"
	"image/color"
	"math"
	"sync"
)

// The resize is Pillow's (and torchvision's, for PIL images and for tensors
// with antialias=True) bilinear resampling: a separable triangle filter whose
// support widens with the downscale factor, so shrinking averages every
// source pixel instead of aliasing. It follows Pillow's
// libImaging/Resample.c (precompute_coeffs with a fractional box, horizontal
// pass then vertical pass) but keeps floats where Pillow rounds to uint8
// between the passes.
//
// It is written here rather than taken from imaging.Crop + imaging.Resize
// because it writes straight into the CHW output (float32 or uint8),
// allocates nothing in steady state, reads the decoder's RGBA bytes without
// a conversion pass, and stays on the calling goroutine (imaging fans each
// call out over GOMAXPROCS goroutines, which loses inside a worker pool);
// see BenchmarkImagingCropResize for the comparison.
//
// The source region is a fractional box because the loader may decode a
// JPEG at 1/2, 1/4 or 1/8 of its size (libjpeg-turbo's DCT scaling): a crop
// drawn in full-size pixels then covers a box with fractional edges in the
// decoded image. Taps are kept inside the whole pixels the box touches, so
// at scale 1 the resize sees only the crop, as torchvision's crop-then-resize.

// axis holds the filter taps of one axis of a resize: output i reads the
// input indices start[i] .. start[i]+n[i]-1 with weights w[i*k : i*k+n[i]].
type axis struct {
	start, n []int32
	w        []float32
	k        int
	lo, hi   int // the input range the taps touch
}

// compute fills a for the outputs outStart .. outStart+count-1 of a resize
// of in pixels to outFull pixels.
func (a *axis) compute(in, outFull, outStart, count int) {
	a.computeBox(0, in, 0, float64(in), outFull, outStart, count)
}

// computeBox fills a for the outputs outStart .. outStart+count-1 of a
// resize of the box [in0, in1) to outFull pixels, reading only input
// pixels lo .. hi-1.
func (a *axis) computeBox(lo, hi int, in0, in1 float64, outFull, outStart, count int) {
	scale := (in1 - in0) / float64(outFull)
	filterScale := max(scale, 1)
	support := filterScale // the triangle filter's support is 1
	a.k = int(math.Ceil(support))*2 + 1
	a.start = grow(a.start, count)
	a.n = grow(a.n, count)
	a.w = grow(a.w, count*a.k)
	var ws [64]float64
	wbuf := ws[:]
	if a.k > len(ws) {
		wbuf = make([]float64, a.k) // only for downscales over 30x
	}
	for i := range count {
		center := in0 + (float64(outStart+i)+0.5)*scale
		xmin := max(int(math.Floor(center-support+0.5)), lo)
		xmax := min(int(math.Floor(center+support+0.5)), hi)
		total := 0.0
		for x := xmin; x < xmax; x++ {
			w := triangle((float64(x) - center + 0.5) / filterScale)
			wbuf[x-xmin] = w
			total += w
		}
		if total == 0 {
			total = 1
		}
		// Drop taps of weight 0 at either end (Pillow keeps them): an
		// unscaled axis then reads one pixel per output, not two.
		first, last := 0, xmax-xmin-1
		for last > first && wbuf[last] == 0 {
			last--
		}
		for first < last && wbuf[first] == 0 {
			first++
		}
		if last < first { // an empty box edge case: read the nearest pixel
			xmin, first, last, wbuf[0], total = min(max(int(center), lo), hi-1), 0, 0, 1, 1
		}
		a.start[i], a.n[i] = int32(xmin+first), int32(last-first+1)
		for j, w := range wbuf[first : last+1] {
			a.w[i*a.k+j] = float32(w / total)
		}
	}
	a.lo, a.hi = math.MaxInt, 0
	for i := range count {
		a.lo = min(a.lo, int(a.start[i]))
		a.hi = max(a.hi, int(a.start[i]+a.n[i]))
	}
}

// span returns the input range [lo, hi) that the taps of a touch.
func (a *axis) span() (lo, hi int) { return a.lo, a.hi }

// window returns how many consecutive inputs the outputs, taken in order,
// need to keep at hand: k where the taps move monotonically (they always
// do here; the check keeps the ring in resampleBox safe if that changed),
// else the whole span.
func (a *axis) window() int {
	for i := 1; i < len(a.start); i++ {
		if a.start[i] < a.start[i-1] {
			return a.hi - a.lo
		}
	}
	return max(1, min(a.k, a.hi-a.lo))
}

func triangle(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// scratch is the per-call working memory of a transform, pooled so that
// Apply allocates nothing in steady state and stays safe for concurrent use.
type scratch struct {
	x, y   axis
	wy     []float32 // one output row's vertical weights, times 1/255
	off    []int     // where in tmp each of its taps' rows is
	row    []float32 // one source row, RGBA floats 0..255
	tmp    []float32 // a ring of source rows resized horizontally, R, G, B planes a row
	acc    []float32 // one output row, R, G, B planes
	planes []float32 // [0, 1] CHW planes for contrast, with uint8 output
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// srcBox is the part of the decoded image a resize reads: the fractional
// box [x0, x1) x [y0, y1) and the whole pixels px that its taps may touch,
// both in the image's own (absolute) coordinates.
type srcBox struct {
	x0, y0, x1, y1 float64
	px             image.Rectangle
}

// boxOf maps src, a rectangle in full-size pixels relative to the image's
// origin, into an image decoded at 1/scale of that size (pixel x of the
// decoded image covers full-size pixels scale*x .. scale*x+scale-1).
func boxOf(b image.Rectangle, src image.Rectangle, scale int) srcBox {
	s := float64(scale)
	bx := srcBox{
		x0: float64(b.Min.X) + float64(src.Min.X)/s, y0: float64(b.Min.Y) + float64(src.Min.Y)/s,
		x1: float64(b.Min.X) + float64(src.Max.X)/s, y1: float64(b.Min.Y) + float64(src.Max.Y)/s,
	}
	bx.px = image.Rect(
		b.Min.X+src.Min.X/scale, b.Min.Y+src.Min.Y/scale,
		b.Min.X+(src.Max.X+scale-1)/scale, b.Min.Y+(src.Max.Y+scale-1)/scale,
	).Intersect(b)
	if bx.px.Empty() { // a box past the decoded edge by rounding: keep one pixel
		p := image.Pt(min(max(int(bx.x0), b.Min.X), b.Max.X-1), min(max(int(bx.y0), b.Min.Y), b.Max.Y-1))
		bx.px = image.Rectangle{p, p.Add(image.Pt(1, 1))}
	}
	return bx
}

// output says where and how resample writes its result. Exactly one of F32
// and U8 is set; both hold three CHW planes of the window's size. F32 gets
// (v - mean) * inv, normalized (mean 0 and inv 1 give the values in [0, 1]
// themselves, the state colour jitter works on); U8 gets round(255 v),
// quantized for normalization on the device.
type output struct {
	F32       []float32
	U8        []uint8
	mean, inv [3]float32
}

// plain is an output of the [0, 1] values themselves.
func plain(dst []float32) output { return output{F32: dst, inv: [3]float32{1, 1, 1}} }

// put writes the values p of channel c at offset at of the output.
func (o *output) put(c, at int, p []float32) {
	if o.U8 != nil {
		storeU8(o.U8[at:at+len(p)], p)
		return
	}
	storeF32(o.F32[at:at+len(p)], p, o.mean[c], o.inv[c])
}

// resample resizes the src rectangle of img (absolute coordinates) to
// outW x outH and writes the window win of that result (output coordinates,
// size S x S with S*S*3 == len(dst)) into dst as three CHW planes in [0, 1].
// With flip, columns are mirrored within the window.
func resample(img image.Image, src image.Rectangle, outW, outH int, win image.Rectangle, flip bool, dst []float32) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	bx := boxOf(img.Bounds(), src.Sub(img.Bounds().Min), 1)
	resampleBox(s, img, bx, outW, outH, win, flip, plain(dst), nil)
}

// resampleBox resizes the box bx of img to outW x outH, applies jit (if
// not nil) and writes the window win of the result as out says. Two passes
// over the pixels: horizontal, from the image's rows into a ring of rows in
// s.tmp; vertical, an output row at a time into s.acc, where the colour ops
// that can run at once do, then out. When contrast is on, the rows go to [0, 1] planes instead, and
// a third pass runs contrast and the ops after it and writes out.
func resampleBox(s *scratch, img image.Image, bx srcBox, outW, outH int, win image.Rectangle, flip bool, out output, jit *jitter) {
	sw, sh := win.Dx(), win.Dy()
	s.x.computeBox(bx.px.Min.X, bx.px.Max.X, bx.x0, bx.x1, outW, win.Min.X, sw)
	s.y.computeBox(bx.px.Min.Y, bx.px.Max.Y, bx.y0, bx.y1, outH, win.Min.Y, sh)
	x0, x1 := s.x.span()
	y0, _ := s.y.span()

	// The horizontal pass runs a source row at a time as the vertical
	// taps come to need it, into a ring of R rows: the vertical taps move
	// down monotonically, k rows at most, so only the last R rows are ever
	// read again, and the working set (ring, output row, image) stays in
	// cache. Each row is widened to RGBA floats first (the decoder's
	// bytes are read in place, a row at a time).
	rowLen := 3 * sw
	R := s.y.window()
	s.tmp = grow(s.tmp, R*rowLen)
	s.row = grow(s.row, 4*(x1-x0))
	m, fast := img.(*image.NRGBA)
	next := y0 // the next source row to resize horizontally

	var pre, post []int
	if jit != nil {
		pre, post = jit.plan()
	}
	plane := sw * sh
	dst := out
	if post != nil { // contrast: [0, 1] planes first
		if out.F32 != nil {
			dst = plain(out.F32)
		} else {
			s.planes = grow(s.planes, 3*plane)
			dst = plain(s.planes)
		}
	}
	var sum [8]float64
	s.acc = grow(s.acc, rowLen)
	s.wy = grow(s.wy, s.y.k)
	s.off = grow(s.off, s.y.k)
	R0, G0, B0 := s.acc[:sw], s.acc[sw:2*sw], s.acc[2*sw:]
	for i := range sh {
		a, n := int(s.y.start[i]), int(s.y.n[i])
		if a < next-R {
			panic("augment: the vertical taps moved back past the ring of rows")
		}
		for ; next < a+n; next++ {
			if fast {
				o := m.PixOffset(x0, next)
				widen(s.row, m.Pix[o:o+4*(x1-x0)])
			} else {
				loadRow(img, x0, x1, next, s.row)
			}
			r := (next - y0) % R
			hpass(&s.x, s.row, x0, s.tmp[r*rowLen:(r+1)*rowLen], sw, flip)
		}
		// Vertical pass, then the colour ops that need no whole-image value.
		w, off := s.wy[:n], s.off[:n]
		for t := range w {
			w[t] = s.y.w[i*s.y.k+t] * (1.0 / 255)
			off[t] = (a + t - y0) % R * rowLen
		}
		vpass(s.acc, s.tmp, off, w)
		if jit != nil {
			jit.apply(pre, R0, G0, B0, 0)
			if post != nil {
				graySum(R0, G0, B0, &sum)
			}
		}
		dst.put(0, i*sw, R0)
		dst.put(1, plane+i*sw, G0)
		dst.put(2, 2*plane+i*sw, B0)
	}
	if post != nil {
		jit.finish(post, dst.F32, plane, jit.contrastTarget(&sum, plane), out)
	}
}

// loadRow reads pixels x0 .. x1-1 of row y of img as RGBA floats in 0..255
// (alpha left as it was: the resize ignores it), with alpha dropped after
// un-premultiplying, as Pillow's convert("RGB").
func loadRow(img image.Image, x0, x1, y int, row []float32) {
	switch m := img.(type) {
	case *image.NRGBA:
		p := m.Pix[m.PixOffset(x0, y):]
		for i := range x1 - x0 {
			q := p[4*i : 4*i+3 : 4*i+3]
			row[4*i], row[4*i+1], row[4*i+2] = float32(q[0]), float32(q[1]), float32(q[2])
		}
	case *image.RGBA:
		p := m.Pix[m.PixOffset(x0, y):]
		for i := range x1 - x0 {
			q := p[4*i : 4*i+4 : 4*i+4]
			r, g, b, a := uint32(q[0]), uint32(q[1]), uint32(q[2]), uint32(q[3])
			if a != 0xff && a != 0 {
				r, g, b = r*0xff/a, g*0xff/a, b*0xff/a
			}
			row[4*i], row[4*i+1], row[4*i+2] = float32(r), float32(g), float32(b)
		}
	case *image.YCbCr:
		for i := range x1 - x0 {
			yi, ci := m.YOffset(x0+i, y), m.COffset(x0+i, y)
			r, g, b := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			row[4*i], row[4*i+1], row[4*i+2] = float32(r), float32(g), float32(b)
		}
	case *image.Gray:
		p := m.Pix[m.PixOffset(x0, y):]
		for i := range x1 - x0 {
			v := float32(p[i])
			row[4*i], row[4*i+1], row[4*i+2] = v, v, v
		}
	default:
		// Any other image type: correct, but slow and allocating.
		for i := range x1 - x0 {
			c := color.NRGBAModel.Convert(img.At(x0+i, y)).(color.NRGBA)
			row[4*i], row[4*i+1], row[4*i+2] = float32(c.R), float32(c.G), float32(c.B)
		}
	}
}
