package augment

import (
	"errors"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
)

// ImageNet's per-channel mean and standard deviation, torchvision's defaults.
var (
	ImageNetMean = [3]float32{0.485, 0.456, 0.406}
	ImageNetStd  = [3]float32{0.229, 0.224, 0.225}
)

// TrainParams configures the training transform: torchvision's
// RandomResizedCrop(Size, Scale, Ratio, bilinear), RandomHorizontalFlip(HFlip),
// ColorJitter(Brightness, Contrast, Saturation), ToTensor, Normalize(Mean, Std).
type TrainParams struct {
	Size       int        // output side in pixels
	Scale      [2]float64 // RandomResizedCrop area fraction range, torchvision default {0.08, 1}
	Ratio      [2]float64 // aspect ratio (width/height) range, default {3/4, 4/3}
	HFlip      float64    // probability of a horizontal flip, default 0.5
	Brightness float64    // ColorJitter factors; 0 = off
	Contrast   float64
	Saturation float64
	Mean, Std  [3]float32 // normalize; ImageNet's by default
}

// DefaultTrainParams returns torchvision's defaults for a size x size output,
// with colour jitter off.
func DefaultTrainParams(size int) TrainParams {
	return TrainParams{
		Size:  size,
		Scale: [2]float64{0.08, 1},
		Ratio: [2]float64{3.0 / 4, 4.0 / 3},
		HFlip: 0.5,
		Mean:  ImageNetMean,
		Std:   ImageNetStd,
	}
}

// Train is the training transform. It satisfies data.Transform and is safe
// for concurrent use.
type Train struct {
	p      TrainParams
	jitter [numOps]float64
	anyJit bool
}

// NewTrain checks p and returns its transform. A bad field gives a
// *ParamError naming it.
func NewTrain(p TrainParams) (*Train, error) {
	bad := func(field string, v any, why string) (*Train, error) {
		return nil, &ParamError{field, v, why}
	}
	switch {
	case p.Size <= 0:
		return bad("Size", p.Size, "must be > 0")
	case !(0 < p.Scale[0] && p.Scale[0] <= p.Scale[1] && p.Scale[1] <= 1):
		return bad("Scale", p.Scale, "want 0 < Scale[0] <= Scale[1] <= 1")
	case !(0 < p.Ratio[0] && p.Ratio[0] <= p.Ratio[1]) || math.IsInf(p.Ratio[1], 0):
		return bad("Ratio", p.Ratio, "want 0 < Ratio[0] <= Ratio[1] < Inf")
	case !(0 <= p.HFlip && p.HFlip <= 1):
		return bad("HFlip", p.HFlip, "must be a probability in [0, 1]")
	}
	t := &Train{p: p, jitter: [numOps]float64{p.Brightness, p.Contrast, p.Saturation}}
	for op, name := range [numOps]string{"Brightness", "Contrast", "Saturation"} {
		f := t.jitter[op]
		if !(f >= 0) || math.IsInf(f, 0) {
			return bad(name, f, "must be a finite number >= 0")
		}
		t.anyJit = t.anyJit || f > 0
	}
	if err := checkNormalize(p.Mean, p.Std); err != nil {
		return nil, err
	}
	return t, nil
}

// Size returns the output side in pixels.
func (t *Train) Size() int { return t.p.Size }

// Params returns the parameters t was made with.
func (t *Train) Params() TrainParams { return t.p }

var errNilRand = errors.New("augment: Train.Apply needs an rng")

// Apply writes the transformed img into dst (3*Size()*Size() floats, CHW,
// normalized). The rng draws are, in this fixed order: the crop (see
// CropRect), one Float64 for the flip, then, if any jitter factor is on, the
// op order and one Float64 per enabled op.
func (t *Train) Apply(img image.Image, rng *rand.Rand, dst []float32) error {
	if err := checkApply(t.p.Size, img, dst); err != nil {
		return err
	}
	if rng == nil {
		return errNilRand
	}
	b := img.Bounds()
	src, _, _ := t.Region(b.Dx(), b.Dy(), rng)
	return t.ApplyRegion(img, 1, src, rng, dst, nil)
}

// Region draws the crop for a w x h image, the first draws Apply makes,
// before the image is decoded: src is the crop in full-size pixels and
// outW x outH (Size x Size) what it is resized to, so a decoder can pick a
// reduced scale that still gives at least that many pixels.
func (t *Train) Region(w, h int, rng *rand.Rand) (src image.Rectangle, outW, outH int) {
	return CropRect(w, h, t.p.Scale, t.p.Ratio, rng), t.p.Size, t.p.Size
}

// ApplyRegion finishes what Region began, with the same rng: img is the
// image decoded at 1/scale of its full size (scale 1, 2, 4 or 8; pixel x
// covers full-size pixels scale*x .. scale*x+scale-1) and src the crop
// Region drew. It writes the output into exactly one of f32 (normalized) or
// u8 (round(255 v), for normalization on the device; see NormalizeU8), each
// 3*Size()*Size() long, CHW. Crop, resize, flip, jitter and normalize run
// in two passes over the pixels (horizontal resize; vertical resize, colour
// ops, normalize or quantize), three when contrast is on (its mean gray
// level must be known before it runs: see resampleBox).
func (t *Train) ApplyRegion(img image.Image, scale int, src image.Rectangle, rng *rand.Rand, f32 []float32, u8 []uint8) error {
	if err := checkRegion(t.p.Size, img, scale, f32, u8); err != nil {
		return err
	}
	if rng == nil {
		return errNilRand
	}
	flip := rng.Float64() < t.p.HFlip
	var jit jitter
	if t.anyJit {
		jit = drawJitter(t.jitter, rng)
	}
	s := t.p.Size
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	out := output{F32: f32, U8: u8, mean: t.p.Mean, inv: invStd(t.p.Std)}
	var jp *jitter
	if t.anyJit {
		jp = &jit
	}
	resampleBox(sc, img, boxOf(img.Bounds(), src, scale), s, s, image.Rect(0, 0, s, s), flip, out, jp)
	return nil
}

// String describes the transform as torchvision would print its pipeline.
func (t *Train) String() string {
	p := t.p
	return fmt.Sprintf("RandomResizedCrop(size=%d, scale=%v, ratio=%.4g, bilinear) RandomHorizontalFlip(p=%g) ColorJitter(brightness=%g, contrast=%g, saturation=%g) Normalize(mean=%v, std=%v)",
		p.Size, p.Scale, p.Ratio, p.HFlip, p.Brightness, p.Contrast, p.Saturation, p.Mean, p.Std)
}
