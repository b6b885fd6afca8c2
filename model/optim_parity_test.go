package model_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"stoke/internal/paritytest"
	"stoke/model"
)

// TestOptimizerParityWithPyTorch trains resnet20 three steps (one of them on
// a short batch, 6 valid rows of 8) with each optimizer setting the configs
// offer and hands the initial state, the batches and stoke's state after
// the steps to scripts/optim_parity_pytorch.py, which trains the same steps
// with torch.optim.SGD (Nesterov) or torch.optim.AdamW, weight decay in two
// groups as torchvision's references split them, label smoothing, and
// compares every weight, BatchNorm buffer and optimizer state tensor.
//
// AdamW runs with eps 1e-3, not PyTorch's 1e-8: with a small eps its first
// step moves every weight by lr·sign(g), so a gradient within float32
// rounding of 0 moves its weight by ±lr on either side, and PyTorch's own
// float32 and float64 runs then differ by up to 10% after three steps
// (measured). A larger eps makes the update continuous in g, so that the
// comparison measures the formula; the eps itself is a parameter of it.
// Skipped as TestParityWithPyTorch is.
func TestOptimizerParityWithPyTorch(t *testing.T) {
	paritytest.Skip(t)
	// 32 px: at 16 px this seed puts a pre-ReLU value of layer2.2 within
	// 1e-7 of 0, and PyTorch's float32 and float64 gradients differ by 5%.
	spec := model.Spec{Arch: "resnet20", InputSize: 32, Classes: 10}
	const B = 8
	ns := []int{B, 6, B}
	for _, tc := range []struct {
		name string
		opt  model.Options
		lrs  []float32
	}{
		{"sgd-nesterov-nodecay-smoothing", model.Options{Momentum: 0.9, Nesterov: true, WeightDecay: 5e-3, NoDecayNormAndBias: true, LabelSmoothing: 0.1}, []float32{0.05, 0.1, 0.07}},
		{"sgd-momentum-decay-all", model.Options{Momentum: 0.9, WeightDecay: 5e-3}, []float32{0.1, 0.1, 0.02}},
		{"adamw-nodecay", model.Options{Optimizer: model.OptimizerAdamW, WeightDecay: 0.05, NoDecayNormAndBias: true, Beta1: 0.9, Beta2: 0.999, Eps: 1e-3}, []float32{1e-3, 3e-3, 2e-3}},
		{"adamw-decay-all-smoothing", model.Options{Optimizer: model.OptimizerAdamW, WeightDecay: 0.1, LabelSmoothing: 0.1, Beta1: 0.8, Beta2: 0.99, Eps: 1e-3}, []float32{1e-3, 2e-3, 1e-3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := paritytest.CaseDir(t, tc.name)
			opt := tc.opt
			opt.Batch, opt.Seed = B, 21
			m, err := model.New(spec, opt)
			must(t, err)
			defer m.Close()
			must(t, model.WriteSafetensors(filepath.Join(dir, "state.safetensors"), m.Params(), nil))
			rng := rand.New(rand.NewPCG(22, 23))
			S := spec.InputSize
			var batch []model.NamedTensor
			for k, lr := range tc.lrs {
				x := make([]float32, B*3*S*S)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				labels := make([]int32, B)
				fl := make([]float32, B)
				for i := range labels {
					labels[i] = int32(rng.IntN(spec.Classes))
					fl[i] = float32(labels[i])
				}
				batch = append(batch,
					model.NamedTensor{Name: "x" + strconv.Itoa(k), Shape: []int{B, 3, S, S}, Data: x},
					model.NamedTensor{Name: "labels" + strconv.Itoa(k), Shape: []int{B}, Data: fl})
				if _, err := m.TrainStep(x, labels, ns[k], lr); err != nil {
					t.Fatal(err)
				}
			}
			must(t, model.WriteSafetensors(filepath.Join(dir, "batch.safetensors"), batch, nil))
			params, optim, err := m.State()
			if err != nil {
				t.Fatal(err)
			}
			must(t, model.WriteSafetensors(filepath.Join(dir, "out.safetensors"), append(params, optim...), nil))
			optimizer := opt.Optimizer
			if optimizer == "" {
				optimizer = model.OptimizerSGD
			}
			c, _ := json.Marshal(map[string]any{"arch": spec.Arch, "stem": spec.Stem, "classes": spec.Classes,
				"optimizer": optimizer, "momentum": opt.Momentum, "nesterov": opt.Nesterov,
				"weight_decay": opt.WeightDecay, "betas": []float32{opt.Beta1, opt.Beta2}, "eps": opt.Eps, "no_decay_norm_and_bias": opt.NoDecayNormAndBias,
				"label_smoothing": opt.LabelSmoothing, "lrs": tc.lrs, "ns": ns, "tolerance": paritytest.Tolerance})
			must(t, os.WriteFile(filepath.Join(dir, "case.json"), c, 0o644))
			paritytest.RunScript(t, "optim_parity_pytorch.py", dir)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
