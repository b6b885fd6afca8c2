//go:build stokecuda

package cudaops

/*
#include <cuda.h>

// cu v0.9.6 binds cuMemFreeHost but not the allocation: this is the shim.
// PORTABLE: the memory is pinned for every context, not only the current one.
static CUresult stoke_host_alloc(void **p, size_t n) { return cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE); }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// Pinned is page-locked host memory from the CUDA driver (cuMemHostAlloc):
// the loader's batch buffers when pin_memory is set. The GPU copies from it
// by DMA, at full bus speed and asynchronously; C memory, so the Go runtime
// never moves it. It implements data.Allocator.
type Pinned struct {
	dev  *Device
	mu   sync.Mutex
	live map[unsafe.Pointer]int // pointer -> bytes, to refuse foreign frees
}

// Alloc returns n bytes of pinned memory (the driver aligns to pages).
func (a *Pinned) Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cudaops: pinned alloc of %d bytes", n)
	}
	var ptr unsafe.Pointer
	err := a.dev.do(func() error {
		if r := C.stoke_host_alloc(&ptr, C.size_t(n)); r != C.CUDA_SUCCESS {
			return fmt.Errorf("cudaops: cuMemHostAlloc of %d bytes: CUDA error %d", n, int(r))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.live[ptr] = n
	a.mu.Unlock()
	return unsafe.Slice((*byte)(ptr), n), nil
}

// Free releases a buffer from Alloc. The caller guarantees no copy from it
// is in flight (the backend returns only after its copy event completed).
func (a *Pinned) Free(b []byte) error {
	ptr := unsafe.Pointer(unsafe.SliceData(b))
	a.mu.Lock()
	_, ok := a.live[ptr]
	delete(a.live, ptr)
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("cudaops: Free of memory that Pinned.Alloc did not return")
	}
	return a.dev.do(func() error { return cu.MemFreeHost(ptr) })
}

// Name is "pinned".
func (a *Pinned) Name() string { return "pinned" }

// freeAll releases what was never freed (at device close).
func (a *Pinned) freeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ptr := range a.live {
		cu.MemFreeHost(ptr)
	}
	clear(a.live)
}
