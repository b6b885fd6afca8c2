//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time, user and system, the process has used: on a
// shared machine it moves less with other load than the wall clock does.
func cpuTime() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// ourCPU is cpuTime plus that of the children this process has waited for
// (and theirs that they waited for): a bench's share of the machine when
// its runs are child processes.
func ourCPU() time.Duration {
	return rusage(syscall.RUSAGE_SELF) + rusage(syscall.RUSAGE_CHILDREN)
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
