package model

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// zeroWeights lists the weights (not biases) of m that are all 0, in
// order, and checks that every other BatchNorm weight is 1.
func zeroWeights(t *testing.T, m *Model) []string {
	t.Helper()
	var zero []string
	for _, p := range m.params {
		if !strings.HasSuffix(p.name, ".weight") {
			continue
		}
		if !slices.ContainsFunc(p.data, func(v float32) bool { return v != 0 }) {
			zero = append(zero, p.name)
		} else if len(p.shape) == 1 && slices.ContainsFunc(p.data, func(v float32) bool { return v != 1 }) {
			t.Errorf("%s: a BatchNorm weight that is neither 0 nor 1", p.name)
		}
	}
	return zero
}

// TestZeroInitResidual: with Options.ZeroInitResidual, exactly each
// block's last BatchNorm weight is 0 (bn3 of a Bottleneck, bn2 of a
// BasicBlock), as torchvision's resnet50(zero_init_residual=True) has it
// under the same names (when /usr/bin/python3 has torchvision); every
// other weight is the one a build without it draws; without it, no weight
// is 0.
func TestZeroInitResidual(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		last string
	}{
		{Spec{Arch: "resnet50", Stem: StemCIFAR, InputSize: 8, Classes: 4}, ".bn3.weight"},
		{Spec{Arch: "resnet20", InputSize: 8, Classes: 4}, ".bn2.weight"},
	} {
		t.Run(tc.spec.Arch, func(t *testing.T) {
			plain := newModel(t, tc.spec, Options{Batch: 1, Seed: 5})
			if z := zeroWeights(t, plain); len(z) > 0 {
				t.Errorf("without zero_init_residual, %v are 0", z)
			}
			want := map[string][]float32{}
			for _, p := range plain.params {
				want[p.name] = slices.Clone(p.data)
			}
			plain.Close()
			m := newModel(t, tc.spec, Options{Batch: 1, Seed: 5, ZeroInitResidual: true})
			l, _ := tc.spec.layout()
			var last []string
			for _, b := range l.residualBlocks() {
				last = append(last, b.prefix+tc.last[1:])
			}
			zero := zeroWeights(t, m)
			if !slices.Equal(zero, last) {
				t.Errorf("zero weights %v, want each block's last BatchNorm weight %v", zero, last)
			}
			for _, p := range m.params {
				if !slices.Contains(last, p.name) && !slices.Equal(p.data, want[p.name]) {
					t.Errorf("%s differs from the build without zero_init_residual", p.name)
				}
			}
			if tc.spec.Arch != "resnet50" {
				return
			}
			if _, err := exec.Command("/usr/bin/python3", "-c", "import torchvision").CombinedOutput(); err != nil {
				t.Skipf("/usr/bin/python3 lacks torchvision: the names are not compared with its: %v", err)
			}
			out, err := exec.Command("/usr/bin/python3", "-c", `
import json, torchvision
m = torchvision.models.resnet50(num_classes=4, zero_init_residual=True)
print(json.dumps([n for n, p in m.named_parameters() if n.endswith(".weight") and not p.detach().any()]))`).Output()
			if err != nil {
				t.Fatalf("torchvision: %v", err)
			}
			var tv []string
			if err := json.Unmarshal(out, &tv); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(zero, tv) {
				t.Errorf("zero weights:\nstoke       %v\ntorchvision %v", zero, tv)
			}
		})
	}
}
