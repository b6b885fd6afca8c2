package bench

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU returns the CPU time (user + system) the calling OS thread has
// used, and true; the caller locks its goroutine to the thread. On a shared
// machine it leaves out the time the thread waited for a core, which wall
// time would count against whatever stage was running.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTimeID = 3 // CLOCK_THREAD_CPUTIME_ID, <linux/time.h>
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
