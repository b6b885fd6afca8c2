package augment

import (
	"errors"
	"image"
	"math"
	"testing"
)

func TestNewTrainErrors(t *testing.T) {
	tests := []struct {
		field string
		edit  func(*TrainParams)
	}{
		{"Size", func(p *TrainParams) { p.Size = 0 }},
		{"Scale", func(p *TrainParams) { p.Scale = [2]float64{0, 1} }},
		{"Scale", func(p *TrainParams) { p.Scale = [2]float64{0.5, 0.4} }},
		{"Scale", func(p *TrainParams) { p.Scale = [2]float64{0.5, 1.1} }},
		{"Ratio", func(p *TrainParams) { p.Ratio = [2]float64{0, 1} }},
		{"Ratio", func(p *TrainParams) { p.Ratio = [2]float64{2, 1} }},
		{"Ratio", func(p *TrainParams) { p.Ratio = [2]float64{1, math.Inf(1)} }},
		{"HFlip", func(p *TrainParams) { p.HFlip = 1.5 }},
		{"HFlip", func(p *TrainParams) { p.HFlip = math.NaN() }},
		{"Brightness", func(p *TrainParams) { p.Brightness = -0.1 }},
		{"Contrast", func(p *TrainParams) { p.Contrast = math.NaN() }},
		{"Saturation", func(p *TrainParams) { p.Saturation = math.Inf(1) }},
		{"Std[1]", func(p *TrainParams) { p.Std[1] = 0 }},
		{"Mean[2]", func(p *TrainParams) { p.Mean[2] = float32(math.NaN()) }},
	}
	for _, tt := range tests {
		p := DefaultTrainParams(32)
		tt.edit(&p)
		_, err := NewTrain(p)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Field != tt.field {
			t.Errorf("want a ParamError for %s, got %v", tt.field, err)
		}
	}
	if _, err := NewTrain(DefaultTrainParams(32)); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

func TestNewEvalErrors(t *testing.T) {
	tests := []struct {
		field string
		edit  func(*EvalParams)
	}{
		{"Size", func(p *EvalParams) { p.Size = -1 }},
		{"ResizeRatio", func(p *EvalParams) { p.ResizeRatio = 0 }},
		{"ResizeRatio", func(p *EvalParams) { p.ResizeRatio = 1.2 }},
		{"Std[0]", func(p *EvalParams) { p.Std[0] = -1 }},
	}
	for _, tt := range tests {
		p := DefaultEvalParams(32)
		tt.edit(&p)
		_, err := NewEval(p)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Field != tt.field {
			t.Errorf("want a ParamError for %s, got %v", tt.field, err)
		}
	}
	if _, err := NewEval(DefaultEvalParams(32)); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

func TestApplyErrors(t *testing.T) {
	tr, err := NewTrain(DefaultTrainParams(8))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEval(DefaultEvalParams(8))
	if err != nil {
		t.Fatal(err)
	}
	img := testImage(10, 10)
	tests := []struct {
		name string
		img  image.Image
		dst  int
		want error
	}{
		{"short dst", img, 3*8*8 - 1, ErrDstSize},
		{"long dst", img, 3*8*8 + 1, ErrDstSize},
		{"nil image", nil, 3 * 8 * 8, ErrEmptyImage},
		{"empty image", image.NewNRGBA(image.Rect(3, 3, 3, 9)), 3 * 8 * 8, ErrEmptyImage},
	}
	for _, tt := range tests {
		for _, tf := range []transform{tr, ev} {
			if err := tf.Apply(tt.img, newRand(1), make([]float32, tt.dst)); !errors.Is(err, tt.want) {
				t.Errorf("%s, %T: got %v, want %v", tt.name, tf, err, tt.want)
			}
		}
	}
	if err := tr.Apply(img, nil, make([]float32, 3*8*8)); err == nil {
		t.Error("Train.Apply with a nil rng: no error")
	}
}
