package data

import (
	"fmt"
	"math"
	"time"
)

// data.workers: auto. The training loop loads its first few batches inline
// (0 workers), where the two things that decide the worker count are each
// seen alone: how long one goroutine takes to build a batch (read, decode,
// augment: Batch.End - Batch.Start), and how long the loop spends on a step
// between two batches (the step's compute, or on a GPU its launches and
// waits). It also reads how much CPU the process burned during the step, for
// the cores the step leaves idle. ChooseWorkers turns those means into a
// worker count, and Iter.SetWorkers switches to it for the rest of the
// epoch; the batches are the same bits whatever it picks.
//
// What it cannot know: how the step slows when workers take its cores (the
// CPU engine's threads wait on each other, so one preempted thread stalls
// them all), the page cache growing cold or warm later on, or other
// processes starting after the measurement. The rule only adds workers it
// predicts to pay clearly (AutoWorkersGain) and never more than keep up
// with the step, and the trainer measures the steps after the switch and
// goes back to inline when they are not faster (trainer/autoworkers.go).

// AutoWorkersMargin is how much faster than the step the workers are asked
// to deliver: W = ceil(margin x load time / step time).
const AutoWorkersMargin = 1.25

// AutoWorkersGain is the least predicted gain, as a fraction of the inline
// time per step, for which auto runs workers at all; below it (a step that
// dominates, or one that keeps every core busy) it stays inline.
const AutoWorkersGain = 0.10

// AutoWorkersMax is the most workers auto picks on any machine.
const AutoWorkersMax = 8

// AutoWorkersLimit is the most workers auto may pick with cores cores
// (GOMAXPROCS): one per core, at most AutoWorkersMax. A memory estimate
// made before the run counts this many.
func AutoWorkersLimit(cores int) int { return max(1, min(cores, AutoWorkersMax)) }

// WorkerMeasure is what the first inline steps showed, as means per step.
type WorkerMeasure struct {
	Steps   int           // steps measured
	Images  float64       // images per batch
	Load    time.Duration // one goroutine building one batch, alone
	Step    time.Duration // the loop's time per step outside the loader
	StepCPU time.Duration // CPU time of the whole process during Step; 0 = not known
	Cores   int           // GOMAXPROCS
	// OtherCores is the cores other processes kept busy meanwhile, on
	// average (0 where not known): they are not ours to fill.
	OtherCores float64
	// SharedCores is set when the step computes on the host's cores (the
	// cpu device): a StepCPU not known then counts as every core busy.
	SharedCores bool
	MaxWorkers  int // the most to pick; 0 = AutoWorkersLimit(Cores)
}

// WorkerChoice is what ChooseWorkers picked and why.
type WorkerChoice struct {
	Workers int
	// Inline and Predicted are the time per step measured inline and the
	// one predicted with Workers workers.
	Inline, Predicted time.Duration
	Reason            string // one line, for the run's output and metrics.jsonl
}

// ChooseWorkers picks a worker count from m. With W workers a step takes
// the longest of: the step itself; the W workers' time to deliver a batch
// (Load/W); and the CPU the step and the loading need together spread over
// the cores other processes leave ((StepCPU + Load)/(Cores - OtherCores):
// on a CPU-bound machine workers only move work around). It picks the
// fewest workers that keep up with the step with AutoWorkersMargin to
// spare, within the limit, if that beats loading inline (Load + Step) by
// AutoWorkersGain; else 0.
func ChooseWorkers(m WorkerMeasure) WorkerChoice {
	cores := max(m.Cores, 1)
	limit := m.MaxWorkers
	if limit <= 0 {
		limit = AutoWorkersLimit(cores)
	}
	load, step := m.Load.Seconds(), m.Step.Seconds()
	inline := load + step
	busy := m.StepCPU.Seconds() // core-seconds the step burns
	if busy <= 0 {
		busy = step // a GPU step: the loop's goroutine
		if m.SharedCores {
			busy = step * float64(cores)
		}
	}
	free := max(float64(cores)-m.OtherCores, 0.25) // the cores this process may have
	predict := func(w int) float64 { return max(step, load/float64(w), (busy+load)/free) }
	w := limit
	if step > 0 {
		w = min(limit, max(1, int(math.Ceil(AutoWorkersMargin*load/step))))
	}
	c := WorkerChoice{Workers: w, Inline: seconds(inline), Predicted: seconds(predict(w))}
	imgs := func(sec float64) string {
		if sec <= 0 {
			return "∞ img/s"
		}
		return fmt.Sprintf("%.0f img/s", m.Images/sec)
	}
	facts := fmt.Sprintf("a worker makes %s (%s a batch), the step eats %s (%s), and keeps %.1f of %d cores busy",
		imgs(load), ms(load), imgs(step), ms(step), min(busy/max(step, 1e-9), float64(cores)), cores)
	if m.OtherCores >= 0.05 {
		facts += fmt.Sprintf(" (other processes %.1f)", m.OtherCores)
	}
	switch {
	case load <= 0 || predict(w) > (1-AutoWorkersGain)*inline:
		c.Workers, c.Predicted = 0, c.Inline
		why := "the step dominates"
		switch {
		case load > 0 && m.OtherCores >= 0.5 && float64(cores)-m.OtherCores < busy/max(step, 1e-9)+1:
			why = "other processes keep the cores busy: no core is left for a worker"
		case load > 0 && load >= AutoWorkersGain*inline:
			why = "the cores are busy with the step: workers would only take them from it"
		}
		c.Reason = fmt.Sprintf("auto picked 0 workers (inline): %s; %s: %s a step inline, %s would make it %s",
			facts, why, ms(inline), pluralWorkers(w), ms(predict(w)))
	default:
		bound := "keeps up with the step"
		switch {
		case predict(w) > step && (busy+load)/free >= load/float64(w):
			bound = "the cores are the bound"
		case predict(w) > step:
			bound = fmt.Sprintf("the data is the bound, at the limit of %d", limit)
		}
		c.Reason = fmt.Sprintf("auto picked %s: %s; %s a step inline, %s predicted (%s)",
			pluralWorkers(w), facts, ms(inline), ms(predict(w)), bound)
	}
	c.Reason += fmt.Sprintf("; measured over %d steps", m.Steps)
	return c
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func ms(s float64) string { return fmt.Sprintf("%.1f ms", s*1e3) }

func pluralWorkers(n int) string {
	if n == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", n)
}
