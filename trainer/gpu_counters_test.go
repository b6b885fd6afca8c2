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

// TestPerStep: the counters between two readings over the steps between;
// none for no steps or a reading the backend could not make; graph as the
// second reading says.
func TestPerStep(t *testing.T) {
	a := DriverCounts{Launches: 10, HostSyncs: 4, Allocs: 2, H2DBytes: 100, D2HBytes: 8}
	b := DriverCounts{Launches: 90, HostSyncs: 4, Allocs: 3, H2DBytes: 500, D2HBytes: 48, Graph: true}
	got := perStep(a, b, true, true, 4)
	want := GPUCounters{LaunchesPerStep: 20, HostSyncsPerStep: 0, AllocsPerStep: 0.25, H2DBytesPerStep: 100, D2HBytesPerStep: 10, Graph: true}
	if got == nil || *got != want {
		t.Errorf("perStep over 4 steps = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		okA, okB bool
		steps    int
	}{{true, true, 0}, {false, true, 4}, {true, false, 4}} {
		if g := perStep(a, b, c.okA, c.okB, c.steps); g != nil {
			t.Errorf("perStep(ok %v %v, %d steps) = %+v, want none", c.okA, c.okB, c.steps, *g)
		}
	}
}
