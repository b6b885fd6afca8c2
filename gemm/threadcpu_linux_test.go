package gemm

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID),
// which on a loaded machine leaves out the time other processes ran; 0
// where the clock cannot be read.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
