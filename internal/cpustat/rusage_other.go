//go:build !unix

package cpustat

import "time"

// Self is 0 where getrusage is missing (Windows).
func Self() time.Duration { return 0 }

// SelfAndChildren is 0 here too.
func SelfAndChildren() time.Duration { return 0 }
