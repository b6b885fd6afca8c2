//go:build stokecuda

package trainer

import (
	"fmt"
	"io"

	"stoke/config"
	"stoke/cudaops"
	"stoke/model"
)

// The CUDA device (build tag stokecuda; see docs/cuda.md for why not cuda).
func init() {
	newCUDADevice = openCUDADevice
	checkCUDA = func() error {
		if err := cudaops.Check(); err != nil {
			return fmt.Errorf("device cuda: %w", err)
		}
		return nil
	}
}

// asyncCUDA adapts the backend's StartStep and StartStepU8 to the loop's
// AsyncBackend and AsyncU8Backend; TrainStepU8 and EvalStepU8 come with
// the embedded backend, so it is a U8Backend too and batch_dtype auto means
// uint8 on the GPU (normalized there with augment.mean and augment.std).
type asyncCUDA struct{ *cudaops.Backend }

var (
	_ AsyncBackend   = asyncCUDA{}
	_ U8Backend      = asyncCUDA{}
	_ AsyncU8Backend = asyncCUDA{}
	_ StepTimer      = asyncCUDA{}
)

func (b asyncCUDA) StartStep(x []float32, labels []int32, n int, lr float32) (func() (model.StepResult, error), error) {
	p, err := b.Backend.StartStep(x, labels, n, lr)
	if err != nil {
		return nil, err
	}
	return p.Wait, nil
}

func (b asyncCUDA) StartStepU8(x []uint8, labels []int32, n int, lr float32) (func() (model.StepResult, error), error) {
	p, err := b.Backend.StartStepU8(x, labels, n, lr)
	if err != nil {
		return nil, err
	}
	return p.Wait, nil
}

func openCUDADevice(spec model.Spec, opt model.Options, cfg config.Config, out io.Writer) (*Device, error) {
	dev, err := cudaops.Open(0)
	if err != nil {
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	norm := cudaops.Normalize{Mean: vec3(cfg.Augment.Mean), Std: vec3(cfg.Augment.Std)}
	b, err := cudaops.NewBackend(dev, spec, opt, cfg.Train.NonBlocking, norm)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	d := &Device{Name: dev.String(), Backend: asyncCUDA{b}, Close: dev.Close}
	if cfg.Data.PinMemory {
		d.Alloc = dev.Pinned()
	}
	fmt.Fprintf(out, "device: %s, pin_memory=%v, non_blocking=%v\n", d.Name, cfg.Data.PinMemory, cfg.Train.NonBlocking)
	return d, nil
}
