//go:build stokecuda

package trainer

import (
	"errors"
	"fmt"
	"io"

	"stoke/config"
	"stoke/cudaops"
	"stoke/data"
	"stoke/model"
)

// The CUDA device (build tag stokecuda; see docs/cuda.md for why not cuda).
func init() {
	newCUDADevice = openCUDADevice
	checkCUDA = func() error {
		if err := cudaops.Check(); err != nil {
			return cudaUnavailable(err)
		}
		return nil
	}
}

// cudaUnavailable is err, from opening the GPU, with what to do next when
// the GPU cannot be used here at all (no driver, NVIDIA's link stub, no
// device, one too old): train on the CPU, or run the GPU path on the CPU
// under the driver stand-in.
func cudaUnavailable(err error) error {
	var ue *cudaops.UnavailableError
	if !errors.As(err, &ue) {
		return fmt.Errorf("device cuda: %w", err)
	}
	return fmt.Errorf("device cuda: %w; to go on: --device cpu trains on the CPU with this binary, "+
		"or try the GPU path on this CPU under the CUDA driver stand-in: scripts/gpu-sim.sh runs its tests and a short training that way "+
		"(or cudaops/cudasim/build.sh DIR, then LD_LIBRARY_PATH=DIR train --device cuda; docs/cuda.md)", err)
}

// cudaops.Backend is the trainer's Backend as it is: its steps are queued on
// the device's streams (Pending.Queued), and it takes uint8 batches, so
// batch_dtype auto means uint8 on the GPU (normalized there with
// augment.mean and augment.std).
var _ Backend = (*cudaops.Backend)(nil)

func openCUDADevice(spec model.Spec, opt model.Options, cfg config.Config, out io.Writer) (*Device, error) {
	dev, err := cudaops.Open(0)
	if err != nil {
		return nil, cudaUnavailable(err)
	}
	norm := cudaops.Normalize{Mean: vec3(cfg.Augment.Mean), Std: vec3(cfg.Augment.Std)}
	eo := cudaops.EngineOptions{Gemm: cfg.Cuda.Gemm, Cublas: cfg.Cuda.Cublas,
		Precision: cfg.Train.GEMMPrecision(), Graphs: cfg.Cuda.Graphs}
	b, err := cudaops.NewBackendWith(dev, spec, opt, cfg.Train.NonBlocking, norm, eo)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	d := &Device{Name: dev.String(), Backend: b, Params: b.NumParams(), AutoDType: data.DTypeUint8, Close: dev.Close,
		Counters: countersOf(b)}
	if cfg.Data.PinMemory {
		d.Alloc = dev.Pinned()
	}
	fmt.Fprintf(out, "device: %s, pin_memory=%v, non_blocking=%v, %s, %s\n", d.Name, cfg.Data.PinMemory, cfg.Train.NonBlocking, b.Gemm(), b.GraphsNote())
	return d, nil
}

// driverCounting is a Backend that reads the driver's counters for its
// steps (cudaops.Backend, cudaops/backend_counters.go): metrics.jsonl's
// "gpu" field. The CPU model is not one.
type driverCounting interface {
	DriverCounters() (cudaops.BackendCounters, bool)
}

// countersOf is Device.Counters for b: its readings, or nil when b counts
// nothing.
func countersOf(b Backend) func() (DriverCounts, bool) {
	cb, ok := b.(driverCounting)
	if !ok {
		return nil
	}
	return func() (DriverCounts, bool) {
		c, ok := cb.DriverCounters()
		return DriverCounts{Launches: c.Launches, HostSyncs: c.HostSyncs, Allocs: c.Allocs,
			H2DBytes: c.H2DBytes, D2HBytes: c.D2HBytes, Graph: c.Graph}, ok
	}
}
