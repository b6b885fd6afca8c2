package trainer

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"stoke/data"
)

// TestUint8BatchesThroughTheSeam: with data.batch_dtype uint8 the CPU model
// gets the loader's uint8 batches as they are (model.Input.U8) and
// normalizes them itself. A run so trained, stepped through a queued
// backend (asyncModel), interrupted and resumed, ends bit-identical to the
// same run uninterrupted and synchronous; Evaluate (which resolves the
// batch type the same way) reproduces its last validation figures; and
// batch_dtype auto still means float32 on the CPU.
func TestUint8BatchesThroughTheSeam(t *testing.T) {
	plain := tinyConfig(t)
	plain.Data.BatchDType = data.DTypeUint8
	var out bytes.Buffer
	sum, err := Run(context.Background(), plain, Options{Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "uint8 batches") {
		t.Fatalf("the loader did not make uint8 batches:\n%s", out.String())
	}
	want := lastWeights(t, plain.Train.Out)

	c := tinyConfig(t)
	c.Data.BatchDType = data.DTypeUint8
	var am *asyncModel
	wrap := func(b Backend) Backend { am = &asyncModel{Backend: b}; return am }
	interruptAfter(t, "uint8, queued", c, Options{wrapBackend: wrap}, 3)
	c.Train.Resume = c.Train.Out
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer), wrapBackend: wrap}); err != nil {
		t.Fatal(err)
	}
	got := lastWeights(t, c.Train.Out)
	for i := range want {
		if !slices.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("%s differs between the uint8 run and the same run queued, interrupted and resumed", want[i].Name)
		}
	}

	rep, err := Evaluate(context.Background(), plain.Train.Out, "", "", new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	last := sum.Epochs[len(sum.Epochs)-1]
	if math.Abs(rep.Loss-last.ValLoss) > 1e-12 || rep.Top1 != last.ValTop1 || rep.Top5 != last.ValTop5 {
		t.Errorf("evaluate %+v; the uint8 run's last epoch: loss %v top1 %v top5 %v", rep, last.ValLoss, last.ValTop1, last.ValTop5)
	}

	auto := tinyConfig(t)
	auto.Train.Epochs = 1
	out.Reset()
	if _, err := Run(context.Background(), auto, Options{Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "float32 batches") {
		t.Errorf("batch_dtype auto on the cpu did not mean float32:\n%s", out.String())
	}
}
