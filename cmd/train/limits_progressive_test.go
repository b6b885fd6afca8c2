package main

import (
	"strings"
	"testing"

	"stoke/config"
)

// TestMemoryEstimateUsesTheLargestSides: with data.progressive the model
// and training buffers are estimated at the ramp's end (the largest side),
// not at data.image_size, and an evaluation side of its own adds the
// evaluation model and sizes the validation buffers.
func TestMemoryEstimateUsesTheLargestSides(t *testing.T) {
	fixed := config.Default()
	fixed.Data.ImageSize = 96
	atEnd, _ := estimateRun(fixed)

	ramp := config.Default()
	ramp.Data.ImageSize = 96
	ramp.Data.SizeRamp = config.SizeRamp{Start: 32, End: 96, StartEpoch: 0, EndEpoch: 4, Step: 32}
	got, detail := estimateRun(ramp)
	if got < atEnd {
		t.Errorf("progressive 32 -> 96 px: %.0f bytes, below the %.0f of a run at 96 px (%s)", got, atEnd, detail)
	}

	small := config.Default()
	small.Data.ImageSize = 32
	atStart, _ := estimateRun(small)
	ramp.Data.ImageSize = 32 // the eval side only: the training side follows the ramp
	evalAt32, _ := estimateRun(ramp)
	if evalAt32 <= atStart {
		t.Errorf("progressive to 96 px with data.image_size 32: %.0f bytes, no more than a 32 px run's %.0f", evalAt32, atStart)
	}

	ramp.Data.EvalSize = 160
	withEval, detail := estimateRun(ramp)
	if withEval <= evalAt32 {
		t.Errorf("eval_size 160: %.0f bytes, no more than at 32 px (%.0f)", withEval, evalAt32)
	}
	for _, want := range []string{"at 96 px and the evaluation model", "at 160 px", "3x96x96 (training) and 3x160x160 (validation)"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the estimate's detail lacks %q: %s", want, detail)
		}
	}
}
