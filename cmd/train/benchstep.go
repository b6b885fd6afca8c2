package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"stoke/model"
)

// benchStep is `train bench-step`: the configured model's training step on
// random data, timed alone (no loader), so it can be set beside PyTorch's
// (scripts/bench-step.sh). It prints ms/step, img/s and the process's peak
// RSS, or with --json one object per thread count.
func benchStep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench-step", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML config file; without one, the built-in quickstart")
	threads := fs.String("threads", "", "cores the ops may use (GOMAXPROCS), or a comma-separated list run one after another; default: all")
	steps := fs.Int("steps", 10, "timed steps per thread count")
	warmup := fs.Int("warmup", 2, "untimed steps first")
	asJSON := fs.Bool("json", false, "one JSON object per line: threads, ms_per_step, img_per_s, peak_rss_bytes (and best_ms, cpu_ms_per_step, gemm)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed steps to this file (go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: train bench-step [--config FILE] [--threads N[,N...]] [--steps N] [--json] [--cpuprofile FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *steps < 1 || *warmup < 0 {
		fmt.Fprintln(stderr, "train bench-step: want flags only, --steps >= 1, --warmup >= 0")
		return 2
	}
	counts := []int{runtime.GOMAXPROCS(0)}
	if *threads != "" {
		counts = counts[:0]
		for _, f := range strings.Split(*threads, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "train bench-step: --threads %q: want positive whole numbers\n", *threads)
				return 2
			}
			counts = append(counts, n)
		}
	}
	cfg, err := loadConfig(*cfgPath)
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		err = checkMemory(cfg) // counts the loaders' buffers too: bench-step needs less, not more
	}
	if err != nil {
		fmt.Fprintf(stderr, "train bench-step: %v\n", err)
		return 2
	}
	classes := cfg.Data.Synthetic.Classes
	spec := cfg.ModelSpec(classes)
	batch := cfg.Data.BatchSize
	m, err := model.New(spec, cfg.ModelOptions())
	if err != nil {
		fmt.Fprintf(stderr, "train bench-step: %v\n", err)
		return 1
	}
	defer m.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, batch*3*spec.InputSize*spec.InputSize)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(rng.IntN(classes))
	}
	if !*asJSON {
		arch := fmt.Sprintf("conv %v", cfg.Model.Conv)
		if spec.IsResNet() {
			arch = spec.Arch
			if spec.Arch == "resnet18" || spec.Arch == "resnet34" {
				arch += " (" + spec.Stem + " stem)"
			}
		}
		fmt.Fprintf(stdout, "%s\nmodel: %d px, batch %d, %s, %d classes, %d parameters\n",
			model.Kernel(), spec.InputSize, batch, arch, classes, m.NumParams())
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "train bench-step: %v\n", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	for _, n := range counts {
		runtime.GOMAXPROCS(n)
		lr := float32(1e-3) // small: the weights stay sane over many steps
		for i := 0; i < *warmup; i++ {
			if _, err := m.TrainStep(x, labels, batch, lr); err != nil {
				fmt.Fprintf(stderr, "train bench-step: %v\n", err)
				return 1
			}
		}
		start, cpu0 := time.Now(), cpuTime()
		best := time.Duration(math.MaxInt64)
		for i := 0; i < *steps; i++ {
			t0 := time.Now()
			if _, err := m.TrainStep(x, labels, batch, lr); err != nil {
				fmt.Fprintf(stderr, "train bench-step: %v\n", err)
				return 1
			}
			best = min(best, time.Since(t0))
		}
		per := time.Since(start).Seconds() / float64(*steps)
		cpuPer := (cpuTime() - cpu0).Seconds() / float64(*steps)
		rss := peakRSS()
		if *asJSON {
			b, _ := json.Marshal(map[string]any{"threads": n, "ms_per_step": per * 1e3,
				"img_per_s": float64(batch) / per, "peak_rss_bytes": rss, "best_ms": best.Seconds() * 1e3,
				"cpu_ms_per_step": cpuPer * 1e3, "gemm": model.Kernel()})
			fmt.Fprintln(stdout, string(b))
			continue
		}
		fmt.Fprintf(stdout, "threads %d: %.1f ms/step (best %.1f, CPU %.1f), %.0f img/s, peak RSS %.0f MiB\n",
			n, per*1e3, best.Seconds()*1e3, cpuPer*1e3, float64(batch)/per, float64(rss)/(1<<20))
	}
	return 0
}
