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
func (e *Eval) Apply(img image.Image, _ *rand.Rand, dst []float32) error {
	if err := checkApply(e.p.Size, img, dst); err != nil {
		return err
	}
	b := img.Bounds()
	w, h := resizedSize(b.Dx(), b.Dy(), e.short)
	win := centerCrop(w, h, e.p.Size)
	resample(img, b, w, h, win, false, dst)
	s := e.p.Size
	normalize(dst, s*s, e.p.Mean, e.p.Std)
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
