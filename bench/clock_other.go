//go:build !linux

package bench

import "time"

// threadCPU is not available here: the stages are timed on the wall clock.
func threadCPU() (time.Duration, bool) { return 0, false }
