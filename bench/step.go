package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"stoke/config"
	"stoke/internal/cpustat"
	"stoke/internal/rss"
	"stoke/model"
)

// StepOptions say what Step measures: the model of Config (model.*, the
// batch size and image size of data.*, data.synthetic.classes classes).
type StepOptions struct {
	Config     config.Config
	Threads    []int  // GOMAXPROCS values, run one after another; nil = the current one
	Steps      int    // timed steps per thread count, at least 1
	Warmup     int    // untimed steps first
	JSON       bool   // one StepLine per thread count as JSON, and nothing else
	CPUProfile string // when set, a CPU profile of the timed steps is written to this file
	MemProfile string // when set, a heap profile is written to this file after the last timed step
}

// StepLine is one line of `train bench-step --json` (scripts/bench-step.sh
// reads it). The fields are in the order of their names, as they were
// when the line was a map.
type StepLine struct {
	BestMS       float64  `json:"best_ms"`
	Busy         string   `json:"busy"` // why the machine was too busy to trust the figure (Load.Busy); "" = quiet
	CPU          string   `json:"cpu"`  // Machine.CPU, Family, Model
	CPUFamily    int      `json:"cpu_family"`
	CPUModel     int      `json:"cpu_model"`
	CPUMSPerStep float64  `json:"cpu_ms_per_step"`
	Gemm         string   `json:"gemm"`
	ImgPerS      float64  `json:"img_per_s"`
	Load1Before  float64  `json:"load1_before"`
	MSPerStep    float64  `json:"ms_per_step"`
	OthersCores  float64  `json:"others_cores"` // Load.OthersCores over the timed steps
	PeakRSSBytes int64    `json:"peak_rss_bytes"`
	Precision    string   `json:"precision,omitempty"` // train.precision: what the conv and linear GEMM inputs are rounded to
	SIMD         []string `json:"simd"`                // Machine.SIMD
	Threads      int      `json:"threads"`
	Winograd     bool     `json:"winograd,omitempty"` // train.winograd: the 3x3 convs by Winograd's F(2x2, 3x3) where it pays
}

// Step is `train bench-step`: the configured model's training step on
// random data, timed alone (no loader), so it can be set beside PyTorch's
// (scripts/bench-step.sh). It writes ms/step, img/s and the process's peak
// RSS for each thread count to out.
func Step(opt StepOptions, out io.Writer) error {
	cfg := opt.Config
	classes := cfg.Data.Synthetic.Classes
	spec := cfg.ModelSpec(classes)
	batch := cfg.Data.BatchSize
	m, err := model.New(spec, cfg.ModelOptions())
	if err != nil {
		return err
	}
	defer m.Close()

	x, labels := randomBatch(batch, spec.InputSize, classes)
	mach := ThisMachine()
	if !opt.JSON {
		printStepHeader(out, cfg, spec, m, mach)
	}
	threads := opt.Threads
	if threads == nil {
		threads = []int{runtime.GOMAXPROCS(0)}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	if opt.CPUProfile != "" {
		f, err := os.Create(opt.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	const lr = float32(1e-3) // small: the weights stay sane over many steps
	in := model.Input{X: x, Labels: labels, N: batch}
	step := func() error {
		p, err := m.Start(in, lr)
		if err == nil {
			_, _, err = p.Wait()
		}
		return err
	}
	for _, n := range threads {
		runtime.GOMAXPROCS(n)
		t, err := timeSteps(step, opt)
		if err != nil {
			return err
		}
		per, cpuPer, load := t.per, t.cpuPer, t.load
		_, peak := rss.Now()
		if err := writeMemProfile(opt.MemProfile); err != nil {
			return err
		}
		if opt.JSON {
			b, _ := json.Marshal(StepLine{Threads: n, MSPerStep: per * 1e3, ImgPerS: float64(batch) / per, PeakRSSBytes: peak,
				BestMS: t.best.Seconds() * 1e3, CPUMSPerStep: cpuPer * 1e3, Gemm: model.KernelAt(cfg.Train.GEMMPrecision()),
				Busy: load.Busy(n), CPU: mach.CPU, CPUFamily: mach.Family, CPUModel: mach.Model, SIMD: mach.SIMD,
				Load1Before: load.Load1Before, OthersCores: load.OthersCores, Precision: cfg.Train.Precision,
				Winograd: cfg.Train.Winograd})
			fmt.Fprintln(out, string(b))
			continue
		}
		fmt.Fprintf(out, "threads %d: %.1f ms/step (best %.1f, CPU %.1f), %.0f img/s, peak RSS %.0f MiB\n  %s\n",
			n, per*1e3, t.best.Seconds()*1e3, cpuPer*1e3, float64(batch)/per, float64(peak)/(1<<20), load)
		if why := load.Busy(n); why != "" {
			fmt.Fprintf(out, "  WARNING: the machine was busy (%s): this figure is not stoke's speed\n", why)
		}
	}
	return nil
}

// writeMemProfile writes the heap profile of what is live now (after a
// collection) to path, when path is set: `go tool pprof -sample_index=inuse_space`
// tells which of the model's buffers hold the peak RSS. With several thread
// counts the last one's is left.
func writeMemProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile %s: %w", path, err)
	}
	return f.Close()
}

// randomBatch is the batch every timed step trains on: batch images of
// side px from a fixed seed (normal pixels, uniform labels below classes).
func randomBatch(batch, px, classes int) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, batch*3*px*px)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(rng.IntN(classes))
	}
	return x, labels
}

// printStepHeader says what is timed: the GEMM kernel (and at bf16 or tf32
// how their products run: the VDPBF16PS kernels or the rounding fallback), the model and the
// machine, with a warning when the machine is already busy.
func printStepHeader(out io.Writer, cfg config.Config, spec model.Spec, m *model.Model, mach Machine) {
	arch := fmt.Sprintf("conv %v", cfg.Model.Conv)
	if spec.IsResNet() {
		arch = spec.Arch
		if spec.HasStem() {
			arch += " (" + spec.Stem + " stem)"
		}
	}
	fmt.Fprintf(out, "%s\nmodel: %d px, batch %d, %s, %d classes, %d parameters, precision %s%s\nmachine: %s\n",
		model.KernelAt(cfg.Train.GEMMPrecision()), spec.InputSize, cfg.Data.BatchSize, arch, cfg.Data.Synthetic.Classes, m.NumParams(), cfg.Train.Precision, model.WinogradNote(cfg.ModelOptions()), mach)
	if why := BusyBefore(); why != "" {
		fmt.Fprintf(out, "WARNING: the machine is busy (%s): the timings below are not this machine's speed\n", why)
	}
}

// stepTiming is one thread count's measurement: wall and CPU seconds per
// step, the fastest step, and the machine's load meanwhile.
type stepTiming struct {
	per, cpuPer float64
	best        time.Duration
	load        Load
}

// timeSteps runs opt.Warmup untimed training steps (step), then times
// opt.Steps more.
func timeSteps(step func() error, opt StepOptions) (stepTiming, error) {
	for i := 0; i < opt.Warmup; i++ {
		if err := step(); err != nil {
			return stepTiming{}, err
		}
	}
	meter := startLoad()
	start, cpu0 := time.Now(), cpustat.Self()
	best := time.Duration(math.MaxInt64)
	for i := 0; i < opt.Steps; i++ {
		t0 := time.Now()
		if err := step(); err != nil {
			return stepTiming{}, err
		}
		best = min(best, time.Since(t0))
	}
	per := time.Since(start).Seconds() / float64(opt.Steps)
	cpuPer := (cpustat.Self() - cpu0).Seconds() / float64(opt.Steps)
	return stepTiming{per: per, cpuPer: cpuPer, best: best, load: meter.stop()}, nil
}
