//go:build stokecuda

package cudaops

import (
	"errors"
	"math"
	"testing"

	"stoke/model"
)

// TestGPUNaNInputPropagates: a NaN or an infinity in a float32 batch makes
// that sample's logits NaN on the GPU engine as on the CPU model (the
// cnn's conv epilogue once sent a NaN through its ReLU as 0, so the GPU
// trained on where the CPU stopped), and a training step on it ends with
// ErrNonFiniteLoss, read back from the device.
func TestGPUNaNInputPropagates(t *testing.T) {
	d := openOrSkip(t)
	opt := model.Options{Batch: 4, Seed: 9, Momentum: 0.9}
	S := gpuSpec.InputSize
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		x := make([]float32, opt.Batch*3*S*S)
		for i := range x {
			x[i] = float32(i%7)*0.1 - 0.3
		}
		at := 3*S*S + S + 5 // sample 1, inside the image
		x[at] = bad
		b, err := NewBackend(d, gpuSpec, opt, true, imageNet)
		if err != nil {
			t.Fatal(err)
		}
		z, err := b.Logits(x, opt.Batch)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.New(gpuSpec, opt)
		if err != nil {
			t.Fatal(err)
		}
		zc, err := m.Logits(model.Input{X: x, N: opt.Batch})
		if err != nil {
			t.Fatal(err)
		}
		K := gpuSpec.Classes
		for r := range opt.Batch {
			for j := range K {
				g, c := z[r*K+j], zc[r*K+j]
				if math.IsNaN(float64(g)) != math.IsNaN(float64(c)) {
					t.Fatalf("%v at sample 1: logit [%d][%d] is %v on the GPU, %v on the CPU", bad, r, j, g, c)
				}
			}
		}
		if !math.IsNaN(float64(z[K])) {
			t.Fatalf("%v at sample 1: its logits %v, want NaN", bad, z[K:2*K])
		}
		labels := []int32{0, 1, 2, 3}
		pd, err := b.Start(model.Input{X: x, Labels: labels, N: opt.Batch}, 0.01)
		if err == nil {
			_, _, err = pd.Wait()
		}
		if err == nil {
			var out []model.Outcome
			out, err = b.Results()
			for _, o := range out {
				err = errors.Join(err, o.Err)
			}
		}
		if !errors.Is(err, model.ErrNonFiniteLoss) {
			t.Errorf("%v at sample 1: a training step ends with %v, want ErrNonFiniteLoss", bad, err)
		}
		b.Close()
	}
}
