//go:build !unix

package bench

import "time"

// cpuTime is 0 where getrusage is missing (Windows): bench-step then shows
// no CPU time per step.
func cpuTime() time.Duration { return 0 }

// ourCPU is 0 here too: a Load then shows no CPU time.
func ourCPU() time.Duration { return 0 }
