package model

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// parityTolerance is the largest error allowed between stoke (float32) and
// PyTorch (float64 on the same float32 weights and batch), per tensor, as
// a fraction of the tensor's largest magnitude.
const parityTolerance = 1e-4 // measured worst: 1.2e-5 (resnet18, imagenet stem)

// TestParityWithPyTorch writes the weights, a batch and what stoke computes
// on it (eval logits; train logits, loss, every gradient, the updated
// BatchNorm buffers) for resnet20 and resnet18 with both stems, and runs
// scripts/parity_pytorch.py, which loads the state dict into torchvision's
// (or He et al.'s) network with strict=True and recomputes all of it.
// Skipped where /usr/bin/python3 has no torch and torchvision (Debian:
// apt-get install python3-torch python3-torchvision).
func TestParityWithPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the PyTorch parity check takes ~20 s")
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch, torchvision").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 lacks torch/torchvision (apt-get install python3-torch python3-torchvision): %v: %s", err, strings.TrimSpace(string(out)))
	}
	for _, tc := range []struct {
		spec      Spec
		batch     int
		smoothing float32
	}{
		{Spec{Arch: "resnet20", InputSize: 32, Classes: 10}, 8, 0},
		{Spec{Arch: "resnet20", InputSize: 32, Classes: 10}, 8, 0.1},
		{Spec{Arch: "resnet18", Stem: StemCIFAR, InputSize: 32, Classes: 10}, 4, 0},
		{Spec{Arch: "resnet18", Stem: StemCIFAR, InputSize: 16, Classes: 10}, 4, 0},
		{Spec{Arch: "resnet18", Stem: StemImageNet, InputSize: 64, Classes: 10}, 4, 0},
	} {
		name := fmt.Sprintf("%s-%s-%dpx-smoothing%g", tc.spec.Arch, tc.spec.Stem, tc.spec.InputSize, tc.smoothing)
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if keep := os.Getenv("STOKE_PARITY_KEEP"); keep != "" { // to rerun the script by hand
				dir = filepath.Join(keep, name)
				must(t, os.MkdirAll(dir, 0o755))
			}
			m := newModel(t, tc.spec, Options{Batch: tc.batch, Seed: 11, LabelSmoothing: tc.smoothing})
			rng := rand.New(rand.NewPCG(12, 13))
			// Running statistics away from (0, 1), so that evaluation tests them.
			for _, b := range m.bns {
				for i := range b.mean {
					b.mean[i] = float32(rng.NormFloat64() * 0.1)
					b.vari[i] = float32(0.5 + rng.Float64())
				}
				b.tracked = 7
			}
			state := m.Params()
			S := tc.spec.InputSize
			x := randomInput(rng, tc.batch*3*S*S)
			labels := make([]int32, tc.batch)
			fl := make([]float32, tc.batch)
			for i := range labels {
				labels[i] = int32(rng.IntN(tc.spec.Classes))
				fl[i] = float32(labels[i])
			}
			evalLogits, err := m.Logits(x, tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			loss, logits, grads, err := m.backward(x, labels, tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			m.commitBN()
			out := []NamedTensor{
				{Name: "eval_logits", Shape: []int{tc.batch, tc.spec.Classes}, Data: evalLogits},
				{Name: "train_logits", Shape: []int{tc.batch, tc.spec.Classes}, Data: logits},
				{Name: "loss", Shape: []int{1}, Data: []float32{loss}},
			}
			for i, p := range m.params {
				out = append(out, NamedTensor{Name: "grad." + p.name, Shape: p.shape, Data: p.get(grads[i])})
			}
			for _, b := range m.Buffers() {
				b.Name = "after." + b.Name
				out = append(out, b)
			}
			must(t, WriteSafetensors(filepath.Join(dir, "state.safetensors"), state, nil))
			must(t, WriteSafetensors(filepath.Join(dir, "batch.safetensors"), []NamedTensor{
				{Name: "x", Shape: []int{tc.batch, 3, S, S}, Data: x},
				{Name: "labels", Shape: []int{tc.batch}, Data: fl},
			}, nil))
			must(t, WriteSafetensors(filepath.Join(dir, "out.safetensors"), out, nil))
			c, _ := json.Marshal(map[string]any{"arch": tc.spec.Arch, "stem": tc.spec.Stem, "classes": tc.spec.Classes,
				"tolerance": parityTolerance, "label_smoothing": tc.smoothing})
			must(t, os.WriteFile(filepath.Join(dir, "case.json"), c, 0o644))
			cmd := exec.Command("/usr/bin/python3", "../scripts/parity_pytorch.py", dir)
			res, err := cmd.CombinedOutput()
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
