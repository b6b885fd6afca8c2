//go:build stokecuda

package cudaops

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// Device is one GPU with its primary context. CUDA contexts are current per
// OS thread and goroutines move between threads, so every call into the
// driver goes through do, which locks the goroutine to its thread and makes
// the context current there first.
type Device struct {
	dev    cu.Device
	ctx    cu.CUContext
	name   string
	cc     [2]int
	pinned *Pinned
	once   sync.Once
}

// Open checks the driver (explaining a missing driver, NVIDIA's link stub or
// a machine without a device) and opens GPU ordinal.
func Open(ordinal int) (*Device, error) {
	if err := driverStatus(); err != nil {
		return nil, err
	}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cudaops: counting devices: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, &UnavailableError{Reason: fmt.Sprintf("no CUDA device %d (the driver sees %d)", ordinal, n)}
	}
	d := &Device{}
	if d.dev, err = cu.GetDevice(ordinal); err != nil {
		return nil, err
	}
	d.name, _ = d.dev.Name()
	d.cc[0], _ = d.dev.Attribute(cu.ComputeCapabilityMajor)
	d.cc[1], _ = d.dev.Attribute(cu.ComputeCapabilityMinor)
	if d.cc[0] < 8 {
		return nil, &UnavailableError{Reason: fmt.Sprintf("%s has compute capability %d.%d; the embedded kernels are PTX for compute_80 (Ampere or newer)", d.name, d.cc[0], d.cc[1])}
	}
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cudaops: retaining the primary context of %s: %w", d.name, err)
	}
	d.pinned = &Pinned{dev: d, live: map[unsafe.Pointer]int{}}
	return d, nil
}

// Simulated reports whether the driver is the CPU stand-in
// (cudaops/cudasim, scripts/gpu-sim.sh): its timings and bandwidths are the
// host's, not a GPU's, while its results, ordering and checks are real.
func (d *Device) Simulated() bool { return strings.HasPrefix(d.name, "stoke cudasim") }

// String names the device, e.g. "cuda:0 NVIDIA H200 (sm_90)".
func (d *Device) String() string {
	return fmt.Sprintf("%s (sm_%d%d)", d.name, d.cc[0], d.cc[1])
}

// Pinned is the device's page-locked host allocator (data.Allocator).
func (d *Device) Pinned() *Pinned { return d.pinned }

// do runs f with the device's context current on a locked OS thread.
func (d *Device) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("cudaops: making the context current: %w", err)
	}
	return f()
}

// Close frees any pinned memory still held and releases the context. Close
// backends first.
func (d *Device) Close() error {
	var err error
	d.once.Do(func() {
		d.do(func() error { d.pinned.freeAll(); return nil })
		err = d.dev.ReleasePrimaryCtx()
	})
	return err
}
