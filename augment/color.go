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
	ops    [numOps]int // plan's storage
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

// plan lists the enabled ops in the drawn order and splits the list at
// contrast: the ops before it can run as soon as a row of the resize is out
// (with the row's luma summed for contrast's mean), the rest only once the
// whole image has been through them. Without contrast every op is in pre.
func (j *jitter) plan() (pre, post []int) {
	k, split := 0, -1
	for _, op := range j.order {
		if j.on[op] {
			if op == opContrast {
				split = k
			}
			j.ops[k] = op
			k++
		}
	}
	if split < 0 {
		return j.ops[:k], nil
	}
	return j.ops[:split], j.ops[split:k]
}

// apply runs ops, in order, on the pixels r[i], g[i], b[i]; contrastM is
// (1-f) times the mean gray level, contrast's blend target. The arithmetic
// is torchvision's, op by op, in float32, with its clamps after each op
// (adjust_brightness, adjust_contrast, adjust_saturation); applying the ops
// chunk by chunk rather than each to the whole image in turn changes only
// the order of memory traffic, not a bit of the values.
func (j *jitter) apply(ops []int, r, g, b []float32, contrastM float32) {
	for _, op := range ops {
		f := j.factor[op]
		switch op {
		case opBrightness:
			brightness(r, f)
			brightness(g, f)
			brightness(b, f)
		case opContrast:
			contrast(r, f, contrastM)
			contrast(g, f, contrastM)
			contrast(b, f, contrastM)
		default:
			saturation(r, g, b, f)
		}
	}
}

// contrastTarget is (1-f) times the mean gray level, from graySum's lanes
// over n pixels. The lanes make the sum's rounding differ from a plain
// sequential float64 sum (the code before the vector kernels): the mean,
// rounded to float32, can then differ in its last bit, about once in 10^4
// images; see TestMatchesLegacy for the tolerance this leaves.
func (j *jitter) contrastTarget(s *[8]float64, n int) float32 {
	return (1 - j.factor[opContrast]) * float32(laneTotal(s)/float64(n))
}

// finish runs post (contrast and the ops after it) over three CHW planes of
// n pixels, in chunks small enough to stay in L1, and writes them out.
func (j *jitter) finish(post []int, pix []float32, n int, contrastM float32, out output) {
	const chunk = 512
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		r, g, b := pix[lo:hi], pix[n+lo:n+hi], pix[2*n+lo:2*n+hi]
		j.apply(post, r, g, b, contrastM)
		out.put(0, lo, r)
		out.put(1, n+lo, g)
		out.put(2, 2*n+lo, b)
	}
}

// gray is the luma; the conversions keep the rounding of each step (see
// kernels.go).
func gray(r, g, b float32) float32 {
	return float32(float32(grayW[0]*r)+float32(grayW[1]*g)) + float32(grayW[2]*b)
}

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
