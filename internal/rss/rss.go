// Package rss reads this process's resident set size, now and at its peak:
// the one reader of it that the trainer's metrics, bench-step and the memory
// tests share.
//
// On Linux both figures come from one snapshot of /proc/self/status (VmRSS
// and VmHWM, the high-water mark of this process's own address space), so
// the peak is never below the current size. getrusage's ru_maxrss is not
// used there: it is the larger of that mark and the marks of the address
// spaces the process had before its exec, which for a child started by Go's
// os/exec (vfork: the parent's address space until the exec) can be the
// parent's. Other Unix systems have no /proc/self/status: there both
// figures are ru_maxrss. Elsewhere (Windows) they are 0.
package rss
