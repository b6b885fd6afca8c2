//go:build !unix

package cpuops

import "time"

// cpuTime is 0 where getrusage is missing: the benchmarks' cpu-ms/op is then 0.
func cpuTime() time.Duration { return 0 }
