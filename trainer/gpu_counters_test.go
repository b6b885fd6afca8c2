package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"stoke/model"
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
// The figures are plausible ones (blocking copies, plain progress, which
// reads the deferred losses at each of its lines: host waits every step;
// batches copied up: at least a uint8 batch of 8 images of 3x16x16 a
// step); TestGPUDeferredLoss holds the steady state to <= 0.1 waits. With
// cuda.graphs auto (the default) the first epoch's first step launches its
// kernels one by one and every later step is a replayed graph: the second
// epoch launches exactly once a step; with off, every step launches them
// all.
func TestGPUCountersPerStep(t *testing.T) {
	if !cudaUsable() {
		t.Skip("no usable CUDA device (a CPU build, or no GPU; scripts/gpu-sim.sh runs this under the stand-in)")
	}
	for _, graphs := range []string{"off", "auto"} {
		c := tinyConfig(t)
		c.Train.Device = "cuda"
		c.Cuda.Graphs = graphs
		if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
			t.Fatal(err)
		}
		for _, m := range epochRecords(t, c.Train.Out) {
			g := m.GPU
			if g == nil {
				t.Fatalf("graphs %s, epoch %d: no gpu counters on --device cuda", graphs, m.Epoch)
			}
			t.Logf("graphs %s, epoch %d: %+v", graphs, m.Epoch, *g)
			launches := g.LaunchesPerStep >= 5
			if graphs == "auto" && m.Epoch > 1 {
				launches = g.LaunchesPerStep == 1
			}
			if !launches || g.HostSyncsPerStep <= 0 || g.H2DBytesPerStep < 8*3*16*16 || g.D2HBytesPerStep <= 0 || g.Graph != (graphs == "auto") {
				t.Errorf("graphs %s, epoch %d: implausible counters %+v", graphs, m.Epoch, *g)
			}
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

// TestGPUDeferredLoss: on --device cuda the steps' losses stay on the
// device and the trainer reads them at the progress refresh and the
// epoch's end. With progress off and a loader pool larger than the batch
// buffers the backend may hold (so that it keeps them until their copies
// are seen done, without a wait), a steady epoch waits for the device at
// most once in ten steps and allocates nothing; and the epochs' figures are
// those of the same run read at every plain-progress line with a small
// pool (a wait for each copy).
func TestGPUDeferredLoss(t *testing.T) {
	if !cudaUsable() {
		t.Skip("no usable CUDA device (a CPU build, or no GPU; scripts/gpu-sim.sh runs this under the stand-in)")
	}
	run := func(progress string, prefetch int) []EpochMetrics {
		c := tinyConfig(t)
		c.Train.Device = "cuda"
		c.Data.BatchSize = 2 // 15 steps an epoch, the last one short
		c.Data.Prefetch = prefetch
		c.Data.PinMemory, c.Train.NonBlocking = true, true
		c.Train.Progress = progress
		if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
			t.Fatal(err)
		}
		return epochRecords(t, c.Train.Out)
	}
	quiet := run("none", 9)  // 2 workers x 9 buffers: more than the backend holds
	shown := run("plain", 2) // 4 buffers: the backend waits for each copy
	for i, m := range quiet {
		g, h := m.GPU, shown[i].GPU
		t.Logf("epoch %d, progress none, pool 18: %+v; plain, pool 4: %+v", m.Epoch, *g, *h)
		if m.TrainLoss != shown[i].TrainLoss || m.TrainAcc != shown[i].TrainAcc || m.ValLoss != shown[i].ValLoss {
			t.Errorf("epoch %d: train loss %v acc %v val loss %v, read at every refresh %v %v %v",
				m.Epoch, m.TrainLoss, m.TrainAcc, m.ValLoss, shown[i].TrainLoss, shown[i].TrainAcc, shown[i].ValLoss)
		}
	}
	if g := quiet[len(quiet)-1].GPU; g.HostSyncsPerStep > 0.1 || g.AllocsPerStep != 0 {
		t.Errorf("a steady epoch: %.3f host waits and %.2f allocations a step, want <= 0.1 and 0", g.HostSyncsPerStep, g.AllocsPerStep)
	}
}

// TestGPUNonFiniteLossNamed: on --device cuda the loss is read only at the
// epoch's end here (progress none), yet a learning rate that overflows the
// weights at the first step stops the run at the second, named as on the
// CPU, with the CPU's message.
func TestGPUNonFiniteLossNamed(t *testing.T) {
	if !cudaUsable() {
		t.Skip("no usable CUDA device (a CPU build, or no GPU; scripts/gpu-sim.sh runs this under the stand-in)")
	}
	stop := func(device string) string {
		c := tinyConfig(t)
		c.Train.Device = device
		c.Data.BatchSize = 2
		c.Train.Progress = "none"
		c.Optim.LR, c.Optim.WarmupEpochs = 3e38, 0
		_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
		if err == nil || !strings.Contains(err.Error(), model.ErrNonFiniteLoss.Error()) {
			t.Fatalf("%s: %v; want a non-finite loss", device, err)
		}
		return strings.Replace(err.Error(), "cudaops: step: ", "", 1)
	}
	cpu, gpu := stop("cpu"), stop("cuda")
	t.Logf("cuda: %s", gpu)
	if gpu != cpu {
		t.Errorf("cuda says %q, the cpu %q", gpu, cpu)
	}
}
