package augment

// The pixel loops of the resize and the colour jitter. Each has two
// versions: AVX2 Go assembly (kernels_amd64.s), used where the CPU has it,
// and the pure-Go loop here, the reference and the fallback. Both do the
// same float32 operations in the same order, so they give the same bits on
// every machine and a batch does not depend on the CPU that built it. There
// is no fused multiply-add anywhere: it rounds once where a multiply and an
// add round twice. The explicit float32 conversions below stop the Go
// compiler from fusing them itself (it may, on GOAMD64=v3).
//
// The vector versions take whole multiples of 8 values (one ymm register);
// the dispatchers run them on the longest such prefix and the Go loop on the
// rest, so every width works.

// useAVX2 says whether the dispatchers call the vector versions. The tests
// switch it off to hold the two paths to each other.
var useAVX2 = hasAVX2

// The ITU-R 601-2 luma weights (see color.go), typed so that the vector
// code is handed exactly the values the Go code multiplies by.
var grayW = [3]float32{0.299, 0.587, 0.114}

// widen sets dst[i] = src[i] for the bytes of a row of RGBA pixels.
func widen(dst []float32, src []uint8) {
	dst = dst[:len(src)]
	n := 0
	if useAVX2 {
		if n = len(src) &^ 7; n > 0 {
			widenAVX2(&dst[0], &src[0], n)
		}
	}
	for i, v := range src[n:] {
		dst[n+i] = float32(v)
	}
}

// hpass resizes one row horizontally: row holds RGBA floats from pixel x0
// on (alpha is read and ignored), out gets the sw outputs as three planes
// (R, G, B, sw each), mirrored when flip. Output j is the sum, tap by tap
// in order, of weight times pixel, from 0.
func hpass(a *axis, row []float32, x0 int, out []float32, sw int, flip bool) {
	out = out[:3*sw]
	if useAVX2 && sw > 0 {
		// The taps' bounds are checked once here, not per pixel.
		lo, hi := a.span()
		if lo < x0 || 4*(hi-x0) > len(row) || len(a.start) < sw || len(a.n) < sw || len(a.w) < (sw-1)*a.k+int(a.n[sw-1]) {
			panic("augment: hpass taps outside the row")
		}
		hpassAVX2(&out[0], &row[0], &a.start[0], &a.n[0], &a.w[0], a.k, x0, sw, flip)
		return
	}
	for j := range sw {
		w := a.w[j*a.k : j*a.k+int(a.n[j])]
		in := row[4*(int(a.start[j])-x0):]
		in = in[:4*len(w)]
		var r, g, b float32
		for t, wt := range w {
			p := in[4*t : 4*t+3 : 4*t+3]
			r += float32(wt * p[0])
			g += float32(wt * p[1])
			b += float32(wt * p[2])
		}
		o := j
		if flip {
			o = sw - 1 - j
		}
		out[o], out[sw+o], out[2*sw+o] = r, g, b
	}
}

// vpass resizes vertically into one output row: acc[x] = min(sum over taps
// t of w[t] * in[off[t] + x], 1), the sum in tap order from 0, for x <
// len(acc). The weights carry the 1/255 that takes bytes to [0, 1]; they
// are positive and sum to 1, so only rounding can push a value past 1.
func vpass(acc, in []float32, off []int, w []float32) {
	L := len(acc)
	if L == 0 {
		return
	}
	if len(w) == 0 || len(off) < len(w) {
		panic("augment: vpass needs a row per tap")
	}
	for _, o := range off[:len(w)] {
		if o < 0 || o+L > len(in) {
			panic("augment: vpass taps outside the rows")
		}
	}
	n := 0
	if useAVX2 {
		if n = L &^ 7; n > 0 {
			vpassAVX2(&acc[0], &in[0], &off[0], &w[0], len(w), n)
		}
	}
	if n == L {
		return
	}
	tail := acc[n:]
	clear(tail)
	for t, wt := range w {
		src := in[off[t]+n : off[t]+L]
		for x := range tail {
			tail[x] += float32(wt * src[x])
		}
	}
	for x, v := range tail {
		tail[x] = min(v, 1)
	}
}

// storeF32 normalizes: dst[i] = (src[i] - m) * inv. With m = 0 and inv = 1
// it copies (values in [0, 1] pass through unchanged, bit for bit).
func storeF32(dst, src []float32, m, inv float32) {
	dst = dst[:len(src)]
	n := 0
	if useAVX2 {
		if n = len(src) &^ 7; n > 0 {
			storeF32AVX2(&dst[0], &src[0], n, m, inv)
		}
	}
	for i, v := range src[n:] {
		dst[n+i] = float32(v-m) * inv
	}
}

// storeU8 quantizes values in [0, 1]: dst[i] = round(255 src[i]), half up.
func storeU8(dst []uint8, src []float32) {
	dst = dst[:len(src)]
	n := 0
	if useAVX2 {
		if n = len(src) &^ 7; n > 0 {
			storeU8AVX2(&dst[0], &src[0], n)
		}
	}
	for i, v := range src[n:] {
		dst[n+i] = uint8(float32(v*255) + 0.5)
	}
}

// brightness is adjust_brightness: p = clamp01(p * f).
func brightness(p []float32, f float32) {
	n := 0
	if useAVX2 {
		if n = len(p) &^ 7; n > 0 {
			brightnessAVX2(&p[0], n, f)
		}
	}
	for i, v := range p[n:] {
		p[n+i] = clamp01(v * f)
	}
}

// contrast is adjust_contrast's blend: p = clamp01(f*p + m), m being
// (1-f) times the mean gray level.
func contrast(p []float32, f, m float32) {
	n := 0
	if useAVX2 {
		if n = len(p) &^ 7; n > 0 {
			contrastAVX2(&p[0], n, f, m)
		}
	}
	for i, v := range p[n:] {
		p[n+i] = clamp01(float32(f*v) + m)
	}
}

// saturation is adjust_saturation: each channel becomes clamp01(f*c +
// (1-f)*gray), gray being the pixel's luma before the op.
func saturation(r, g, b []float32, f float32) {
	g, b = g[:len(r)], b[:len(r)]
	n := 0
	if useAVX2 {
		if n = len(r) &^ 7; n > 0 {
			saturationAVX2(&r[0], &g[0], &b[0], n, f, 1-f, &grayW)
		}
	}
	omf := 1 - f
	for i := n; i < len(r); i++ {
		m := float32(omf * gray(r[i], g[i], b[i]))
		r[i] = clamp01(float32(f*r[i]) + m)
		g[i] = clamp01(float32(f*g[i]) + m)
		b[i] = clamp01(float32(f*b[i]) + m)
	}
}

// graySum adds each pixel's luma, in float64, to the lane s[i%8] of its
// index i in the slice. Eight lanes summed in a fixed order make a mean that
// does not depend on the vector width, and keep the additions independent.
func graySum(r, g, b []float32, s *[8]float64) {
	g, b = g[:len(r)], b[:len(r)]
	n := 0
	if useAVX2 {
		if n = len(r) &^ 7; n > 0 {
			graySumAVX2(&r[0], &g[0], &b[0], n, s, &grayW)
		}
	}
	for i := n; i < len(r); i++ {
		s[i&7] += float64(gray(r[i], g[i], b[i]))
	}
}

// laneTotal adds graySum's lanes in a fixed order.
func laneTotal(s *[8]float64) float64 {
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
