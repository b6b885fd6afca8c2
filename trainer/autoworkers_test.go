package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"stoke/config"
	"stoke/data"
	"stoke/model"
)

// autoConfig is tinyConfig at batch 4 (8 steps an epoch, the last short)
// under data.workers: auto.
func autoConfig(t *testing.T) config.Config {
	c := tinyConfig(t)
	c.Data.BatchSize = 4
	c.Data.Workers = config.WorkersAuto
	return c
}

// pick2 is a rule that always picks 2 workers: the run then switches
// mid-epoch whatever this machine's timings.
func pick2(m data.WorkerMeasure) data.WorkerChoice {
	c := data.ChooseWorkers(m)
	c.Workers, c.Reason = 2, "auto picked 2 workers (the test's rule): "+c.Reason
	return c
}

func sameWeightsAuto(t *testing.T, what string, a, b []model.NamedTensor) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d tensors", what, len(a), len(b))
	}
	for i := range a {
		for j := range a[i].Data {
			if a[i].Name != b[i].Name || a[i].Data[j] != b[i].Data[j] {
				t.Fatalf("%s: %s[%d]: %v, want %v (0 workers)", what, a[i].Name, j, b[i].Data[j], a[i].Data[j])
			}
		}
	}
}

// Under data.workers: auto the run trains the same weights, bit for bit, as
// at 0 workers, whatever auto picks and however often it switches within
// an epoch; it says what it picked and why, metrics.jsonl records it, and
// the resolved config keeps "auto".
func TestAutoWorkersSameWeightsAsInline(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ref := autoConfig(t)
	ref.Data.Workers = 0
	runOK(t, ref)
	want := lastWeights(t, ref.Train.Out)

	for _, tc := range []struct {
		name   string
		choose func(data.WorkerMeasure) data.WorkerChoice
	}{
		{"the test's rule: 2 workers from step 3", pick2},
		{"this machine's measure", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := autoConfig(t)
			var out bytes.Buffer
			if _, err := Run(context.Background(), c, Options{Out: &out, autoChoose: tc.choose, autoSteps: 2}); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			sameWeightsAuto(t, tc.name, want, lastWeights(t, c.Train.Out))
			if !strings.Contains(out.String(), "loader: auto workers (inline for the first steps") || !strings.Contains(out.String(), "loader: auto picked ") {
				t.Errorf("no auto lines in the output:\n%s", out.String())
			}
			if tc.choose != nil && !strings.Contains(out.String(), "loader: auto kept 2 workers") && !strings.Contains(out.String(), "loader: auto went back to 0 workers") {
				t.Errorf("no line on whether auto kept its workers:\n%s", out.String())
			}
			lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(c.Train.Out, "metrics.jsonl"))), "\n")
			var m EpochMetrics
			if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(m.AutoWorkers, "auto picked ") {
				t.Errorf("metrics.jsonl's first record: auto_workers %q, workers %d; want what auto picked", m.AutoWorkers, m.Workers)
			}
			saved, err := config.Load(filepath.Join(c.Train.Out, "config.yaml"))
			if err != nil || !saved.Data.Workers.Auto() || !strings.Contains(readFile(t, filepath.Join(c.Train.Out, "config.yaml")), "workers: auto") {
				t.Errorf("saved config.yaml: data.workers %v (%v), want auto", saved.Data.Workers, err)
			}
		})
	}
}

// A run under auto interrupted after its switch to workers resumes to the
// weights of an uninterrupted run at 0 workers.
func TestAutoWorkersResume(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ref := autoConfig(t)
	ref.Data.Workers = 0
	runOK(t, ref)

	c := autoConfig(t)
	opt := Options{autoChoose: pick2, autoSteps: 2}
	interruptAfter(t, "auto", c, opt, 5) // 2 workers from step 3 on
	c.Train.Resume = c.Train.Out
	var out bytes.Buffer
	if _, err := Run(context.Background(), c, Options{Out: &out, autoChoose: pick2, autoSteps: 2}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "resumed from") {
		t.Errorf("no resume line:\n%s", out.String())
	}
	sameWeightsAuto(t, "resumed under auto", lastWeights(t, ref.Train.Out), lastWeights(t, c.Train.Out))
}
