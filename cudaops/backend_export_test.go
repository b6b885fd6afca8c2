//go:build stokecuda

package cudaops

import (
	"runtime"
	"unsafe"

	G "gorgonia.org/gorgonia"

	"stoke/model"
)

// The Backend's steps on float32 slices and its logits, which only the
// tests call (the trainer goes through Start and Eval).

// TrainStep is Start on a float32 batch then Wait: one step, synchronously,
// as the CPU model takes it in the tests that line the two up.
func (b *Backend) TrainStep(x []float32, labels []int32, n int, lr float32) (model.StepResult, error) {
	pd, err := b.Start(model.Input{X: x, Labels: labels, N: n}, lr)
	if err != nil {
		return model.StepResult{}, err
	}
	res, _, err := settle(b, pd)
	return res, err
}

// Logits returns the first n rows of logits for x (the parity tests).
func (b *Backend) Logits(x []float32, n int) ([]float32, error) {
	var out []float32
	err := b.input(unsafe.Pointer(unsafe.SliceData(x)), 4*len(x), false, nil, n, func(xv G.Value) error {
		var err error
		out, err = b.m.Logits(model.Input{Value: xv, N: n})
		return err
	})
	runtime.KeepAlive(x)
	return out, err
}

// LogitsU8 is Logits for a uint8 batch.
func (b *Backend) LogitsU8(x []uint8, n int) ([]float32, error) {
	var out []float32
	err := b.input(unsafe.Pointer(unsafe.SliceData(x)), len(x), true, nil, n, func(xv G.Value) error {
		var err error
		out, err = b.m.Logits(model.Input{Value: xv, N: n})
		return err
	})
	runtime.KeepAlive(x)
	return out, err
}
