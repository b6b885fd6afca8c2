//go:build stokecuda

package cudaops

import (
	"testing"

	"stoke/internal/paritytest"
)

// TestGPUParityWithPyTorch is model's TestParityWithPyTorch on the GPU
// engine: the same cases (batch 8 for resnet20, 4 for resnet18 with both
// stems), runner and script (internal/paritytest, scripts/parity_pytorch.py):
// eval logits, train logits, loss, every gradient and the updated BatchNorm
// buffers against PyTorch's float64 recomputation on the branch the GPU
// took at every ReLU and max-pool, which must be float64's except within
// rounding of the kink; each tensor within 1e-4 of its largest magnitude.
// Skipped where /usr/bin/python3 has no torch and torchvision, and with
// -short.
func TestGPUParityWithPyTorch(t *testing.T) {
	paritytest.Skip(t)
	d := openOrSkip(t)
	eng, err := NewGraphEngine(d)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, c := range paritytest.Cases() {
		paritytest.Run(t, eng.Engine(), c)
	}
}
