package trainer

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// machineBusy is the CPU time, in seconds, all CPUs have spent on anything
// but idling since boot (/proc/stat's first line: user, nice, system, irq,
// softirq, steal; as bench's), or -1 where it cannot be read.
// data.workers: auto takes the cores other processes keep busy from it.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
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
	const userHZ = 100 // USER_HZ, 100 for user space on every Linux architecture Go runs on
	return busy / userHZ
}
