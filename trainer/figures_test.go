package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stoke/model"
)

// timedModel reports a copy time for every step, as a GPU backend measures
// its host-to-device copies with events.
type timedModel struct {
	Backend
	copy time.Duration
}

func (m *timedModel) Start(in model.Input, lr float32) (model.Pending, error) {
	time.Sleep(m.copy) // the copy, before the compute
	p, err := m.Backend.Start(in, lr)
	return timedStep{p, m.copy}, err
}

// timedStep is the timedModel's step: the inner step, with its times
// replaced by the ones a device would measure.
type timedStep struct {
	model.Pending
	copy time.Duration
}

func (s timedStep) Wait() (model.StepResult, model.StepTimes, error) {
	res, _, err := s.Pending.Wait()
	return res, model.StepTimes{Copy: s.copy, Compute: time.Millisecond}, err
}

// TestCopyShareIsFilledIn: the copy time a backend measures reaches the
// epoch's metrics (it was dropped, so every device showed "copy 0%").
func TestCopyShareIsFilledIn(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	tm := &timedModel{copy: 5 * time.Millisecond}
	sum, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer), wrapBackend: func(b Backend) Backend { tm.Backend = b; return tm }})
	if err != nil {
		t.Fatal(err)
	}
	m := sum.Epochs[0]
	// 4 steps of 5 ms copy each: 20 ms of the epoch's training time.
	want := 4 * tm.copy.Seconds() / m.TrainSeconds
	if m.CopyShare <= 0 || m.CopyShare < 0.99*want || m.CopyShare > 1.01*want {
		t.Errorf("copy share %.4f, want %.4f (4 steps x %v of %.3fs)", m.CopyShare, want, tm.copy, m.TrainSeconds)
	}
	if !strings.Contains(readFile(t, filepath.Join(c.Train.Out, "metrics.jsonl")), `"copy_share":0.`) {
		t.Errorf("metrics.jsonl lacks a non-zero copy_share:\n%s", readFile(t, filepath.Join(c.Train.Out, "metrics.jsonl")))
	}
}

// TestPeakRSSIsNeverBelowRSS: every metrics record's peak_rss_bytes is at
// least its rss_bytes (two sources read at different moments disagreed;
// internal/rss reads both from one snapshot, and tests that too).
func TestPeakRSSIsNeverBelowRSS(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 3
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(c.Train.Out, "metrics.jsonl"))), "\n") {
		var m EpochMetrics
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m.PeakRSSBytes < m.RSSBytes || m.RSSBytes <= 0 {
			t.Errorf("epoch %d: peak_rss_bytes %d, rss_bytes %d", m.Epoch, m.PeakRSSBytes, m.RSSBytes)
		}
	}
}
