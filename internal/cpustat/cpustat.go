// Package cpustat reads CPU time: the machine's (all CPUs' busy time, from
// /proc/stat) and this process's (getrusage). It is the one reader the
// benches' load records and data.workers: auto share.
package cpustat

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// MachineBusy is the CPU time, in seconds, all CPUs have spent on anything
// but idling since boot (/proc/stat's first line: user, nice, system, irq,
// softirq and steal, the last being time the hypervisor gave to another
// guest), or -1 where it is missing (no /proc/stat: not Linux).
func MachineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	return parseProcStat(b)
}

func parseProcStat(b []byte) float64 {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return -1
	}
	var busy float64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system [idle iowait] irq softirq steal
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return -1
		}
		busy += v
	}
	const userHZ = 100 // USER_HZ, fixed at 100 for user space on every Linux architecture Go runs on
	return busy / userHZ
}
