//go:build !race

// Not under -race: a ResNeXt-50 step under the race detector takes minutes
// (.ci/run runs the parity tests without it).

package model_test

import (
	"testing"

	"stoke/internal/paritytest"
	"stoke/model"
)

// ResNeXtTolerance is paritytest's Tolerance for resnext50_32x4d's 161
// gradients through 53 convs at batch 2, as for resnet50: PyTorch's own
// float32 step is several times 1e-4 of max|ref| from float64 there.
const ResNeXtTolerance = 1e-3

// TestResNeXtParityWithPyTorch is TestParityWithPyTorch for
// resnext50_32x4d (its 3x3 convs in 32 groups of 4 to 32 channels), the
// imagenet stem at 64 px (the last stage keeps 2x2 px), batch 2, on the CPU
// engine: eval and train logits, loss, every gradient and the updated
// BatchNorm buffers against PyTorch's float64 recomputation of
// torchvision's resnext50_32x4d on the same weights, batch and branch,
// loaded with strict=True. Skipped with -short and where /usr/bin/python3
// has no torch.
func TestResNeXtParityWithPyTorch(t *testing.T) {
	paritytest.Skip(t)
	paritytest.Run(t, model.CPUEngine(), paritytest.Case{
		Spec:  model.Spec{Arch: "resnext50_32x4d", Stem: model.StemImageNet, InputSize: 64, Classes: 10},
		Batch: 2, Tolerance: ResNeXtTolerance})
}
