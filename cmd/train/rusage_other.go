//go:build !unix

package main

import "time"

// cpuTime is 0 where getrusage is missing (Windows): bench-step then shows
// no CPU time per step.
func cpuTime() time.Duration { return 0 }

// peakRSS is 0 where getrusage is missing (Windows).
func peakRSS() int64 { return 0 }
