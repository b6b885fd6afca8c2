package augment

import (
	"errors"
	"fmt"
	"image"
)

// ParamError reports a TrainParams or EvalParams field that NewTrain or
// NewEval refused. Field names the struct field as written in Go ("Scale",
// "Std[1]"), so a config loader can point at the offending key.
type ParamError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("augment: bad %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Errors returned by Apply, wrapped with details; test with errors.Is.
var (
	// ErrEmptyImage means the input image is nil or has no pixels.
	ErrEmptyImage = errors.New("augment: empty image")
	// ErrDstSize means dst is not 3*Size()*Size() long.
	ErrDstSize = errors.New("augment: dst has the wrong length")
)

// checkApply holds the argument checks shared by Train.Apply and Eval.Apply.
func checkApply(size int, img image.Image, dst []float32) error {
	if want := 3 * size * size; len(dst) != want {
		return fmt.Errorf("%w: got %d floats, want 3*%d*%d = %d", ErrDstSize, len(dst), size, size, want)
	}
	if img == nil {
		return fmt.Errorf("%w: nil image", ErrEmptyImage)
	}
	if b := img.Bounds(); b.Empty() {
		return fmt.Errorf("%w: bounds %v", ErrEmptyImage, b)
	}
	return nil
}

// checkRegion holds the argument checks of ApplyRegion.
func checkRegion(size int, img image.Image, scale int, f32 []float32, u8 []uint8) error {
	want := 3 * size * size
	switch {
	case (f32 == nil) == (u8 == nil):
		return fmt.Errorf("%w: give exactly one of the float32 and uint8 outputs", ErrDstSize)
	case f32 != nil && len(f32) != want:
		return fmt.Errorf("%w: got %d floats, want 3*%d*%d = %d", ErrDstSize, len(f32), size, size, want)
	case u8 != nil && len(u8) != want:
		return fmt.Errorf("%w: got %d bytes, want 3*%d*%d = %d", ErrDstSize, len(u8), size, size, want)
	case scale != 1 && scale != 2 && scale != 4 && scale != 8:
		return fmt.Errorf("augment: decode scale 1/%d: want 1, 2, 4 or 8", scale)
	case img == nil:
		return fmt.Errorf("%w: nil image", ErrEmptyImage)
	case img.Bounds().Empty():
		return fmt.Errorf("%w: bounds %v", ErrEmptyImage, img.Bounds())
	}
	return nil
}

func checkNormalize(mean, std [3]float32) error {
	for c := range 3 {
		if !(std[c] > 0) || isInfF32(std[c]) {
			return &ParamError{fmt.Sprintf("Std[%d]", c), std[c], "must be a finite number > 0"}
		}
		if mean[c] != mean[c] || isInfF32(mean[c]) {
			return &ParamError{fmt.Sprintf("Mean[%d]", c), mean[c], "must be finite"}
		}
	}
	return nil
}

func isInfF32(v float32) bool { return v > 3.4e38 || v < -3.4e38 }
