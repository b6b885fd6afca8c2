package trainer

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"stoke/augment"
	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// Backend runs the model's steps where the compute happens. The CPU backend
// is *model.Model itself; the CUDA backend (build tag stokecuda,
// cudaops.Backend) copies each batch to the device and runs the same
// gorgonia graph there, on cudaops's GraphEngine.
type Backend interface {
	TrainStep(x []float32, labels []int32, n int, lr float32) (model.StepResult, error)
	EvalStep(x []float32, labels []int32, n int) (model.EvalResult, error)
	// State copies the parameters and the optimizer state off the backend
	// (a device read can fail: the error says so, nothing panics).
	State() (params, optState []model.NamedTensor, err error)
	Load(params, optState []model.NamedTensor) error
	NumParams() int
	Close()
}

// U8Backend is implemented by backends that take uint8 batches (values
// round(255·v), CHW) and normalize them themselves — on a GPU, after a copy
// of a quarter of the bytes. With it, batch_dtype auto means uint8.
type U8Backend interface {
	TrainStepU8(x []uint8, labels []int32, n int, lr float32) (model.StepResult, error)
	EvalStepU8(x []uint8, labels []int32, n int) (model.EvalResult, error)
}

// AsyncBackend is implemented by backends that overlap a step with the
// loading of the next batch: StartStep returns once the batch's memory may
// be reused (its copy to the device is done) and the compute is queued;
// the returned function waits for the step and gives its result. The loop
// keeps at most one step waiting.
type AsyncBackend interface {
	StartStep(x []float32, labels []int32, n int, lr float32) (wait func() (model.StepResult, error), err error)
}

// AsyncU8Backend is AsyncBackend for uint8 batches.
type AsyncU8Backend interface {
	StartStepU8(x []uint8, labels []int32, n int, lr float32) (wait func() (model.StepResult, error), err error)
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

// checkCUDA, set by the cuda build, says cheaply whether CUDA is usable
// here, so that a run fails before it generates or scans a dataset.
var checkCUDA func() error

// newCUDADevice is set by the cuda build (device_cuda.go); nil otherwise.
var newCUDADevice func(spec model.Spec, opt model.Options, cfg config.Config, out io.Writer) (*Device, error)

// feeder hands batches to the backend in the form it takes: float32 as they
// come, uint8 to a U8Backend, or uint8 normalized here into a reused buffer
// for a backend that takes float32 only.
type feeder struct {
	net       Backend
	u8        U8Backend      // nil when the backend takes float32 only
	async     AsyncBackend   // nil when the backend steps synchronously
	asyncU8   AsyncU8Backend // nil when it does not step uint8 batches asynchronously
	buf       []float32
	size      int
	mean, std [3]float32
}

func newFeeder(net Backend, cfg config.Config) *feeder {
	f := &feeder{net: net, size: cfg.Data.ImageSize, mean: vec3(cfg.Augment.Mean), std: vec3(cfg.Augment.Std)}
	f.u8, _ = net.(U8Backend)
	f.async, _ = net.(AsyncBackend)
	f.asyncU8, _ = net.(AsyncU8Backend)
	return f
}

// dtype resolves data.batch_dtype for this backend.
func (f *feeder) dtype(setting string) string {
	switch {
	case setting == "uint8", setting == "auto" && f.u8 != nil:
		return data.DTypeUint8
	}
	return data.DTypeFloat32
}

func (f *feeder) float32s(b *data.Batch) []float32 {
	if len(f.buf) != len(b.U8) {
		f.buf = make([]float32, len(b.U8))
	}
	augment.NormalizeU8(f.buf, b.U8, f.size, f.mean, f.std)
	return f.buf
}

func (f *feeder) train(b *data.Batch, lr float32) (model.StepResult, error) {
	switch {
	case b.U8 == nil:
		return f.net.TrainStep(b.X, b.Labels, b.N, lr)
	case f.u8 != nil:
		return f.u8.TrainStepU8(b.U8, b.Labels, b.N, lr)
	}
	return f.net.TrainStep(f.float32s(b), b.Labels, b.N, lr)
}

// start begins a training step on b: asynchronously where the backend can,
// else by running it to completion.
func (f *feeder) start(b *data.Batch, lr float32) (wait func() (model.StepResult, error), async bool, err error) {
	switch {
	case b.U8 == nil && f.async != nil:
		wait, err = f.async.StartStep(b.X, b.Labels, b.N, lr)
		return wait, true, err
	case b.U8 != nil && f.asyncU8 != nil:
		wait, err = f.asyncU8.StartStepU8(b.U8, b.Labels, b.N, lr)
		return wait, true, err
	}
	res, stepErr := f.train(b, lr) // not err: the return below sets the named result the closure would see
	return func() (model.StepResult, error) { return res, stepErr }, false, nil
}

func (f *feeder) eval(b *data.Batch) (model.EvalResult, error) {
	switch {
	case b.U8 == nil:
		return f.net.EvalStep(b.X, b.Labels, b.N)
	case f.u8 != nil:
		return f.u8.EvalStepU8(b.U8, b.Labels, b.N)
	}
	return f.net.EvalStep(f.float32s(b), b.Labels, b.N)
}

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
		fmt.Fprintf(out, "device: cpu, %d threads, %s\n", runtime.GOMAXPROCS(0), model.Kernel())
		return &Device{Name: "cpu", Backend: m}, nil
	case "cuda":
		if newCUDADevice == nil {
			return nil, ErrNoCUDA
		}
		return newCUDADevice(spec, opt, cfg, out)
	}
	return nil, fmt.Errorf("train.device: unknown device %q (cpu or cuda)", cfg.Train.Device)
}
