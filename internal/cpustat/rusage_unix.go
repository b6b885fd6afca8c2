//go:build unix

package cpustat

import (
	"syscall"
	"time"
)

// Self is the CPU time, user and system, this process has used so far.
func Self() time.Duration { return rusage(syscall.RUSAGE_SELF) }

// SelfAndChildren is Self plus that of the children this process has
// waited for (and theirs that they waited for).
func SelfAndChildren() time.Duration {
	return rusage(syscall.RUSAGE_SELF) + rusage(syscall.RUSAGE_CHILDREN)
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
