package main

import (
	"io"

	"stoke/bench"
)

// benchStep is `train bench-step`: the configured model's training step on
// random data, timed alone (bench.Step).
func benchStep(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("bench-step", "usage: train bench-step [--config FILE] [--threads N[,N...]] [--steps N] [--precision fp32|tf32|bf16] [--winograd] [--json] [--cpuprofile FILE] [--memprofile FILE]\n", stderr)
	cfgPath := c.String("config", "", "YAML config file; without one, the built-in quickstart")
	threads := c.intList("threads", "", "cores the ops may use (GOMAXPROCS), or a comma-separated list run one after another; default: all", 1)
	steps := c.Int("steps", 10, "timed steps per thread count")
	precision := c.String("precision", "", "fp32, tf32 or bf16: the conv and linear GEMM inputs' rounding (train.precision); default: the config's")
	winograd := c.Bool("winograd", false, "the 3x3 convs by Winograd F(2x2,3x3) where it pays (train.winograd: true); default: the config's")
	warmup := c.Int("warmup", 2, "untimed steps first")
	asJSON := c.Bool("json", false, "one JSON object per line: threads, ms_per_step, img_per_s, peak_rss_bytes (and best_ms, cpu_ms_per_step, gemm; the CPU: cpu, cpu_family, cpu_model, simd; the load: load1_before, others_cores, busy)")
	cpuProfile := c.String("cpuprofile", "", "write a CPU profile of the timed steps to this file (go tool pprof)")
	memProfile := c.String("memprofile", "", "write a heap profile (what is live after the timed steps) to this file (go tool pprof -sample_index=inuse_space)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *steps < 1 {
		return c.badValue("steps", *steps, "at least 1")
	}
	if *warmup < 0 {
		return c.badValue("warmup", *warmup, "0 or more")
	}
	cfg, err := loadConfig(*cfgPath)
	if err == nil && *precision != "" {
		cfg.Train.Precision = *precision
	}
	if *winograd {
		cfg.Train.Winograd = true
	}
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil {
		err = checkMemory(cfg) // counts the loaders' buffers too: bench-step needs less, not more
	}
	if err != nil {
		return c.fail(2, "%v", err)
	}
	err = bench.Step(bench.StepOptions{Config: cfg, Threads: *threads, Steps: *steps, Warmup: *warmup, JSON: *asJSON, CPUProfile: *cpuProfile, MemProfile: *memProfile}, stdout)
	if err != nil {
		return c.fail(1, "%v", err)
	}
	return 0
}
