package data

import (
	"fmt"
	"unsafe"
)

// Align is the alignment of every batch buffer, a cache line (and enough
// for AVX-512 loads).
const Align = 64

// Pageable is the default Allocator: ordinary Go memory, 64-byte aligned.
// The garbage collector owns it, so Free does nothing.
type Pageable struct{}

// Alloc returns n zeroed bytes starting on a 64-byte boundary.
func (Pageable) Alloc(n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("data: pageable alloc of %d bytes", n)
	}
	raw := make([]byte, n+Align-1)
	off := 0
	if r := uintptrOf(raw) % Align; r != 0 {
		off = int(Align - r)
	}
	return raw[off : off+n : off+n], nil
}

// Free leaves b to the garbage collector.
func (Pageable) Free(b []byte) error { return nil }

// Name is "pageable".
func (Pageable) Name() string { return "pageable" }

// Float32s views b as float32s without copying: len(b)/4 of them, sharing
// b's memory. b must be 4-byte aligned (every Allocator's buffers are).
func Float32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%4 != 0 {
		panic("data: Float32s of a buffer not aligned to 4 bytes")
	}
	return unsafe.Slice((*float32)(p), len(b)/4)
}

// Int32s views b as int32s without copying, as Float32s does.
func Int32s(b []byte) []int32 {
	if len(b) < 4 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%4 != 0 {
		panic("data: Int32s of a buffer not aligned to 4 bytes")
	}
	return unsafe.Slice((*int32)(p), len(b)/4)
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
