package cpustat

import "testing"

// TestParseProcStat: busy time is user + nice + system + irq + softirq +
// steal, in seconds (USER_HZ 100); idle and iowait are not busy.
func TestParseProcStat(t *testing.T) {
	got := parseProcStat([]byte("cpu  100 20 30 5000 70 1 2 3 0 0\ncpu0 50 10 15 2500 35 0 1 1 0 0\n"))
	if want := (100 + 20 + 30 + 1 + 2 + 3) / 100.0; got != want {
		t.Errorf("busy %v s, want %v", got, want)
	}
	if got := parseProcStat([]byte("intr 1 2 3\n")); got != -1 {
		t.Errorf("a file without the cpu line gives %v, want -1 (unknown)", got)
	}
}
