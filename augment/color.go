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

// apply runs the jitter on three CHW planes of n pixels each.
func (j *jitter) apply(pix []float32, n int) {
	for _, op := range j.order {
		if !j.on[op] {
			continue
		}
		f := j.factor[op]
		switch op {
		case opBrightness:
			adjustBrightness(pix, f)
		case opContrast:
			adjustContrast(pix, n, f)
		case opSaturation:
			adjustSaturation(pix, n, f)
		}
	}
}

// adjustBrightness is torchvision's adjust_brightness: img * f, clamped.
func adjustBrightness(pix []float32, f float32) {
	for i, v := range pix {
		pix[i] = clamp01(v * f)
	}
}

// adjustContrast is torchvision's adjust_contrast: a blend with the mean of
// the grayscale image, f*img + (1-f)*mean, clamped.
func adjustContrast(pix []float32, n int, f float32) {
	r, g, b := pix[:n], pix[n:2*n], pix[2*n:3*n]
	var sum float64
	for i := range n {
		sum += float64(gray(r[i], g[i], b[i]))
	}
	m := (1 - f) * float32(sum/float64(n))
	for i, v := range pix[:3*n] {
		pix[i] = clamp01(f*v + m)
	}
}

// adjustSaturation is torchvision's adjust_saturation: a blend with the
// pixel's own gray level, f*img + (1-f)*gray, clamped.
func adjustSaturation(pix []float32, n int, f float32) {
	r, g, b := pix[:n], pix[n:2*n], pix[2*n:3*n]
	for i := range n {
		m := (1 - f) * gray(r[i], g[i], b[i])
		r[i] = clamp01(f*r[i] + m)
		g[i] = clamp01(f*g[i] + m)
		b[i] = clamp01(f*b[i] + m)
	}
}

func gray(r, g, b float32) float32 { return 0.299*r + 0.587*g + 0.114*b }

// clamp01 clamps v to [0, 1].
func clamp01(v float32) float32 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

// normalize maps each plane to (v - mean) / std, as torchvision's Normalize
// (multiplying by 1/std, which can differ from dividing in the last bit).
func normalize(pix []float32, n int, mean, std [3]float32) {
	for c := range 3 {
		m, inv := mean[c], 1/std[c]
		p := pix[c*n : (c+1)*n]
		for i, v := range p {
			p[i] = (v - m) * inv
		}
	}
}
