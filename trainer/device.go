package trainer

import (
	"fmt"
	"io"
	"time"

	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// Backend runs the model's steps where the compute happens. The CPU backend
// is *model.Model itself; a CUDA backend (build tag cuda) copies each batch
// to the device and runs the same graph there.
type Backend interface {
	TrainStep(x []float32, labels []int32, n int, lr float32) (model.StepResult, error)
	EvalStep(x []float32, labels []int32, n int) (model.EvalResult, error)
	Params() []model.NamedTensor
	OptimizerState() []model.NamedTensor
	Load(params, optState []model.NamedTensor) error
	NumParams() int
	Close()
}

// StepTimer is implemented by backends that measure their own steps (with
// CUDA events on a GPU): the copy to the device and the compute of the last
// TrainStep. Without it, the whole TrainStep counts as compute.
type StepTimer interface {
	LastStepTimes() (copy, compute time.Duration)
}

// Device is a place to train: the backend for a model, and the allocator
// that the loader's batch buffers come from (pinned memory on a GPU).
type Device struct {
	Name    string
	Backend Backend
	Alloc   data.Allocator // nil = pageable Go memory
	Close   func() error   // releases the device after the loaders are closed; may be nil
}

// newCUDADevice is set by the cuda build (device_cuda.go); nil otherwise.
var newCUDADevice func(spec model.Spec, opt model.Options, cfg config.Config, out io.Writer) (*Device, error)

// openDevice returns the device cfg.Train.Device names.
func openDevice(spec model.Spec, opt model.Options, cfg config.Config, out io.Writer) (*Device, error) {
	switch cfg.Train.Device {
	case "cpu":
		if cfg.Data.PinMemory || cfg.Train.NonBlocking {
			fmt.Fprintln(out, "note: pin_memory and non_blocking act on the cuda device only; on the cpu they change nothing (PyTorch behaves the same)")
		}
		m, err := model.New(spec, opt)
		if err != nil {
			return nil, err
		}
		return &Device{Name: "cpu", Backend: m}, nil
	case "cuda":
		if newCUDADevice == nil {
			return nil, ErrNoCUDA
		}
		return newCUDADevice(spec, opt, cfg, out)
	}
	return nil, fmt.Errorf("train.device: unknown device %q (cpu or cuda)", cfg.Train.Device)
}
