package model

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// torchvisionNumParams are torchvision 0.14's figures for its ImageNet
// weights (1000 classes): the "num_params" of each arch's Weights in
// torchvision/models/resnet.py.
var torchvisionNumParams = map[string]int{
	"resnet18": 11689512, "resnet34": 21797672,
	"resnet50": 25557032, "resnet101": 44549160, "resnet152": 60192808,
	"wide_resnet50_2": 68883240, "wide_resnet101_2": 126886696,
	"resnext50_32x4d": 25028904, "resnext101_32x8d": 88791336,
}

// layoutParams counts the trainable scalars of l from its blocks (a conv
// of groups g has cout x cin/g x k x k weights; a BatchNorm 2 per
// channel), with the imagenet stem and a 1000-class fc: what torchvision's
// figures count, without building the model.
func layoutParams(l resnetLayout) int {
	conv := func(cin, cout, k, g int) int { return cout*cin/g*k*k + 2*cout }
	n := conv(3, l.stemWidth, 7, 1)
	cin := l.stemWidth
	for _, b := range l.residualBlocks() {
		if b.bottleneck {
			n += conv(b.cin, b.width, 1, 1) + conv(b.width, b.width, 3, b.groups) + conv(b.width, b.cout, 1, 1)
		} else {
			n += conv(b.cin, b.cout, 3, 1) + conv(b.cout, b.cout, 3, 1)
		}
		if b.downsample {
			n += conv(b.cin, b.cout, 1, 1)
		}
		cin = b.cout
	}
	return n + cin*1000 + 1000
}

// TestResNetLayoutsCountTorchvisionsParams: every torchvision arch's layout
// (blocks per stage, widths, expansion, groups, where the projections are)
// has exactly the parameters torchvision reports for it.
func TestResNetLayoutsCountTorchvisionsParams(t *testing.T) {
	for arch, want := range torchvisionNumParams {
		l, err := Spec{Arch: arch, Stem: StemImageNet}.layout()
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if got := layoutParams(l); got != want {
			t.Errorf("%s: the layout has %d parameters, torchvision's %d", arch, got, want)
		}
	}
}

// TestResNet50IsTorchvisions: a built resnet50 has torchvision's parameter
// count, and its state_dict (names, order and shapes) is that of
// torchvision.models.resnet50 (when /usr/bin/python3 has torchvision);
// conv1 is 1x1 and the stride is on conv2 (v1.5) in each stage's first
// block.
func TestResNet50IsTorchvisions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a resnet50")
	}
	spec := Spec{Arch: "resnet50", Stem: StemImageNet, InputSize: 32, Classes: 1000}
	m := newModel(t, spec, Options{Batch: 1, Seed: 1})
	if got, want := m.NumParams(), torchvisionNumParams["resnet50"]; got != want {
		t.Errorf("resnet50 has %d parameters, torchvision's %d", got, want)
	}
	var names []string
	shapes := map[string][]int{}
	for _, p := range m.Params() { // the state_dict: parameters and BatchNorm buffers
		names = append(names, p.Name)
		shapes[p.Name] = p.Shape
	}
	for _, want := range []string{"layer1.0.downsample.0.weight", "layer4.2.bn3.weight", "layer3.5.conv3.weight"} {
		if _, ok := shapes[want]; !ok {
			t.Errorf("no %s", want)
		}
	}
	for _, blk := range []string{"layer2.0.", "layer3.0.", "layer4.0."} {
		if slices.ContainsFunc(m.params, func(p *param) bool { return p.name == blk+"conv1.weight" && p.shape[2] != 1 }) {
			t.Errorf("%sconv1 is not 1x1", blk)
		}
	}
	l, _ := spec.layout()
	for _, b := range l.residualBlocks() {
		if want := b.prefix == "layer2.0." || b.prefix == "layer3.0." || b.prefix == "layer4.0."; (b.stride == 2) != want {
			t.Errorf("%s: stride %d", b.prefix, b.stride)
		}
	}

	if _, err := exec.Command("/usr/bin/python3", "-c", "import torchvision").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 lacks torchvision: the names are not compared: %v", err)
	}
	out, err := exec.Command("/usr/bin/python3", "-c", `
import json, torchvision
m = torchvision.models.resnet50(num_classes=1000)
print(json.dumps({"names": list(m.state_dict()),
                  "shapes": {n: list(t.shape) for n, t in m.state_dict().items()}}))`).Output()
	if err != nil {
		t.Fatalf("torchvision: %v", err)
	}
	var tv struct {
		Names  []string
		Shapes map[string][]int
	}
	if err := json.Unmarshal(out, &tv); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, tv.Names) {
		t.Errorf("state_dict, in order:\nstoke       %s\ntorchvision %s", strings.Join(names, " "), strings.Join(tv.Names, " "))
	}
	if fmt.Sprint(shapes) != fmt.Sprint(tv.Shapes) {
		for n, s := range tv.Shapes {
			if !slices.Equal(shapes[n], s) {
				t.Errorf("%s: stoke %v, torchvision %v", n, shapes[n], s)
			}
		}
		for n := range shapes {
			if _, ok := tv.Shapes[n]; !ok {
				t.Errorf("%s: stoke's, not in torchvision's state_dict", n)
			}
		}
	}
}
