package model

import (
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
)

// TestEveryArchRunsOnlyOurOps is TestGraphRunsOnlyOurOps over every arch:
// every node that computes, forward or backward, is one of our ops, but
// gorgonia's elementwise Add where a value has two consumers (the
// gradients Backpropagate sums at a residual block's input, and the cnn's
// skip adds, Spec.Skip), which runs on the engine's TensorEngine. Those
// Adds are counted: none in a plain cnn, and one per identity shortcut
// and per skip (forward and backward) in the others.
func TestEveryArchRunsOnlyOurOps(t *testing.T) {
	skipSpec := Spec{InputSize: 8, Classes: 4, Conv: []ConvSpec{{6, 3, true}, {6, 3, false}, {5, 3, false}}, Skip: []int{1}}
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"cnn", tinySpec},
		{"cnn-skip", skipSpec},
		{"resnet20", Spec{Arch: "resnet20", InputSize: 8, Classes: 3}},
		{"resnet32", Spec{Arch: "resnet32", InputSize: 8, Classes: 3}},
		{"resnet56", Spec{Arch: "resnet56", InputSize: 8, Classes: 3}},
		{"resnet18-imagenet", Spec{Arch: "resnet18", Stem: StemImageNet, InputSize: 16, Classes: 3}},
		{"resnet18-cifar", Spec{Arch: "resnet18", Stem: StemCIFAR, InputSize: 8, Classes: 3}},
		{"resnet34", Spec{Arch: "resnet34", Stem: StemCIFAR, InputSize: 8, Classes: 3}},
		{"resnet50", Spec{Arch: "resnet50", Stem: StemCIFAR, InputSize: 8, Classes: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, tc.spec, Options{Batch: 2})
			ours, adds := 0, 0
			for _, node := range m.g.AllNodes() {
				op := node.Op()
				switch {
				case op == nil, strings.HasPrefix(op.String(), "const "):
					// an input, or the gradient seed Grad adds
				case isKernelOp(op):
					ours++
				case strings.HasPrefix(op.String(), "+ "): // elemBinOp "+ false"
					adds++
				default:
					t.Errorf("node %v runs gorgonia's %T (%v)", node.Name(), op, op)
				}
			}
			want := 2 * len(tc.spec.Skip) // the forward add and its input's gradient sum
			if tc.spec.IsResNet() {
				l, err := tc.spec.layout()
				if err != nil {
					t.Fatal(err)
				}
				// Every block's input has two consumers: conv1 and the
				// shortcut (itself or the downsample conv).
				want += len(l.residualBlocks())
			}
			if adds != want {
				t.Errorf("%d of gorgonia's Adds, want %d", adds, want)
			}
			if ours < 10 {
				t.Errorf("only %d op nodes of ours: forward and backward should both be in the graph", ours)
			}
			t.Logf("%d ops of ours, %d Adds", ours, adds)
		})
	}
}

func isKernelOp(op G.Op) bool { _, ok := op.(*kernelOp); return ok }
