package trainer

import (
	"math"
	"testing"

	"stoke/config"
)

func TestSchedule(t *testing.T) {
	s := schedule{cfg: config.Optim{LR: 0.1, MinLR: 0.001, WarmupEpochs: 1}, stepsPerEpoch: 10, epochs: 5}
	for _, tc := range []struct {
		step int
		want float64
	}{
		{0, 0.01},   // first warm-up step
		{9, 0.1},    // end of warm-up: the peak
		{10, 0.1},   // cosine starts at the peak
		{49, 0.001}, // last step: min_lr
		{29, 0.001 + 0.099*0.5*(1+math.Cos(math.Pi*19/39))},
	} {
		if got := s.lr(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("lr(%d) = %v, want %v", tc.step, got, tc.want)
		}
	}
	prev := math.Inf(1)
	for step := 10; step < 50; step++ {
		if lr := s.lr(step); lr > prev {
			t.Fatalf("lr rises after warm-up at step %d", step)
		} else {
			prev = lr
		}
	}
	none := schedule{cfg: config.Optim{LR: 0.1}, stepsPerEpoch: 1, epochs: 1}
	if got := none.lr(0); got != 0.1 {
		t.Errorf("single step without warm-up: lr %v, want 0.1", got)
	}
}

// TestStepSchedules: StepLR and MultiStepLR stepped once per epoch, after
// a warm-up that overrides them.
func TestStepSchedules(t *testing.T) {
	step := schedule{cfg: config.Optim{LR: 0.1, WarmupEpochs: 1, Schedule: "step", StepEpochs: 2, Gamma: 0.5}, stepsPerEpoch: 10, epochs: 7}
	multi := schedule{cfg: config.Optim{LR: 0.1, Schedule: "multistep", Milestones: []int{3, 5}, Gamma: 0.1}, stepsPerEpoch: 10, epochs: 7}
	for _, tc := range []struct {
		s    schedule
		step int
		want float64
	}{
		{step, 0, 0.01}, {step, 9, 0.1}, {step, 10, 0.1}, {step, 19, 0.1}, {step, 20, 0.05}, {step, 39, 0.05}, {step, 40, 0.025}, {step, 69, 0.0125},
		{multi, 0, 0.1}, {multi, 29, 0.1}, {multi, 30, 0.01}, {multi, 49, 0.01}, {multi, 50, 0.001}, {multi, 69, 0.001},
	} {
		if got := tc.s.lr(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s lr(%d) = %v, want %v", tc.s.cfg.Schedule, tc.step, got, tc.want)
		}
	}
}
