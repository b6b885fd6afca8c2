package trainer

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgressNoneKeepsTheEpochLines: "none" hides the progress within an
// epoch, not the epoch's summary; "plain" writes no carriage returns or
// escape codes.
func TestProgressNoneKeepsTheEpochLines(t *testing.T) {
	for _, mode := range []string{"none", "plain"} {
		var out bytes.Buffer
		p := newProgress(&out, mode)
		p.EpochStart(0, 2, 8)
		for range 8 {
			p.Step(1, 0.5, 100, 0.1)
		}
		p.EpochDone(EpochMetrics{Epoch: 1, Epochs: 2, ValTop1: 0.5})
		got := out.String()
		if !strings.Contains(got, "epoch 1/2  train loss") {
			t.Errorf("%s: no epoch line in %q", mode, got)
		}
		if steps := strings.Contains(got, " step "); steps != (mode == "plain") {
			t.Errorf("%s: step lines shown %v in %q", mode, steps, got)
		}
		if strings.ContainsAny(got, "\r\033") {
			t.Errorf("%s: carriage return or escape code in %q", mode, got)
		}
	}
}

// TestRanksOfALaunchDefaultToPlain: under a launcher of several ranks
// (mpirun gives each a pty, even with its output in a file) "auto" cannot
// trust the terminal test, and means plain lines.
func TestRanksOfALaunchDefaultToPlain(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "0"}, false},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0"}, true},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1"}, true},
		{map[string]string{"PMIX_RANK": "0", "SLURM_NTASKS": "4"}, true},
	} {
		if got := launchedRanks(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("launchedRanks(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}
