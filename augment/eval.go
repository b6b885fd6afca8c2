package augment

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
)

// EvalParams configures the evaluation transform: torchvision's
// Resize(round(Size/ResizeRatio), bilinear), CenterCrop(Size), ToTensor,
// Normalize(Mean, Std), as in its classification reference.
type EvalParams struct {
	Size        int     // output side in pixels
	ResizeRatio float64 // the shorter side is resized to round(Size/ResizeRatio); default 0.875 (224 of 256)
	Mean, Std   [3]float32
}

// DefaultEvalParams returns the torchvision reference's evaluation settings
// for a size x size output.
func DefaultEvalParams(size int) EvalParams {
	return EvalParams{Size: size, ResizeRatio: 0.875, Mean: ImageNetMean, Std: ImageNetStd}
}

// Eval is the evaluation transform. It satisfies data.Transform, draws
// nothing from the rng (which may be nil), and is safe for concurrent use.
type Eval struct {
	p     EvalParams
	short int // the shorter side after the resize
}

// NewEval checks p and returns its transform. A bad field gives a
// *ParamError naming it.
func NewEval(p EvalParams) (*Eval, error) {
	switch {
	case p.Size <= 0:
		return nil, &ParamError{"Size", p.Size, "must be > 0"}
	case !(0 < p.ResizeRatio && p.ResizeRatio <= 1):
		// Above 1 the centre crop would need padding, which we do not do.
		return nil, &ParamError{"ResizeRatio", p.ResizeRatio, "want 0 < ResizeRatio <= 1"}
	}
	if err := checkNormalize(p.Mean, p.Std); err != nil {
		return nil, err
	}
	return &Eval{p: p, short: int(math.Round(float64(p.Size) / p.ResizeRatio))}, nil
}

// Size returns the output side in pixels.
func (e *Eval) Size() int { return e.p.Size }

// Params returns the parameters e was made with.
func (e *Eval) Params() EvalParams { return e.p }

// Apply writes the transformed img into dst (3*Size()*Size() floats, CHW,
// normalized). rng is ignored.
func (e *Eval) Apply(img image.Image, rng *rand.Rand, dst []float32) error {
	if err := checkApply(e.p.Size, img, dst); err != nil {
		return err
	}
	b := img.Bounds()
	src, _, _ := e.Region(b.Dx(), b.Dy(), rng)
	return e.ApplyRegion(img, 1, src, rng, dst, nil)
}

// Region says what Apply reads of a w x h image before it is decoded: all
// of it (src), resized to outW x outH before the centre crop. It draws
// nothing; rng may be nil.
func (e *Eval) Region(w, h int, _ *rand.Rand) (src image.Rectangle, outW, outH int) {
	outW, outH = resizedSize(w, h, e.short)
	return image.Rect(0, 0, w, h), outW, outH
}

// ApplyRegion is Apply for an image decoded at 1/scale of its full size,
// src being what Region returned, writing into exactly one of f32
// (normalized) or u8 (quantized); see Train.ApplyRegion.
func (e *Eval) ApplyRegion(img image.Image, scale int, src image.Rectangle, _ *rand.Rand, f32 []float32, u8 []uint8) error {
	if err := checkRegion(e.p.Size, img, scale, f32, u8); err != nil {
		return err
	}
	w, h := resizedSize(src.Dx(), src.Dy(), e.short)
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	out := output{F32: f32, U8: u8, mean: e.p.Mean, inv: invStd(e.p.Std)}
	resampleBox(sc, img, boxOf(img.Bounds(), src, scale), w, h, centerCrop(w, h, e.p.Size), false, out, nil)
	return nil
}

// resizedSize is torchvision's Resize(short) output size
// (_compute_resized_output_size): the shorter side becomes short, the longer
// one int(short * long / shorter), truncated.
func resizedSize(w, h, short int) (int, int) {
	if w <= h {
		return short, int(float64(short) * float64(h) / float64(w))
	}
	return int(float64(short) * float64(w) / float64(h)), short
}

// centerCrop is torchvision's CenterCrop window: top and left are
// int(round((side - size) / 2)) with Python's round, half to even.
func centerCrop(w, h, size int) image.Rectangle {
	top := int(math.RoundToEven(float64(h-size) / 2))
	left := int(math.RoundToEven(float64(w-size) / 2))
	return image.Rect(left, top, left+size, top+size)
}

// String describes the transform as torchvision would print its pipeline.
func (e *Eval) String() string {
	return fmt.Sprintf("Resize(%d, bilinear) CenterCrop(%d) Normalize(mean=%v, std=%v)",
		e.short, e.p.Size, e.p.Mean, e.p.Std)
}
