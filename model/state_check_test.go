package model

import (
	"math"
	"strings"
	"testing"
)

// TestLoadRefusesCountsThatAreNotWhole: optimizer.step and a BatchNorm's
// num_batches_tracked are float32 counts; an infinite one (which passed
// the whole-number check before, Trunc(Inf) being Inf) is refused as a
// fraction or a negative one is, naming the tensor.
func TestLoadRefusesCountsThatAreNotWhole(t *testing.T) {
	m := newModel(t, Spec{Arch: "resnet20", InputSize: 8, Classes: 3}, Options{Batch: 2, Momentum: 0.9})
	params, optState, err := m.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []float32{float32(math.Inf(1)), -1, 0.5, float32(math.NaN())} {
		for _, name := range []string{StepName, "layer1.0.bn1.num_batches_tracked"} {
			ts := optState
			if name != StepName {
				ts = params
			}
			var saved float32
			for i := range ts {
				if ts[i].Name == name {
					saved, ts[i].Data[0] = ts[i].Data[0], bad
				}
			}
			err := m.Load(params, optState)
			if err == nil || !strings.Contains(err.Error(), name+" = ") || !strings.Contains(err.Error(), "want a whole number >= 0") {
				t.Errorf("%s = %v: Load error %v, want it refused by name", name, bad, err)
			}
			for i := range ts {
				if ts[i].Name == name {
					ts[i].Data[0] = saved
				}
			}
		}
	}
	if err := m.Load(params, optState); err != nil {
		t.Fatalf("the state restored: %v", err)
	}
}
