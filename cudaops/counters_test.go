//go:build stokecuda

package cudaops

import (
	"testing"
	"unsafe"

	"gorgonia.org/cu"
)

// TestGPUDriverCounters: each counted call moves its counter by what it
// did, and only that: an allocation, a synchronous and an asynchronous copy
// each way, a kernel launch, a stream synchronization, a free.
func TestGPUDriverCounters(t *testing.T) {
	d := openOrSkip(t)
	onStream(t, d, func(s cu.Stream) error {
		mod, err := cu.LoadData(kernelsPTX)
		if err != nil {
			return err
		}
		defer mod.Unload()
		fn, err := mod.Function("copy_f32")
		if err != nil {
			return err
		}
		host := make([]float32, 64)
		c0 := ReadDriverCounters()
		a, err := cu.MemAlloc(256)
		if err != nil {
			return err
		}
		b, err := cu.MemAlloc(256)
		if err != nil {
			return err
		}
		c1 := ReadDriverCounters()
		if got := c1.Sub(c0); got != (DriverCounters{Allocs: 2}) {
			t.Errorf("two cuMemAlloc: counted %+v", got)
		}
		if err := cu.MemcpyHtoD(a, unsafe.Pointer(&host[0]), 256); err != nil {
			return err
		}
		if err := cu.MemcpyHtoDAsync(a, unsafe.Pointer(&host[0]), 128, s); err != nil {
			return err
		}
		n := int64(64) // cu passes 8-byte slots; the kernel reads the low 4 bytes
		args := []unsafe.Pointer{unsafe.Pointer(&a), unsafe.Pointer(&b), unsafe.Pointer(&n)}
		if err := fn.Launch(1, 1, 1, 64, 1, 1, 0, s, args); err != nil {
			return err
		}
		if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&host[0]), b, 64, s); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		if err := cu.MemcpyDtoH(unsafe.Pointer(&host[0]), b, 32); err != nil {
			return err
		}
		c2 := ReadDriverCounters()
		want := DriverCounters{Launches: 1, H2DBytes: 256 + 128, D2HBytes: 64 + 32}
		got := c2.Sub(c1)
		// The stream synchronization and the two synchronous copies wait.
		want.HostSyncs = 3
		if got != want {
			t.Errorf("copies, a launch, a sync: counted %+v, want %+v", got, want)
		}
		cu.MemFree(a)
		cu.MemFree(b)
		if got := ReadDriverCounters().Sub(c2); got != (DriverCounters{Frees: 2}) {
			t.Errorf("two cuMemFree: counted %+v", got)
		}
		return nil
	})
}

// onStream runs f with d's context current on a locked thread and a fresh
// non-blocking stream, destroyed after; an error fails t.
func onStream(t *testing.T, d *Device, f func(s cu.Stream) error) {
	t.Helper()
	err := d.do(func() error {
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s.Destroy()
		return f(s)
	})
	if err != nil {
		t.Fatal(err)
	}
}
