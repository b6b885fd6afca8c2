package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func epochRecords(t *testing.T, run string) []EpochMetrics {
	t.Helper()
	var out []EpochMetrics
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(run, "metrics.jsonl"))), "\n") {
		var m EpochMetrics
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metrics.jsonl: %v: %s", err, line)
		}
		out = append(out, m)
	}
	return out
}

// TestCPURecordsHaveNoGPUCounters: "gpu" is for the cuda device only.
func TestCPURecordsHaveNoGPUCounters(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	if m := epochRecords(t, c.Train.Out); m[0].GPU != nil || strings.Contains(readFile(t, filepath.Join(c.Train.Out, "metrics.jsonl")), `"gpu"`) {
		t.Errorf("a CPU run's record has gpu counters")
	}
}

// TestGPUCountersPerStep: on --device cuda each metrics.jsonl record says
// what a training step cost the host, counted at the driver calls (the
// stand-in under scripts/gpu-sim.sh).
// The figures are today's (the loss read back each step: several host
// waits a step; batches copied up: at least a uint8 batch of 8 images of
// 3x16x16 a step), to be driven down by issue 25.
func TestGPUCountersPerStep(t *testing.T) {
	if !cudaUsable() {
		t.Skip("no usable CUDA device (a CPU build, or no GPU; scripts/gpu-sim.sh runs this under the stand-in)")
	}
	c := tinyConfig(t)
	c.Train.Device = "cuda"
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	for _, m := range epochRecords(t, c.Train.Out) {
		g := m.GPU
		if g == nil {
			t.Fatalf("epoch %d: no gpu counters on --device cuda", m.Epoch)
		}
		t.Logf("epoch %d: %+v", m.Epoch, *g)
		if g.LaunchesPerStep < 5 || g.HostSyncsPerStep <= 0 || g.H2DBytesPerStep < 8*3*16*16 || g.D2HBytesPerStep <= 0 || g.Graph {
			t.Errorf("epoch %d: implausible counters %+v", m.Epoch, *g)
		}
	}
}
