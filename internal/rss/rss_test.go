package rss

import (
	"runtime"
	"testing"
)

// TestNowFollowsTouchedMemory: touching 64 MiB raises the current figure by
// about that much (Linux, where it is read), and the peak is never below
// the current one, before, while and after the memory is held.
func TestNowFollowsTouchedMemory(t *testing.T) {
	cur0, peak0 := Now()
	if runtime.GOOS != "linux" {
		if peak0 < cur0 {
			t.Fatalf("peak %d below current %d", peak0, cur0)
		}
		t.Skipf("the current size is read on Linux only (%s: %d, %d)", runtime.GOOS, cur0, peak0)
	}
	if cur0 <= 0 || peak0 < cur0 {
		t.Fatalf("before: current %d, peak %d: want 0 < current <= peak", cur0, peak0)
	}
	const n = 64 << 20
	buf := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		buf[i] = 1 // fault every page in
	}
	cur1, peak1 := Now()
	runtime.KeepAlive(buf)
	t.Logf("current %d -> %d MiB, peak %d -> %d MiB", cur0>>20, cur1>>20, peak0>>20, peak1>>20)
	if cur1-cur0 < n*3/4 {
		t.Errorf("current grew by %d MiB after touching %d MiB", (cur1-cur0)>>20, n>>20)
	}
	if peak1 < cur1 || peak1 < peak0 {
		t.Errorf("peak %d after %d, current %d: the peak fell or is below the current size", peak1, peak0, cur1)
	}
}

// TestPeakIsNeverBelowCurrent: read after read, while the heap moves, the
// peak is at least the current size (two sources read at different
// moments once disagreed).
func TestPeakIsNeverBelowCurrent(t *testing.T) {
	var keep [][]byte
	for i := 0; i < 50; i++ {
		cur, peak := Now()
		if peak < cur {
			t.Fatalf("read %d: peak %d below current %d", i, peak, cur)
		}
		keep = append(keep, make([]byte, 1<<20)) // move the figures a little between reads
	}
	runtime.KeepAlive(keep)
}
