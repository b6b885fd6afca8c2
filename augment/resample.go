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
// libImaging/Resample.c (precompute_coeffs, horizontal pass then vertical
// pass) but keeps floats where Pillow rounds to uint8 between the passes.
//
// It is written here rather than taken from imaging.Crop + imaging.Resize
// because it writes straight into the CHW float32 output, allocates nothing
// in steady state, and stays on the calling goroutine (imaging fans each call
// out over GOMAXPROCS goroutines, which loses inside a worker pool); see
// BenchmarkImagingCropResize for the comparison.

// axis holds the filter taps of one axis of a resize: output i reads the
// input indices start[i] .. start[i]+n[i]-1 with weights w[i*k : i*k+n[i]].
type axis struct {
	start, n []int32
	w        []float32
	k        int
}

// compute fills a for the outputs outStart .. outStart+count-1 of a resize
// of in pixels to outFull pixels.
func (a *axis) compute(in, outFull, outStart, count int) {
	scale := float64(in) / float64(outFull)
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
		center := (float64(outStart+i) + 0.5) * scale
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), in)
		total := 0.0
		for x := lo; x < hi; x++ {
			w := triangle((float64(x) - center + 0.5) / filterScale)
			wbuf[x-lo] = w
			total += w
		}
		if total == 0 {
			total = 1
		}
		// Drop taps of weight 0 at either end (Pillow keeps them): an
		// unscaled axis then reads one pixel per output, not two.
		first, last := 0, hi-lo-1
		for last > first && wbuf[last] == 0 {
			last--
		}
		for first < last && wbuf[first] == 0 {
			first++
		}
		a.start[i], a.n[i] = int32(lo+first), int32(last-first+1)
		for j, w := range wbuf[first : last+1] {
			a.w[i*a.k+j] = float32(w / total)
		}
	}
}

// span returns the input range [lo, hi) that the taps of a touch.
func (a *axis) span() (lo, hi int) {
	lo, hi = math.MaxInt, 0
	for i := range a.start {
		lo = min(lo, int(a.start[i]))
		hi = max(hi, int(a.start[i]+a.n[i]))
	}
	return lo, hi
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

// scratch is the per-call working memory of resample, pooled so that Apply
// allocates nothing in steady state and stays safe for concurrent use.
type scratch struct {
	x, y axis
	row  []float32 // one source row, RGB interleaved, 0..255
	tmp  []float32 // source rows resized horizontally, RGB interleaved
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// resample resizes the src rectangle of img (absolute coordinates) to
// outW x outH and writes the window win of that result (output coordinates,
// size S x S with S*S*3 == len(dst)) into dst as three CHW planes in [0, 1].
// With flip, columns are mirrored within the window.
func resample(img image.Image, src image.Rectangle, outW, outH int, win image.Rectangle, flip bool, dst []float32) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)

	sw, sh := win.Dx(), win.Dy()
	s.x.compute(src.Dx(), outW, win.Min.X, sw)
	s.y.compute(src.Dy(), outH, win.Min.Y, sh)
	x0, x1 := s.x.span()
	y0, y1 := s.y.span()

	// Horizontal pass over the source rows the vertical taps need.
	s.row = grow(s.row, 3*(x1-x0))
	rowLen := 3 * sw
	s.tmp = grow(s.tmp, (y1-y0)*rowLen)
	for y := y0; y < y1; y++ {
		loadRow(img, src.Min.X+x0, src.Min.X+x1, src.Min.Y+y, s.row)
		out := s.tmp[(y-y0)*rowLen : (y-y0+1)*rowLen]
		for j := range sw {
			w := s.x.w[j*s.x.k : j*s.x.k+int(s.x.n[j])]
			in := s.row[3*(int(s.x.start[j])-x0):]
			var r, g, b float32
			for t, wt := range w {
				p := in[3*t : 3*t+3 : 3*t+3]
				r += wt * p[0]
				g += wt * p[1]
				b += wt * p[2]
			}
			o := j
			if flip {
				o = sw - 1 - j
			}
			out[3*o], out[3*o+1], out[3*o+2] = r, g, b
		}
	}

	// Vertical pass, accumulating straight into the output planes.
	plane := sw * sh
	for i := range sh {
		R := dst[i*sw : (i+1)*sw]
		G := dst[plane+i*sw : plane+(i+1)*sw]
		B := dst[2*plane+i*sw : 2*plane+(i+1)*sw]
		clear(R)
		clear(G)
		clear(B)
		w := s.y.w[i*s.y.k : i*s.y.k+int(s.y.n[i])]
		for t, wt := range w {
			wt *= 1.0 / 255
			y := int(s.y.start[i]) + t - y0
			in := s.tmp[y*rowLen : (y+1)*rowLen]
			for j := range sw {
				p := in[3*j : 3*j+3 : 3*j+3]
				R[j] += wt * p[0]
				G[j] += wt * p[1]
				B[j] += wt * p[2]
			}
		}
		// The weights are positive and sum to 1, so only rounding can
		// push a value past 1.
		for j := range sw {
			R[j], G[j], B[j] = min(R[j], 1), min(G[j], 1), min(B[j], 1)
		}
	}
}

// loadRow reads pixels x0 .. x1-1 of row y of img as RGB floats in 0..255,
// with alpha dropped after un-premultiplying, as Pillow's convert("RGB").
func loadRow(img image.Image, x0, x1, y int, row []float32) {
	switch m := img.(type) {
	case *image.NRGBA:
		p := m.Pix[m.PixOffset(x0, y):]
		for i := range x1 - x0 {
			q := p[4*i : 4*i+3 : 4*i+3]
			row[3*i], row[3*i+1], row[3*i+2] = float32(q[0]), float32(q[1]), float32(q[2])
		}
	case *image.RGBA:
		p := m.Pix[m.PixOffset(x0, y):]
		for i := range x1 - x0 {
			q := p[4*i : 4*i+4 : 4*i+4]
			r, g, b, a := uint32(q[0]), uint32(q[1]), uint32(q[2]), uint32(q[3])
			if a != 0xff && a != 0 {
				r, g, b = r*0xff/a, g*0xff/a, b*0xff/a
			}
			row[3*i], row[3*i+1], row[3*i+2] = float32(r), float32(g), float32(b)
		}
	case *image.YCbCr:
		for i := range x1 - x0 {
			yi, ci := m.YOffset(x0+i, y), m.COffset(x0+i, y)
			r, g, b := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			row[3*i], row[3*i+1], row[3*i+2] = float32(r), float32(g), float32(b)
		}
	case *image.Gray:
		p := m.Pix[m.PixOffset(x0, y):]
		for i := range x1 - x0 {
			v := float32(p[i])
			row[3*i], row[3*i+1], row[3*i+2] = v, v, v
		}
	default:
		// Any other image type: correct, but slow and allocating.
		for i := range x1 - x0 {
			c := color.NRGBAModel.Convert(img.At(x0+i, y)).(color.NRGBA)
			row[3*i], row[3*i+1], row[3*i+2] = float32(c.R), float32(c.G), float32(c.B)
		}
	}
}
