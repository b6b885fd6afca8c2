//go:build !unix

package trainer

import "time"

// processCPU is 0 where getrusage is missing: data.workers: auto then
// counts every core as busy during a step on the cpu device.
func processCPU() time.Duration { return 0 }
