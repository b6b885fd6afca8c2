package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// machineMemory is the memory this process may use, in bytes, and where
// the figure comes from: MemTotal in /proc/meminfo, or the cgroup's
// memory.max when that is lower (a container's limit).
func machineMemory() (int64, string) {
	var total int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if fields := strings.Fields(rest); len(fields) > 0 {
					kb, _ := strconv.ParseInt(fields[0], 10, 64)
					total = kb << 10
				}
				break
			}
		}
		f.Close()
	}
	source := "MemTotal in /proc/meminfo"
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && limit > 0 && (total == 0 || limit < total) {
			total, source = limit, "the cgroup limit in /sys/fs/cgroup/memory.max"
		}
	}
	if total <= 0 {
		return fallbackMemory, fallbackSource
	}
	return total, source
}
