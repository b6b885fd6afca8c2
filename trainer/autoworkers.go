package trainer

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"stoke/config"
	"stoke/data"
	"stoke/internal/cpustat"
)

// autoWorkers is data.workers: auto for the training loader, which starts
// inline (0 workers). Around each step of the loop it notes the time and
// the process's CPU time. After autoWarmSteps steps it measures
// autoMeasureSteps more, inline: the mean time to build a batch (the
// batch's own Start..End, one goroutine alone) and the mean time the loop
// spends between two batches (the step), with the CPU the process burned
// meanwhile. data.ChooseWorkers turns those into a count and the loop
// switches to it mid-epoch (Iter.SetWorkers: the same batches, bit for
// bit). Then it checks: after autoWarmSteps more steps it measures the
// loop's time per step with the workers over as many steps, and goes back
// to 0 workers if that is not at least autoKeepGain better than inline
// (a step slowed by workers that take its cores shows here, whatever the
// prediction said). The validation loader takes the final count for the
// epochs after. Each decision is printed as one "loader: auto ..." line and
// recorded in the epoch's metrics.jsonl record (auto_workers); the resolved
// config.yaml keeps data.workers: auto.
type autoWorkers struct {
	note   func(string) // prints a line between progress updates
	cores  int
	shared bool // the step computes on the host's cores (the cpu device)
	val    *data.Loader
	steps  int                                        // measured in each phase (autoMeasureSteps)
	choose func(data.WorkerMeasure) data.WorkerChoice // data.ChooseWorkers

	phase   int // autoMeasure, autoTrial, autoDone
	it      *data.Iter
	skip    int // steps left to skip before measuring
	n       int // steps measured in this phase
	pending bool
	t0, t1  time.Time     // this iteration's start and its batch's arrival
	cpu1    time.Duration // the process's CPU time at t1
	bLoad   time.Duration // the batch's build time (Start..End) and images
	bN      int
	w0      time.Time     // the measure window's start: the first measured step's iteration
	busy0   float64       // the machine's busy CPU seconds then (-1: not known)
	ours0   time.Duration // the process's CPU time then

	load, step, cpu, wall time.Duration // sums over the phase
	images                int
	choice                data.WorkerChoice
	inlineWall            time.Duration // mean loop time per step inline
	lines                 []string      // printed, not yet in metrics.jsonl
}

const (
	autoMeasure = iota
	autoTrial
	autoDone
)

// The steps auto skips (the first step allocates, a fresh pipeline fills)
// and those it measures in each phase, and the gain measured with workers
// that keeps them.
const (
	autoWarmSteps    = 1
	autoMeasureSteps = 6
	autoKeepGain     = 0.05
)

func newAutoWorkers(note func(string), device string, val *data.Loader, opt Options) *autoWorkers {
	a := &autoWorkers{note: note, cores: runtime.GOMAXPROCS(0), shared: device == "cpu", val: val, skip: autoWarmSteps,
		steps: autoMeasureSteps, choose: data.ChooseWorkers}
	if opt.autoSteps > 0 {
		a.steps = opt.autoSteps
	}
	if opt.autoChoose != nil {
		a.choose = opt.autoChoose
	}
	return a
}

// before is called at the top of each iteration of the loop over it, before
// Next; it ends the step in flight's measure and may switch its workers.
func (a *autoWorkers) before(it *data.Iter) error {
	if a == nil || a.phase == autoDone {
		return nil
	}
	now := time.Now()
	if it != a.it { // a new epoch: evaluation and a checkpoint came between
		a.it, a.pending = it, false
	}
	if a.pending {
		a.pending = false
		if a.skip > 0 {
			if a.skip--; a.skip == 0 {
				a.w0, a.busy0, a.ours0 = a.t0, cpustat.MachineBusy(), cpustat.Self()
			}
		} else {
			a.n++
			a.load += a.bLoad
			a.images += a.bN
			a.step += now.Sub(a.t1)
			a.cpu += cpustat.Self() - a.cpu1
			a.wall += now.Sub(a.t0)
		}
	}
	a.t0 = now
	if a.n < a.steps {
		return nil
	}
	if a.phase == autoMeasure {
		return a.decide(it)
	}
	return a.check(it)
}

// after is called with each batch Next returned that the loop trains on.
func (a *autoWorkers) after(b *data.Batch) {
	if a == nil || a.phase == autoDone {
		return
	}
	a.t1, a.pending = time.Now(), true
	a.bLoad, a.bN = b.End.Sub(b.Start), b.N
	a.cpu1 = cpustat.Self()
}

// decide picks the count from the inline measure and switches to it.
func (a *autoWorkers) decide(it *data.Iter) error {
	n := time.Duration(a.n)
	m := data.WorkerMeasure{Steps: a.n, Images: float64(a.images) / float64(a.n), Load: a.load / n, Step: a.step / n,
		StepCPU: a.cpu / n, Cores: a.cores, SharedCores: a.shared}
	if b := cpustat.MachineBusy(); a.busy0 >= 0 && b >= 0 {
		if wall := time.Since(a.w0).Seconds(); wall > 0 {
			m.OtherCores = max(0, (b-a.busy0-(cpustat.Self()-a.ours0).Seconds())/wall)
		}
	}
	a.choice = a.choose(m)
	a.inlineWall = a.wall / n
	a.say(a.choice.Reason)
	if a.choice.Workers == 0 {
		a.phase = autoDone
		return nil
	}
	a.phase, a.skip, a.n, a.load, a.step, a.cpu, a.wall, a.images = autoTrial, autoWarmSteps, 0, 0, 0, 0, 0, 0
	return a.set(it, a.choice.Workers)
}

// check keeps the workers if the loop is faster with them, else goes back
// to loading inline.
func (a *autoWorkers) check(it *data.Iter) error {
	a.phase = autoDone
	got := a.wall / time.Duration(a.n)
	w := a.choice.Workers
	if float64(got) <= (1-autoKeepGain)*float64(a.inlineWall) {
		a.say(fmt.Sprintf("auto kept %s: %.1f ms a step measured with them, %.1f ms inline", plural(w, "worker"), ms(got), ms(a.inlineWall)))
		return nil
	}
	a.say(fmt.Sprintf("auto went back to 0 workers (inline): %s made %.1f ms a step, not %.0f%% under the %.1f ms inline (they take the cores the step needs)",
		plural(w, "worker"), ms(got), 100*autoKeepGain, ms(a.inlineWall)))
	return a.set(it, 0)
}

func (a *autoWorkers) set(it *data.Iter, w int) error {
	if err := it.SetWorkers(w); err != nil {
		return fmt.Errorf("data.workers auto: %w", err)
	}
	if a.val != nil {
		if err := a.val.SetWorkers(w); err != nil {
			return fmt.Errorf("data.workers auto: the validation loader: %w", err)
		}
	}
	return nil
}

func (a *autoWorkers) say(line string) {
	a.lines = append(a.lines, line)
	a.note("loader: " + line)
}

// taken returns the lines printed since the last call, for the epoch's
// metrics record.
func (a *autoWorkers) taken() string {
	if a == nil {
		return ""
	}
	s := strings.Join(a.lines, "\n")
	a.lines = nil
	return s
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

// startWorkers is the count a loader starts with: auto starts inline.
func startWorkers(w config.Workers) int {
	if w.Auto() {
		return 0
	}
	return int(w)
}

// maxWorkers is the most workers a run may have (the timeline's rows).
func maxWorkers(w config.Workers) int {
	if w.Auto() {
		return data.AutoWorkersLimit(runtime.GOMAXPROCS(0))
	}
	return int(w)
}

// workersLine is the set-up line's worker count.
func workersLine(w config.Workers) string {
	if w.Auto() {
		return fmt.Sprintf("auto workers (inline for the first steps, then at most %d)", maxWorkers(w))
	}
	return plural(int(w), "worker")
}
