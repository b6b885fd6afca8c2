//go:build !linux

package gemm

import "time"

// threadCPU is the calling thread's CPU time: unknown (0) here.
func threadCPU() time.Duration { return 0 }
