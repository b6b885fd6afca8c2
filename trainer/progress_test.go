package trainer

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressETA: the estimate is this epoch's remaining steps at its pace
// plus the remaining epochs at the last whole epoch's length.
func TestProgressETA(t *testing.T) {
	p := newProgress(new(bytes.Buffer), "plain")
	p.EpochStart(0, 3, 10)
	p.start = time.Now().Add(-4 * time.Second)
	p.done = 4 // 1 s a step: 6 s left in this epoch, then 2 epochs of 10 s
	if got := p.eta().Round(time.Second); got != 26*time.Second {
		t.Fatalf("eta %v before any epoch finished, want 26s", got)
	}
	p.epochT = 20 * time.Second // the last epoch, evaluation included
	if got := p.eta().Round(time.Second); got != 46*time.Second {
		t.Fatalf("eta %v, want 46s", got)
	}
	for d, want := range map[time.Duration]string{46 * time.Second: "0:46", 3725 * time.Second: "1:02:05"} {
		if got := fmtETA(d); got != want {
			t.Errorf("fmtETA(%v) = %q, want %q", d, got, want)
		}
	}
	var out bytes.Buffer
	q := newProgress(&out, "plain")
	q.EpochStart(0, 1, 4)
	q.Step(1, 0.5, 100, 0.1)
	if !strings.Contains(out.String(), " eta 0:0") {
		t.Errorf("progress line lacks the ETA: %q", out.String())
	}
}
