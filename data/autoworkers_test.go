package data

import (
	"strings"
	"testing"
	"time"
)

func TestChooseWorkers(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, c := range []struct {
		name   string
		m      WorkerMeasure
		want   int
		reason string
	}{
		// The blog's case on 2 cores: decoding 256 px JPEGs costs far more than the
		// tiny CNN's step; both cores load, the step shares them.
		{"cpu, data-bound, 2 cores", WorkerMeasure{Load: ms(64), Step: ms(10), StepCPU: ms(15), Cores: 2, SharedCores: true}, 2, "the cores are the bound"},
		// A step that keeps both cores busy and needs a little data: a worker
		// would only take a core from it (and time-share it: at best half
		// the load would be saved, under AutoWorkersGain).
		{"cpu, step-bound, cores busy", WorkerMeasure{Load: ms(1.5), Step: ms(10), StepCPU: ms(20), Cores: 2, SharedCores: true}, 0, "the cores are busy"},
		{"cpu, step dominates", WorkerMeasure{Load: ms(0.5), Step: ms(10), StepCPU: ms(10), Cores: 2, SharedCores: true}, 0, "the step dominates"},
		// A CPU time not known on the cpu device counts as every core busy.
		{"cpu, no cpu time", WorkerMeasure{Load: ms(1.5), Step: ms(10), Cores: 2, SharedCores: true}, 0, "the cores are busy"},
		// The step leaves a core idle: one worker fills it and keeps up.
		{"cpu, idle core", WorkerMeasure{Load: ms(6), Step: ms(10), StepCPU: ms(10), Cores: 2, SharedCores: true}, 1, "keeps up with the step"},
		// A GPU step leaves the host's cores to the loader: as many as keep up.
		{"gpu, 16 cores", WorkerMeasure{Load: ms(40), Step: ms(10), StepCPU: ms(10), Cores: 16}, 5, "keeps up with the step"},
		{"gpu, no cpu time", WorkerMeasure{Load: ms(40), Step: ms(10), Cores: 16}, 5, "keeps up with the step"},
		{"gpu, at the limit", WorkerMeasure{Load: ms(400), Step: ms(10), StepCPU: ms(10), Cores: 64}, AutoWorkersMax, "the data is the bound"},
		{"gpu, a set limit", WorkerMeasure{Load: ms(400), Step: ms(10), StepCPU: ms(10), Cores: 64, MaxWorkers: 3}, 3, "at the limit of 3"},
		// The blog's case again, on a machine whose other processes keep 1.8
		// of the 2 cores busy: nothing to gain.
		{"cpu, data-bound, machine busy", WorkerMeasure{Load: ms(64), Step: ms(10), StepCPU: ms(15), Cores: 2, SharedCores: true, OtherCores: 1.8}, 0, "other processes keep the cores busy"},
		{"gpu, 16 cores, 4 busy elsewhere", WorkerMeasure{Load: ms(40), Step: ms(10), StepCPU: ms(10), Cores: 16, OtherCores: 4}, 5, "(other processes 4.0)"},
		{"one core", WorkerMeasure{Load: ms(40), Step: ms(10), StepCPU: ms(10), Cores: 1, SharedCores: true}, 0, "the cores are busy"},
	} {
		c.m.Images, c.m.Steps = 64, 8
		got := ChooseWorkers(c.m)
		if got.Workers != c.want || !strings.Contains(got.Reason, c.reason) {
			t.Errorf("%s: %d workers (%s), want %d, a reason with %q", c.name, got.Workers, got.Reason, c.want, c.reason)
		}
		if !strings.HasPrefix(got.Reason, "auto picked ") || !strings.Contains(got.Reason, "img/s") {
			t.Errorf("%s: reason %q does not say what it picked and the rates", c.name, got.Reason)
		}
		if got.Workers > 0 && float64(got.Predicted) > (1-AutoWorkersGain)*float64(got.Inline) {
			t.Errorf("%s: picked %d workers predicting %v against %v inline", c.name, got.Workers, got.Predicted, got.Inline)
		}
	}
}

func TestAutoWorkersLimit(t *testing.T) {
	for cores, want := range map[int]int{0: 1, 1: 1, 2: 2, 8: 8, 64: AutoWorkersMax} {
		if got := AutoWorkersLimit(cores); got != want {
			t.Errorf("AutoWorkersLimit(%d) = %d, want %d", cores, got, want)
		}
	}
}
