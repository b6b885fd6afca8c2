package model_test

import (
	"testing"

	"stoke/internal/paritytest"
	"stoke/model"
)

// TestParityWithPyTorch: on the CPU engine, resnet20 (with and without label
// smoothing) and resnet18 with both stems, one training step's eval logits,
// train logits, loss, every gradient and the updated BatchNorm buffers
// against PyTorch's float64 recomputation on the same weights, batch and
// ReLU / max-pool branch (internal/paritytest, scripts/parity_pytorch.py):
// each tensor within paritytest.Tolerance (1e-4) of its largest magnitude.
// Skipped where /usr/bin/python3 has no torch and torchvision (Debian:
// apt-get install python3-torch python3-torchvision).
func TestParityWithPyTorch(t *testing.T) {
	paritytest.Skip(t)
	for _, c := range paritytest.Cases() {
		paritytest.Run(t, model.CPUEngine(), c)
	}
}
