//go:build !linux

package main

import "time"

// threadCPU is not available here: the stages are timed on the wall clock.
func threadCPU() (time.Duration, bool) { return 0, false }
