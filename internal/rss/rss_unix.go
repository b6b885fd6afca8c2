//go:build unix && !linux

package rss

import (
	"runtime"
	"syscall"
)

// Now returns the process's peak resident set size in bytes, from
// getrusage, for both figures: these systems have no /proc/self/status to
// read the current size from, and one source keeps peak >= current.
func Now() (current, peak int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	peak = int64(ru.Maxrss) * 1024 // KiB on the BSDs
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		peak = int64(ru.Maxrss) // bytes on macOS
	}
	return peak, peak
}
