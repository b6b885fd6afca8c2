package rss

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// Now returns the process's resident set size now and its peak, in bytes,
// both read from one snapshot of /proc/self/status (VmRSS and VmHWM); 0, 0
// where it cannot be read.
func Now() (current, peak int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		var dst *int64
		switch {
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			dst = &current
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			dst = &peak
		default:
			continue
		}
		f := bytes.Fields(line[6:])
		if len(f) >= 1 {
			kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
			*dst = kb * 1024 // the kernel writes "kB" and means KiB
		}
	}
	return current, max(peak, current)
}
