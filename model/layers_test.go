package model

import (
	"slices"
	"strings"
	"testing"
)

// TestNoDecayCNNBiases: Options.NoDecayNormAndBias spares every bias, the
// cnn's too (its conv biases and fc.bias), as the config's help says and
// as PyTorch's reference groups them (ndim <= 1: scripts/optim_parity_pytorch.py);
// the weights still decay. AdamW's decay is decoupled, so an update from
// zero gradients moves only what decays.
func TestNoDecayCNNBiases(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 2, Seed: 1, Optimizer: OptimizerAdamW, WeightDecay: 0.5, NoDecayNormAndBias: true})
	before := map[string][]float32{}
	for _, p := range m.params {
		before[p.name] = slices.Clone(p.data)
	}
	if err := m.update(0.1); err != nil { // before any backward: zero gradients
		t.Fatal(err)
	}
	for _, p := range m.params {
		moved := !slices.Equal(before[p.name], p.data)
		if want := strings.HasSuffix(p.name, ".weight"); moved != want {
			t.Errorf("%s: moved by weight decay %v, want %v", p.name, moved, want)
		}
	}
}
