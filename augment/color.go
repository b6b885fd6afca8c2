package augment

import "math/rand/v2"

// Colour jitter with torchvision's meaning (transforms.ColorJitter on float
// tensors, torchvision/transforms/_functional_tensor.py), not imaging's:
// brightness multiplies, contrast blends toward the mean gray level of the
// whole image, saturation blends toward each pixel's gray level, and every op
// clamps to [0, 1]. Gray is ITU-R 601-2 luma, 0.299R + 0.587G + 0.114B, as in
// Pillow's convert("L") (torchvision's tensor path uses 0.2989 for R).

// Jitter op ids, in torchvision's numbering.
const (
	opBrightness = iota
	opContrast
	opSaturation
	numOps
)

// jitter is one draw of ColorJitter's parameters: the order to apply the ops
// in, which ops are on, and each one's factor.
type jitter struct {
	order  [numOps]int
	on     [numOps]bool
	factor [numOps]float32
}

// drawJitter draws the op order (a Fisher-Yates shuffle, three IntN calls'
// worth: IntN(3), IntN(2)) and then one Float64 per enabled op, in op order,
// uniform in [max(0, 1-f), 1+f] as torchvision's ColorJitter.get_params.
func drawJitter(strength [numOps]float64, rng *rand.Rand) jitter {
	var j jitter
	j.order = [numOps]int{0, 1, 2}
	for i := numOps - 1; i > 0; i-- {
		k := rng.IntN(i + 1)
		j.order[i], j.order[k] = j.order[k], j.order[i]
	}
	for op, f := range strength {
		if f > 0 {
			lo, hi := max(0, 1-f), 1+f
			j.on[op] = true
			j.factor[op] = float32(lo + (hi-lo)*rng.Float64())
		}
	}
	return j
}

// finish applies the jitter to three CHW planes of n pixels in [0, 1] and
// writes the result as out says (normalized float32, in place or not, or
// quantized uint8), in one pass over memory: pixels go through in chunks
// small enough to stay in L1, each chunk through the enabled ops in the
// drawn order, then normalize or quantize. Contrast needs the mean gray
// level of the image as it stands when contrast's turn comes, so when
// contrast is on, a read-only pass computes it first.
//
// The arithmetic is torchvision's, op by op, in float32, with the same
// clamps as applying each op to the whole image in turn (adjust_brightness,
// adjust_contrast, adjust_saturation); only the order of memory traffic
// differs, so the values are the same, bit for bit.
// loadChunk copies pixels lo..lo+m of each of the three planes of pix (CHW,
// n pixels a plane) into buf and returns the three filled slices.
func loadChunk(buf *[3][256]float32, pix []float32, n, lo, m int) (r, g, b []float32) {
	r, g, b = buf[0][:m], buf[1][:m], buf[2][:m]
	copy(r, pix[lo:lo+m])
	copy(g, pix[n+lo:n+lo+m])
	copy(b, pix[2*n+lo:2*n+lo+m])
	return r, g, b
}

func (j *jitter) finish(pix []float32, n int, out output) {
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
			r, g, b := loadChunk(&buf, pix, n, lo, m)
			for _, op := range before {
				j.run(op, r, g, b, 0)
			}
			for i := range m {
				sum += float64(gray(r[i], g[i], b[i]))
			}
		}
		contrastM = (1 - j.factor[opContrast]) * float32(sum/float64(n))
	}
	for lo := 0; lo < n; lo += chunk {
		m := min(chunk, n-lo)
		r, g, b := loadChunk(&buf, pix, n, lo, m)
		for _, op := range active {
			j.run(op, r, g, b, contrastM)
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

// run applies one op to a chunk of pixels; contrastM is (1-f)*mean gray.
func (j *jitter) run(op int, r, g, b []float32, contrastM float32) {
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
			m := (1 - f) * gray(r[i], g[i], b[i])
			r[i] = clamp01(f*r[i] + m)
			g[i] = clamp01(f*g[i] + m)
			b[i] = clamp01(f*b[i] + m)
		}
	}
}

func gray(r, g, b float32) float32 { return 0.299*r + 0.587*g + 0.114*b }

// clamp01 clamps v to [0, 1].
// The builtins compile to branch-free MAXSS/MINSS: jittered values land on
// either side of the bounds at random, which branches mispredict.
func clamp01(v float32) float32 { return min(max(v, 0), 1) }

// invStd returns 1/std per channel: Normalize multiplies by it (which can
// differ from dividing in the last bit).
func invStd(std [3]float32) [3]float32 {
	return [3]float32{1 / std[0], 1 / std[1], 1 / std[2]}
}

// NormalizeU8 turns uint8 CHW images, as a loader with uint8 batches
// yields them (each 3 planes of size*size, image after image), into
// normalized float32: dst[i] = (src[i]/255 - mean[c]) / std[c], the
// ToTensor + Normalize the float32 batches get in the workers, up to the
// uint8 rounding (at most 0.5/255/std[c]). len(dst) must be len(src), a
// multiple of 3*size*size. It allocates nothing: a 256-entry table per
// channel does the arithmetic.
func NormalizeU8(dst []float32, src []uint8, size int, mean, std [3]float32) {
	plane := size * size
	if plane <= 0 || len(src)%(3*plane) != 0 || len(dst) != len(src) {
		panic("augment: NormalizeU8 needs len(dst) == len(src), a multiple of 3*size*size")
	}
	var lut [3][256]float32
	inv := invStd(std)
	for c := range 3 {
		for u := range 256 {
			lut[c][u] = (float32(u)*(1.0/255) - mean[c]) * inv[c]
		}
	}
	for o := 0; o < len(src); o += 3 * plane {
		for c := range 3 {
			t := &lut[c]
			s := src[o+c*plane : o+(c+1)*plane]
			d := dst[o+c*plane : o+(c+1)*plane]
			for i, u := range s {
				d[i] = t[u]
			}
		}
	}
}
