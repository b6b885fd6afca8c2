//go:build stokecuda

package cudaops

import (
	"testing"

	"stoke/internal/paritytest"
	"stoke/model"
)

// TestGPUBottleneckParityWithPyTorch is TestGPUParityWithPyTorch for the
// Bottleneck on the GPU engine: resnet50 with the cifar stem at 16 px,
// batch 2, label smoothing 0.1 (paritytest.BottleneckCases' second case;
// 40 s under the stand-in on a loaded machine; the imagenet-stem one runs
// on the CPU engine only, model's TestBottleneckParityWithPyTorch), to
// paritytest.BottleneckTolerance. Measured under the stand-in: worst 3.6e-4
// of max|ref| (the CPU engine 2.7e-4). Skipped where /usr/bin/python3 has
// no torch and torchvision, and with -short.
func TestGPUBottleneckParityWithPyTorch(t *testing.T) {
	paritytest.Skip(t)
	d := openOrSkip(t)
	eng, err := NewGraphEngine(d)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, c := range paritytest.BottleneckCases() {
		if c.Spec.Stem == model.StemCIFAR {
			paritytest.Run(t, eng.Engine(), c)
		}
	}
}
