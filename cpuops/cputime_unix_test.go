//go:build unix

package cpuops

import (
	"syscall"
	"time"
)

// cpuTime is the process's user + system CPU time so far: on a machine
// shared with other jobs it tracks an op's own work better than the wall
// clock does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
