package model_test

import (
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"stoke/gemm"
	"stoke/internal/statehash"
	"stoke/model"
)

// roundingLayers is the CPU engine's fp32 layers with every conv and linear
// GEMM input rounded by hand before the kernel sees it: the definition of
// train.precision (conv forward x and w, backward-data dy and w,
// backward-filter x and dy; the linear layer's three likewise; a conv
// block's bias gradient from the unrounded dy), written outside the
// kernels, to check the rounding the kernels do inside their GEMMs.
type roundingLayers struct {
	model.Layers
	p gemm.Precision
}

func (r roundingLayers) round(v G.Value) G.Value {
	d := v.(*tensor.Dense)
	s := slices.Clone(d.Float32s())
	gemm.RoundSlice(r.p, s)
	return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(s))
}

func scratchLike(v G.Value) G.Value {
	d := v.(*tensor.Dense)
	return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.Of(tensor.Float32))
}

func (r roundingLayers) NewConv(B, Cin, H, W, Cout, K int, pool bool) (model.ConvKernel, error) {
	k, err := r.Layers.NewConv(B, Cin, H, W, Cout, K, pool)
	return roundingConv{k, r}, err
}

func (r roundingLayers) NewConv2d(B, Cin, H, W, Cout, K, stride, pad, groups int) (model.Conv2dKernel, error) {
	k, err := r.Layers.NewConv2d(B, Cin, H, W, Cout, K, stride, pad, groups)
	return roundingConv2d{k, r}, err
}

func (r roundingLayers) NewLinear(B, C, N int) (model.LinearKernel, error) {
	k, err := r.Layers.NewLinear(B, C, N)
	return roundingLinear{k, r}, err
}

type roundingConv struct {
	k model.ConvKernel
	r roundingLayers
}

func (c roundingConv) Forward(x, w, b, y G.Value) error {
	return c.k.Forward(c.r.round(x), c.r.round(w), b, y)
}

func (c roundingConv) BackwardData(w, y, dy, dx G.Value) error {
	return c.k.BackwardData(c.r.round(w), y, c.r.round(dy), dx)
}

func (c roundingConv) BackwardFilter(x, y, dy, dw, db G.Value) error {
	if err := c.k.BackwardFilter(x, y, dy, scratchLike(dw), db); err != nil { // db: fp32
		return err
	}
	return c.k.BackwardFilter(c.r.round(x), y, c.r.round(dy), dw, scratchLike(db))
}

type roundingConv2d struct {
	k model.Conv2dKernel
	r roundingLayers
}

func (c roundingConv2d) Forward(x, w, y G.Value) error {
	return c.k.Forward(c.r.round(x), c.r.round(w), y)
}

func (c roundingConv2d) BackwardData(w, dy, dx G.Value) error {
	return c.k.BackwardData(c.r.round(w), c.r.round(dy), dx)
}

func (c roundingConv2d) BackwardFilter(x, dy, dw G.Value) error {
	return c.k.BackwardFilter(c.r.round(x), c.r.round(dy), dw)
}

type roundingLinear struct {
	model.LinearKernel
	r roundingLayers
}

func (l roundingLinear) Forward(h, w, b, z G.Value) error {
	return l.LinearKernel.Forward(l.r.round(h), l.r.round(w), b, z)
}

func (l roundingLinear) BackwardData(w, dz, dh G.Value) error {
	return l.LinearKernel.BackwardData(l.r.round(w), l.r.round(dz), dh)
}

func (l roundingLinear) BackwardWeight(h, dz, dw G.Value) error {
	return l.LinearKernel.BackwardWeight(l.r.round(h), l.r.round(dz), dw)
}

// trainedHash is the state hash after a case's 3 steps on eng (nil: New's
// CPU engine at opt.Precision).
func trainedHash(t *testing.T, c statehash.Case, eng *model.Engine, opt model.Options) string {
	t.Helper()
	var m *model.Model
	var err error
	if eng == nil {
		m, err = model.New(c.Spec, opt)
	} else {
		m, err = model.NewOn(*eng, c.Spec, opt)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c.Train(t, func(in model.Input, lr float32) error {
		_, err := m.TrainStep(in.X, in.Labels, in.N, lr)
		return err
	})
	params, optState, err := m.State()
	if err != nil {
		t.Fatal(err)
	}
	return statehash.Hash(params, optState)
}

// TestPrecisionStepIsRoundedInputs: 3 training steps at tf32 and at bf16
// (the cnn's conv blocks, the ResNets' Conv2d family at strides 1 and 2,
// the linear layer) leave, bit for bit, the
// state of the same steps with every GEMM input rounded by hand around the
// fp32 kernels (roundingLayers), and a state unlike fp32's.
func TestPrecisionStepIsRoundedInputs(t *testing.T) {
	defer gemm.SetFastBF16(gemm.SetFastBF16(false)) // the reference: rounding while packing, bit for bit
	names := map[string]bool{"cnn": true, "resnet20": true}
	for _, c := range statehash.Cases {
		if !names[c.Name] {
			continue
		}
		fp32 := trainedHash(t, c, nil, c.Options())
		for _, p := range []gemm.Precision{gemm.TF32, gemm.BF16} {
			opt := c.Options()
			opt.Precision = p
			got := trainedHash(t, c, nil, opt)
			cpu := model.CPUEngine() // fp32 kernels, rounded around
			byHand := model.Engine{Values: cpu.Values, Layers: roundingLayers{cpu.Layers, p}, Updater: cpu.Updater, Precision: p}
			if want := trainedHash(t, c, &byHand, opt); got != want {
				t.Errorf("%s at %v: state %s, want %s (the fp32 kernels on inputs rounded by hand)", c.Name, p, got, want)
			}
			if got == fp32 {
				t.Errorf("%s at %v: the state of fp32: nothing was rounded", c.Name, p)
			}
		}
	}
}

// TestPrecisionEngineMustAgree: a model is refused on an engine that runs
// at another precision than its options ask (a GPU engine without tf32 or
// bf16 yet), and an unknown precision is refused naming the choices.
func TestPrecisionEngineMustAgree(t *testing.T) {
	c := statehash.Cases[0]
	opt := c.Options()
	opt.Precision = gemm.BF16
	if _, err := model.NewOn(model.CPUEngine(), c.Spec, opt); err == nil || !strings.Contains(err.Error(), "bf16") || !strings.Contains(err.Error(), "fp32") {
		t.Errorf("bf16 options on an fp32 engine: err %v, want one naming both", err)
	}
	opt.Precision = gemm.Precision(7)
	if _, err := model.New(c.Spec, opt); err == nil || !strings.Contains(err.Error(), "fp32, tf32, bf16") {
		t.Errorf("precision 7: err %v, want one naming the choices", err)
	}
}
