package augment

import (
	"image"
	"image/color"
	"math/rand/v2"
)

// The transform as it was before the vector kernels (commit 859a1bc),
// copied verbatim but for the names: the reference the tests hold the new
// code to. Its arithmetic is the same, op by op, except the contrast mean,
// which it sums sequentially where the new code sums in eight lanes.

// legacyResampleBox resizes the box bx of img to outW x outH and writes the
// window win of the result as out says. Two passes: horizontal, from the
// image's pixels into s.tmp; vertical, from s.tmp into out.
func legacyResampleBox(s *legacyScratch, img image.Image, bx srcBox, outW, outH int, win image.Rectangle, flip bool, out legacyOutput) {
	sw, sh := win.Dx(), win.Dy()
	s.x.computeBox(bx.px.Min.X, bx.px.Max.X, bx.x0, bx.x1, outW, win.Min.X, sw)
	s.y.computeBox(bx.px.Min.Y, bx.px.Max.Y, bx.y0, bx.y1, outH, win.Min.Y, sh)
	x0, x1 := s.x.span()
	y0, y1 := s.y.span()

	// Horizontal pass over the source rows the vertical taps need.
	rowLen := 3 * sw
	s.tmp = grow(s.tmp, (y1-y0)*rowLen)
	m, fast := img.(*image.NRGBA)
	if !fast {
		s.row = grow(s.row, 3*(x1-x0))
	}
	for y := y0; y < y1; y++ {
		tmp := s.tmp[(y-y0)*rowLen : (y-y0+1)*rowLen]
		if fast {
			row := m.Pix[m.PixOffset(x0, y) : m.PixOffset(x0, y)+4*(x1-x0)]
			legacyHpassRGBA(&s.x, row, x0, tmp, sw, flip)
			continue
		}
		legacyLoadRow(img, x0, x1, y, s.row)
		legacyHpassRGB(&s.x, s.row, x0, tmp, sw, flip)
	}

	// Vertical pass, a row at a time into s.acc, then out.
	plane := sw * sh
	s.acc = grow(s.acc, 3*sw)
	R, G, B := s.acc[:sw], s.acc[sw:2*sw], s.acc[2*sw:3*sw]
	for i := range sh {
		clear(s.acc)
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
		for c, acc := range [3][]float32{R, G, B} {
			o := c*plane + i*sw
			switch {
			case out.U8 != nil:
				dst := out.U8[o : o+sw]
				for j, v := range acc {
					dst[j] = uint8(min(v, 1)*255 + 0.5)
				}
			case out.plain:
				dst := out.F32[o : o+sw]
				for j, v := range acc {
					dst[j] = min(v, 1)
				}
			default:
				dst := out.F32[o : o+sw]
				m, inv := out.mean[c], out.inv[c]
				for j, v := range acc {
					dst[j] = (min(v, 1) - m) * inv
				}
			}
		}
	}
}

// legacyHpassRGBA resizes one row of RGBA bytes (starting at pixel x0) into sw
// RGB floats in 0..255, mirrored when flip.
func legacyHpassRGBA(a *axis, row []uint8, x0 int, out []float32, sw int, flip bool) {
	for j := range sw {
		w := a.w[j*a.k : j*a.k+int(a.n[j])]
		in := row[4*(int(a.start[j])-x0):]
		in = in[:4*len(w)]
		var r, g, b float32
		for t, wt := range w {
			p := in[4*t : 4*t+3 : 4*t+3]
			r += wt * float32(p[0])
			g += wt * float32(p[1])
			b += wt * float32(p[2])
		}
		o := j
		if flip {
			o = sw - 1 - j
		}
		out[3*o], out[3*o+1], out[3*o+2] = r, g, b
	}
}

// legacyHpassRGB is hpassRGBA for a row of RGB floats.
func legacyHpassRGB(a *axis, row []float32, x0 int, out []float32, sw int, flip bool) {
	for j := range sw {
		w := a.w[j*a.k : j*a.k+int(a.n[j])]
		in := row[3*(int(a.start[j])-x0):]
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

// legacyLoadChunk copies pixels lo..lo+m of each of the three planes of pix (CHW,
// n pixels a plane) into buf and returns the three filled slices.
func legacyLoadChunk(buf *[3][256]float32, pix []float32, n, lo, m int) (r, g, b []float32) {
	r, g, b = buf[0][:m], buf[1][:m], buf[2][:m]
	copy(r, pix[lo:lo+m])
	copy(g, pix[n+lo:n+lo+m])
	copy(b, pix[2*n+lo:2*n+lo+m])
	return r, g, b
}

func (j *jitter) legacyFinish(pix []float32, n int, out legacyOutput) {
	const chunk = 256
	var buf [3][chunk]float32
	var ops [numOps]int
	k := 0
	for _, op := range j.order {
		if j.on[op] {
			ops[k] = op
			k++
		}
	}
	active := ops[:k]
	var contrastM float32 // (1-f) * mean gray before contrast
	if j.on[opContrast] {
		var before []int
		for i, op := range active {
			if op == opContrast {
				before = active[:i]
			}
		}
		var sum float64
		for lo := 0; lo < n; lo += chunk {
			m := min(chunk, n-lo)
			r, g, b := legacyLoadChunk(&buf, pix, n, lo, m)
			for _, op := range before {
				j.legacyRun(op, r, g, b, 0)
			}
			for i := range m {
				sum += float64(legacyGray(r[i], g[i], b[i]))
			}
		}
		contrastM = (1 - j.factor[opContrast]) * float32(sum/float64(n))
	}
	for lo := 0; lo < n; lo += chunk {
		m := min(chunk, n-lo)
		r, g, b := legacyLoadChunk(&buf, pix, n, lo, m)
		for _, op := range active {
			j.legacyRun(op, r, g, b, contrastM)
		}
		for c, p := range [3][]float32{r, g, b} {
			o := c*n + lo
			switch {
			case out.U8 != nil:
				d := out.U8[o : o+m]
				for i, v := range p {
					d[i] = uint8(v*255 + 0.5)
				}
			case out.plain:
				copy(out.F32[o:o+m], p)
			default:
				d := out.F32[o : o+m]
				mc, inv := out.mean[c], out.inv[c]
				for i, v := range p {
					d[i] = (v - mc) * inv
				}
			}
		}
	}
}

// legacyRun applies one op to a chunk of pixels; contrastM is (1-f)*mean gray.
func (j *jitter) legacyRun(op int, r, g, b []float32, contrastM float32) {
	f := j.factor[op]
	switch op {
	case opBrightness: // adjust_brightness: img * f, clamped
		for _, p := range [3][]float32{r, g, b} {
			for i, v := range p {
				p[i] = clamp01(v * f)
			}
		}
	case opContrast: // adjust_contrast: f*img + (1-f)*mean gray of the image
		for _, p := range [3][]float32{r, g, b} {
			for i, v := range p {
				p[i] = clamp01(f*v + contrastM)
			}
		}
	default: // adjust_saturation: f*img + (1-f)*the pixel's gray
		g, b = g[:len(r)], b[:len(r)]
		for i := range r {
			m := (1 - f) * legacyGray(r[i], g[i], b[i])
			r[i] = clamp01(f*r[i] + m)
			g[i] = clamp01(f*g[i] + m)
			b[i] = clamp01(f*b[i] + m)
		}
	}
}

// legacyApplyRegion is Train.ApplyRegion as it was.
func (t *Train) legacyApplyRegion(s *legacyScratch, img image.Image, scale int, src image.Rectangle, rng *rand.Rand, f32 []float32, u8 []uint8) {
	flip := rng.Float64() < t.p.HFlip
	var jit jitter
	if t.anyJit {
		jit = drawJitter(t.jitter, rng)
	}
	sz := t.p.Size
	bx := boxOf(img.Bounds(), src, scale)
	out := legacyOutput{F32: f32, U8: u8, mean: t.p.Mean, inv: invStd(t.p.Std)}
	win := image.Rect(0, 0, sz, sz)
	if !t.anyJit {
		legacyResampleBox(s, img, bx, sz, sz, win, flip, out)
		return
	}
	planes := f32
	if planes == nil {
		s.planes = grow(s.planes, 3*sz*sz)
		planes = s.planes
	}
	legacyResampleBox(s, img, bx, sz, sz, win, flip, legacyOutput{F32: planes, plain: true})
	jit.legacyFinish(planes, sz*sz, out)
}

// legacyOutput is the output type the legacy code used.
type legacyOutput struct {
	F32       []float32
	U8        []uint8
	plain     bool
	mean, inv [3]float32
}

// legacyScratch is the scratch the legacy code used.
type legacyScratch struct {
	x, y   axis
	row    []float32
	tmp    []float32
	acc    []float32
	planes []float32
}

// legacyLoadRow reads pixels x0 .. x1-1 of row y of img as RGB floats in 0..255,
// with alpha dropped after un-premultiplying, as Pillow's convert("RGB").
func legacyLoadRow(img image.Image, x0, x1, y int, row []float32) {
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

func legacyGray(r, g, b float32) float32 { return 0.299*r + 0.587*g + 0.114*b }
