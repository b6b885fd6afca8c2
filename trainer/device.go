package trainer

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// Backend is the seam to where the compute happens: a training step on an
// input, an evaluation, and the weights and optimizer state in and out. The
// CPU backend is *model.Model itself; the CUDA backend (build tag
// stokecuda, device_cuda.go) is cudaops.Backend, which runs the same
// gorgonia graph on cudaops's GraphEngine.
//
// An input is a float32 batch or a uint8 one (model.Input): either backend
// takes both, normalizing uint8 itself (on a GPU, after copying a quarter of
// the bytes). Start returns once the input's memory may be reused; the
// step's Pending yields its result, its copy and compute times (CUDA events
// on a GPU, the whole step on the CPU) and its error. A GPU step is still
// queued then (Pending.Queued), so the loop fetches and copies batch N+1
// while step N computes, keeping at most one step waiting.
type Backend interface {
	Start(in model.Input, lr float32) (model.Pending, error)
	Eval(in model.Input) (model.EvalResult, error)
	// State copies the parameters and the optimizer state off the backend
	// (a device read can fail: the error says so, nothing panics).
	State() (params, optState []model.NamedTensor, err error)
	Load(params, optState []model.NamedTensor) error
	Close()
}

var _ Backend = (*model.Model)(nil)

// Device is a place to train: the backend for a model, and the allocator
// that the loader's batch buffers come from (pinned memory on a GPU).
type Device struct {
	Name    string
	Backend Backend
	Params  int            // the model's trainable scalars
	Alloc   data.Allocator // nil = pageable Go memory
	// AutoDType is what data.batch_dtype auto means here: data.DTypeUint8
	// where the device normalizes the batches itself (a quarter of the bytes
	// to copy); "" = float32, as on the CPU.
	AutoDType string
	Close     func() error // releases the device after the loaders are closed; may be nil
	// Counters reads the driver's running totals through the backend
	// (cuda: the Backend's optional DriverCounters, device_cuda.go); ok is
	// false when the backend cannot say. nil on the CPU.
	Counters func() (c DriverCounts, ok bool)
}

// batchDType resolves data.batch_dtype for the device.
func (d *Device) batchDType(setting string) string {
	switch {
	case setting == data.DTypeUint8, setting == "auto" && d.AutoDType == data.DTypeUint8:
		return data.DTypeUint8
	}
	return data.DTypeFloat32
}

// ErrNoCUDA is returned for device cuda in a build without CUDA support.
// It names the build's real steps: the tag alone fails on cuda.h until
// scripts/cuda-toolchain.sh has fetched the header.
var ErrNoCUDA = errors.New("device cuda: this binary was built without CUDA; to build one (no GPU needed to build): " +
	"`eval \"$(scripts/cuda-toolchain.sh --env)\"` (fetches the CUDA 11.8 header once, into ~/.cache/stoke), " +
	"then `go build -tags stokecuda -o train ./cmd/train` (docs/cuda.md); or train on the CPU with --device cpu")

// checkCUDA, set by the cuda build, says cheaply whether CUDA is usable
// here, so that a run fails before it generates or scans a dataset.
var checkCUDA func() error

// newCUDADevice is set by the cuda build (device_cuda.go); nil otherwise.
var newCUDADevice func(spec model.Spec, opt model.Options, cfg config.Config, out io.Writer) (*Device, error)

// input is a loader's batch as a backend takes it.
func input(b *data.Batch) model.Input {
	return model.Input{X: b.X, U8: b.U8, Labels: b.Labels, N: b.N}
}

// openDevice returns the device cfg.Train.Device names.
func openDevice(spec model.Spec, opt model.Options, cfg config.Config, out io.Writer) (*Device, error) {
	switch cfg.Train.Device {
	case "cpu":
		if cfg.Data.PinMemory || cfg.Train.NonBlocking {
			fmt.Fprintln(out, "note: pin_memory and non_blocking act on the cuda device only; on the cpu they change nothing (PyTorch behaves the same)")
		}
		opt.Mean, opt.Std = vec3(cfg.Augment.Mean), vec3(cfg.Augment.Std) // batch_dtype uint8
		m, err := model.New(spec, opt)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "device: cpu, %s, %s, precision %s%s\n", plural(runtime.GOMAXPROCS(0), "thread"), model.KernelAt(opt.Precision), opt.Precision, model.WinogradNote(opt))
		return &Device{Name: "cpu", Backend: m, Params: m.NumParams()}, nil
	case "cuda":
		if cfg.Train.Winograd {
			fmt.Fprintln(out, "note: train.winograd acts on the cpu device only; on cuda it changes nothing")
		}
		if newCUDADevice == nil {
			return nil, ErrNoCUDA
		}
		return newCUDADevice(spec, opt, cfg, out)
	}
	return nil, fmt.Errorf("train.device: unknown device %q (cpu or cuda)", cfg.Train.Device)
}
