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
	m, movedBy := decayAlone(t, tinySpec)
	for _, p := range m.params {
		moved := movedBy[p.name]
		if want := strings.HasSuffix(p.name, ".weight"); moved != want {
			t.Errorf("%s: moved by weight decay %v, want %v", p.name, moved, want)
		}
	}
}

// decayAlone builds spec's model with AdamW, weight decay 0.5 and
// NoDecayNormAndBias, takes one update before any backward (zero
// gradients, so only the decoupled decay can move a parameter) and says
// which parameters moved.
func decayAlone(t *testing.T, spec Spec) (*Model, map[string]bool) {
	t.Helper()
	m := newModel(t, spec, Options{Batch: 2, Seed: 1, Optimizer: OptimizerAdamW, WeightDecay: 0.5, NoDecayNormAndBias: true})
	before := map[string][]float32{}
	for _, p := range m.params {
		before[p.name] = slices.Clone(p.data)
	}
	if err := m.update(0.1); err != nil {
		t.Fatal(err)
	}
	moved := map[string]bool{}
	for _, p := range m.params {
		moved[p.name] = !slices.Equal(before[p.name], p.data)
	}
	return m, moved
}
