package trainer

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"stoke/model"
)

// fallsBack is a Backend whose steps stop replaying CUDA Graphs at its
// second step, as cudaops.Backend does under cuda.graphs auto when the
// driver refuses a capture.
type fallsBack struct {
	Backend
	steps int
}

func (f *fallsBack) Start(in model.Input, lr float32) (model.Pending, error) {
	f.steps++
	return f.Backend.Start(in, lr)
}

func (f *fallsBack) GraphsFallback() string {
	if f.steps < 2 {
		return ""
	}
	return "capturing a step (slot 1, 8 rows) failed: CUDA error 901"
}

// TestGraphsFallbackIsPrinted: when the backend's steps fall back from
// CUDA Graphs to launches, the run says so, and why, once, after the epoch
// in which it happened.
func TestGraphsFallbackIsPrinted(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 2
	var out bytes.Buffer
	opt := Options{Out: &out, wrapBackend: func(b Backend) Backend { return &fallsBack{Backend: b} }}
	if _, err := Run(context.Background(), c, opt); err != nil {
		t.Fatal(err)
	}
	const want = "cuda.graphs auto: capturing a step (slot 1, 8 rows) failed: CUDA error 901; the steps launch kernel by kernel from then on"
	if n := strings.Count(out.String(), want); n != 1 {
		t.Errorf("the fallback is printed %d times, want once after epoch 1:\n%s", n, out.String())
	}
	if i, j := strings.Index(out.String(), "epoch 1/2"), strings.Index(out.String(), want); i < 0 || j < i {
		t.Errorf("the fallback is not printed after epoch 1's line:\n%s", out.String())
	}
}
