//go:build stokecuda

package cudaops

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"stoke/model"
)

// TestGPUParityWithPyTorch is model's TestParityWithPyTorch on the GPU
// engine: the same cases, files and script (scripts/parity_pytorch.py loads
// the state dict into torchvision's or He et al.'s network with strict=True
// and recomputes eval logits, train logits, loss, every gradient and the
// updated BatchNorm buffers; each tensor within 1e-4 of its largest
// magnitude of PyTorch's float32 or float64 result). What stoke computes is
// read through the public API: eval logits from Logits on the loaded running
// statistics; then one TrainStep at lr 0 with momentum and no weight decay,
// after which each momentum buffer is the gradient itself (SGD's first
// step: v = g), LastLogits the train-mode logits and State the updated
// running statistics. Skipped where /usr/bin/python3 has no torch and
// torchvision, and with -short.
func TestGPUParityWithPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch, torchvision").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 lacks torch/torchvision (apt-get install python3-torch python3-torchvision): %v: %s", err, strings.TrimSpace(string(out)))
	}
	d := openOrSkip(t)
	eng, err := NewGraphEngine(d)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, tc := range []struct {
		spec      model.Spec
		batch     int
		smoothing float32
	}{
		{model.Spec{Arch: "resnet20", InputSize: 32, Classes: 10}, 8, 0},
		{model.Spec{Arch: "resnet20", InputSize: 32, Classes: 10}, 8, 0.1},
		{model.Spec{Arch: "resnet18", Stem: model.StemCIFAR, InputSize: 16, Classes: 10}, 4, 0},
		// Batch 2, not model's 4: at 4 one element of layer4.0.bn1's input
		// sits within rounding of 0 at the fused ReLU on this seed, and the
		// GPU falls on the other side from both PyTorch references (seen: one
		// channel's dβ, -2.7e-4 on the CPU, 4.3e-4 on the GPU, dγ unchanged;
		// everything before it in the backward then differs by ~4e-3).
		{model.Spec{Arch: "resnet18", Stem: model.StemImageNet, InputSize: 64, Classes: 10}, 2, 0},
	} {
		name := fmt.Sprintf("%s-%s-%dpx-smoothing%g", tc.spec.Arch, tc.spec.Stem, tc.spec.InputSize, tc.smoothing)
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			m, err := model.NewOn(eng, tc.spec, model.Options{Batch: tc.batch, Seed: 11, Momentum: 0.9, LabelSmoothing: tc.smoothing})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			rng := rand.New(rand.NewPCG(12, 13))
			// Running statistics away from (0, 1), so that evaluation tests them.
			state, _, err := m.State()
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range state {
				switch {
				case strings.HasSuffix(b.Name, ".running_mean"):
					for i := range b.Data {
						b.Data[i] = float32(rng.NormFloat64() * 0.1)
					}
				case strings.HasSuffix(b.Name, ".running_var"):
					for i := range b.Data {
						b.Data[i] = float32(0.5 + rng.Float64())
					}
				case strings.HasSuffix(b.Name, ".num_batches_tracked"):
					b.Data[0] = 7
				}
			}
			if err := m.Load(state, nil); err != nil {
				t.Fatal(err)
			}
			S, K := tc.spec.InputSize, tc.spec.Classes
			x := randBatch(rng, tc.batch*3*S*S)
			labels := make([]int32, tc.batch)
			fl := make([]float32, tc.batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(K))
				fl[i] = float32(labels[i])
			}
			evalLogits, err := m.Logits(x, tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			r, err := m.TrainStep(x, labels, tc.batch, 0)
			if err != nil {
				t.Fatal(err)
			}
			trainLogits, err := m.LastLogits()
			if err != nil {
				t.Fatal(err)
			}
			after, opt, err := m.State()
			if err != nil {
				t.Fatal(err)
			}
			out := []model.NamedTensor{
				{Name: "eval_logits", Shape: []int{tc.batch, K}, Data: evalLogits},
				{Name: "train_logits", Shape: []int{tc.batch, K}, Data: trainLogits},
				{Name: "loss", Shape: []int{1}, Data: []float32{float32(r.Loss)}},
			}
			for _, v := range opt {
				if p, ok := strings.CutSuffix(v.Name, model.MomentumSuffix); ok {
					out = append(out, model.NamedTensor{Name: "grad." + p, Shape: v.Shape, Data: v.Data})
				}
			}
			for _, b := range after {
				if strings.Contains(b.Name, ".running_") || strings.HasSuffix(b.Name, ".num_batches_tracked") {
					b.Name = "after." + b.Name
					out = append(out, b)
				}
			}
			must(t, model.WriteSafetensors(filepath.Join(dir, "state.safetensors"), state, nil))
			must(t, model.WriteSafetensors(filepath.Join(dir, "batch.safetensors"), []model.NamedTensor{
				{Name: "x", Shape: []int{tc.batch, 3, S, S}, Data: x},
				{Name: "labels", Shape: []int{tc.batch}, Data: fl},
			}, nil))
			must(t, model.WriteSafetensors(filepath.Join(dir, "out.safetensors"), out, nil))
			c, _ := json.Marshal(map[string]any{"arch": tc.spec.Arch, "stem": tc.spec.Stem, "classes": K,
				"tolerance": 1e-4, "label_smoothing": tc.smoothing})
			must(t, os.WriteFile(filepath.Join(dir, "case.json"), c, 0o644))
			res, err := exec.Command("/usr/bin/python3", "../scripts/parity_pytorch.py", dir).CombinedOutput()
			t.Logf("%s", strings.TrimSpace(string(res)))
			if err != nil {
				t.Fatalf("parity_pytorch.py: %v", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
