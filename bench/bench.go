// Package bench holds the measurements beside the trainer, each the body of
// a `train` subcommand (cmd/train parses the flags and finds the config
// and the dataset):
//
//	bench.go, report.go, chart.go   `train bench`: the "3 lines, ~5x" experiment
//	data.go                         `train bench-data`: the loader alone, img/s and µs per stage
//	step.go                         `train bench-step`: the model's training step alone
//	dist.go                         `train bench-dist`: 1 and N ranks, the allreduce's cost
//
// The experiment of "How 3 lines of PyTorch made my training ~5x faster"
// is the same training run with the input-pipeline switches off (the
// baseline), each switch alone, and all three together, measured side by
// side in one invocation.
//
// Each run is a child process (the train command itself, so every run
// starts from a clean heap and its peak RSS is its own), and the runs
// alternate round by round so that drift of the machine hits every
// variant alike. The report is a Markdown table, bench.json and bench.csv,
// a chart of time split into waiting for data / copying / computing, and
// each run's timeline (trace-event JSON for Perfetto).
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"stoke/config"
	"stoke/model"
	"stoke/trainer"
)

// Variant is one row of the experiment: the three switches.
type Variant struct {
	Name        string `json:"name"`
	Workers     int    `json:"workers"`
	PinMemory   bool   `json:"pin_memory"`
	NonBlocking bool   `json:"non_blocking"`
}

// Variants are the post's ablation: the baseline, each switch alone, all
// three. workers is the "after" worker count (the post's 8).
func Variants(workers int) []Variant {
	return []Variant{
		{Name: "baseline"},
		{Name: "num_workers", Workers: workers},
		{Name: "pin_memory", PinMemory: true},
		{Name: "non_blocking", NonBlocking: true},
		{Name: "all three", Workers: workers, PinMemory: true, NonBlocking: true},
	}
}

// Result is one variant's measurement (the median over rounds).
type Result struct {
	Variant
	Impl         string  `json:"impl"` // "stoke" or "pytorch"
	Rounds       int     `json:"rounds"`
	TrainSeconds float64 `json:"train_seconds"` // training time over all epochs (evaluation excluded)
	SecPerEpoch  float64 `json:"s_per_epoch"`
	ImgPerSec    float64 `json:"img_per_s"`
	WaitShare    float64 `json:"wait_share"`
	CopyShare    float64 `json:"copy_share"`
	ComputeShare float64 `json:"compute_share"`
	DeviceBusy   float64 `json:"device_busy"` // share of training time the device computes
	FinalLoss    float64 `json:"final_loss"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	Speedup      float64 `json:"speedup"` // baseline's train time / this one's, same implementation
	Trace        string  `json:"trace,omitempty"`
	Note         string  `json:"note,omitempty"`
	// How busy the machine was during the run (Load): the run's own CPU
	// time (its process and theirs it waited for, start-up and evaluation
	// included), other processes' cores, and why it was too busy to trust.
	CPUSeconds  float64 `json:"cpu_seconds"`
	OthersCores float64 `json:"others_cores"`
	Busy        string  `json:"busy,omitempty"`
	// The PyTorch rows' library and kernels (scripts/bench_machine_pytorch.py),
	// and why PyTorch was not at its best, when it was not.
	BLAS          string   `json:"blas_kind,omitempty"`
	OpenBLASCore  string   `json:"openblas_core,omitempty"`
	CPUCapability string   `json:"cpu_capability,omitempty"`
	NotAtBest     []string `json:"not_at_best,omitempty"`
	// GPU is what a training step cost the host on --device cuda, counted
	// at the driver calls: the run's metrics.jsonl "gpu" records, averaged
	// over its epochs (each has the same steps). nil on the CPU and for
	// PyTorch.
	GPU *trainer.GPUCounters `json:"gpu,omitempty"`
}

// Options say what to run.
type Options struct {
	Config  string    // config file of the experiment
	Epochs  int       // 0 = the config's
	Device  string    // cpu or cuda; "" = the config's
	Workers int       // the "after" worker count
	Rounds  int       // runs of each variant, alternating
	Out     string    // report folder
	Exe     string    // the train binary to run for each variant
	Extra   []string  // more flags for every run (e.g. --data DIR)
	Log     io.Writer // progress lines
	// PyTorch, when set, is the command (python and script) that runs the
	// same experiment in PyTorch; see scripts/blog_pytorch.py. It gets
	// --spec JSON (Spec) and prints one JSON Result per variant.
	PyTorch []string
	// Spec is the experiment as the PyTorch anchor needs it.
	Spec Spec
}

// Spec is the experiment's settings for an implementation that does not
// read stoke's config: dataset folder, transforms, model, optimizer.
type Spec struct {
	Data      string           `json:"data"`
	ImageSize int              `json:"image_size"`
	BatchSize int              `json:"batch_size"`
	Prefetch  int              `json:"prefetch"`
	Epochs    int              `json:"epochs"`
	Workers   int              `json:"workers"`
	Device    string           `json:"device"`
	Seed      uint64           `json:"seed"`
	Augment   config.Augment   `json:"augment"`
	Conv      []model.ConvSpec `json:"conv"`
	Optim     config.Optim     `json:"optim"`
	Variants  []Variant        `json:"variants"`
}

// Report is everything a bench invocation measured.
type Report struct {
	Config   string    `json:"config"`
	Device   string    `json:"device"`
	Epochs   int       `json:"epochs"`
	Rounds   int       `json:"rounds"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Results  []Result  `json:"results"`
	Runs     []Result  `json:"runs"` // every single run, in the order they ran
	Machine  Machine   `json:"machine"`
	Load     Load      `json:"load"`               // over the whole bench
	Warnings []string  `json:"warnings,omitempty"` // a busy machine, PyTorch not at its best
}

// Run measures every variant Rounds times, alternating, and writes the
// report files into opt.Out.
func Run(ctx context.Context, opt Options) (*Report, error) {
	if opt.Rounds < 1 {
		return nil, errors.New("bench: --rounds must be at least 1")
	}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	rep := &Report{Config: opt.Config, Device: opt.Device, Epochs: opt.Epochs, Rounds: opt.Rounds, Started: time.Now(),
		Machine: ThisMachine()}
	fmt.Fprintf(opt.Log, "machine: %s\n", rep.Machine)
	if why := BusyBefore(); why != "" {
		rep.warn(opt.Log, "the machine is busy: "+why)
	}
	meter := startLoad()
	variants := Variants(opt.Workers)
	byName := map[string][]Result{}
	for round := 1; round <= opt.Rounds; round++ {
		for _, v := range variants {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, err := runStoke(ctx, opt, v, round)
			if err != nil {
				return nil, fmt.Errorf("bench: %s, round %d: %w", v.Name, round, err)
			}
			fmt.Fprintf(opt.Log, "round %d/%d  %-13s %6.1fs  %6.0f img/s  wait %3.0f%%  compute %3.0f%%  CPU %5.1fs  others %.2f cores%s\n",
				round, opt.Rounds, v.Name, r.TrainSeconds, r.ImgPerSec, 100*r.WaitShare, 100*r.ComputeShare, r.CPUSeconds, r.OthersCores, gpuLine(r.GPU))
			if r.Busy != "" {
				rep.warn(opt.Log, fmt.Sprintf("round %d, stoke %s: the machine was busy: %s", round, v.Name, r.Busy))
			}
			rep.Runs = append(rep.Runs, r)
			byName[v.Name] = append(byName[v.Name], r)
		}
		if len(opt.PyTorch) > 0 {
			rep.pytorchRound(ctx, opt, round, byName)
		}
	}
	rep.Results = medians(variants, byName)
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.Load = meter.stop()
	return rep, rep.write(opt.Out)
}

// pytorchRound runs round's PyTorch runs (runPyTorch), logs and records
// each in rep and under "pytorch NAME" in byName, and warns of a busy
// machine and, in round 1, of a PyTorch not at its best. A round PyTorch
// could not run is logged as skipped, not an error.
func (rep *Report) pytorchRound(ctx context.Context, opt Options, round int, byName map[string][]Result) {
	fmt.Fprintf(opt.Log, "round %d/%d  pytorch: baseline and all three, each in its own process, a line per epoch\n", round, opt.Rounds)
	rs, err := runPyTorch(ctx, opt, round)
	if err != nil {
		fmt.Fprintf(opt.Log, "round %d/%d  pytorch: skipped: %v\n", round, opt.Rounds, err)
	}
	for _, r := range rs {
		fmt.Fprintf(opt.Log, "round %d/%d  pytorch %-13s %6.1fs  %6.0f img/s  CPU %5.1fs  others %.2f cores\n",
			round, opt.Rounds, r.Name, r.TrainSeconds, r.ImgPerSec, r.CPUSeconds, r.OthersCores)
		if round == 1 && r.Name == "baseline" {
			fmt.Fprintf(opt.Log, "PyTorch: BLAS %s %s, CPU capability %s\n", r.BLAS, r.OpenBLASCore, r.CPUCapability)
			for _, w := range r.NotAtBest {
				rep.warn(opt.Log, "PyTorch is not at its best: "+w+"; its rows understate it")
			}
		}
		if r.Busy != "" {
			rep.warn(opt.Log, fmt.Sprintf("round %d, pytorch %s: the machine was busy: %s", round, r.Name, r.Busy))
		}
		rep.Runs = append(rep.Runs, r)
		byName["pytorch "+r.Name] = append(byName["pytorch "+r.Name], r)
	}
}

// medians is the report's results: the median run of each variant, stoke's
// then PyTorch's, each with its speedup over the same implementation's
// baseline.
func medians(variants []Variant, byName map[string][]Result) []Result {
	var results []Result
	for _, impl := range []string{"stoke", "pytorch"} {
		var base float64
		for _, v := range variants {
			key := v.Name
			if impl == "pytorch" {
				key = "pytorch " + v.Name
			}
			runs := byName[key]
			if len(runs) == 0 {
				continue
			}
			m := median(runs)
			if v.Name == "baseline" {
				base = m.TrainSeconds
			}
			if base > 0 && m.TrainSeconds > 0 {
				m.Speedup = base / m.TrainSeconds
			}
			results = append(results, m)
		}
	}
	return results
}

// warn records a warning in the report and says it at once.
func (rep *Report) warn(log io.Writer, w string) {
	rep.Warnings = append(rep.Warnings, w)
	fmt.Fprintf(log, "WARNING: %s\n", w)
}

// runStoke runs one variant as a child train process and reads its
// metrics.jsonl.
func runStoke(ctx context.Context, opt Options, v Variant, round int) (Result, error) {
	dir := filepath.Join(opt.Out, "runs", fmt.Sprintf("%s-r%d", slug(v.Name), round))
	if err := os.RemoveAll(dir); err != nil {
		return Result{}, err
	}
	args := []string{"--config", opt.Config, "--out", dir,
		"--workers", fmt.Sprint(v.Workers),
		fmt.Sprintf("--pin-memory=%t", v.PinMemory), fmt.Sprintf("--non-blocking=%t", v.NonBlocking),
		"--train.trace", "trace.json", "--train.progress", "none"}
	if opt.Epochs > 0 {
		args = append(args, "--epochs", fmt.Sprint(opt.Epochs))
	}
	if opt.Device != "" {
		args = append(args, "--device", opt.Device)
	}
	args = append(args, opt.Extra...)
	cmd := exec.CommandContext(ctx, opt.Exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	meter := startLoad()
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("%v\n%s", err, tail(out.String(), 2000))
	}
	load := meter.stop()
	r, err := readMetrics(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return Result{}, err
	}
	r.Variant, r.Impl, r.Rounds = v, "stoke", 1
	// No cores asked for: a 0-worker run loads on one core by design.
	r.CPUSeconds, r.OthersCores, r.Busy = load.CPUSeconds, load.OthersCores, load.Busy(0)
	r.Trace = filepath.Join(dir, "trace.json")
	ran, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		return Result{}, err
	}
	if ran.Train.Device != "cuda" && (v.PinMemory || v.NonBlocking) && v.Workers == 0 {
		r.Note = "no GPU: this switch cannot act on the cpu"
	}
	if strings.Contains(out.String(), "device: stoke cudasim") { // scripts/gpu-sim.sh
		r.Note = "CPU stand-in for the GPU (cudasim): host timings, not GPU figures"
	}
	return r, nil
}

// readMetrics sums a run's metrics.jsonl into one Result.
func readMetrics(path string) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	var r Result
	var images, epochs float64
	var wait, cp, compute float64
	var gpu trainer.GPUCounters
	gpuEpochs := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m struct {
			TrainLoss    float64              `json:"train_loss"`
			ImgPerSec    float64              `json:"img_per_s"`
			WaitShare    float64              `json:"wait_share"`
			CopyShare    float64              `json:"copy_share"`
			ComputeShare float64              `json:"compute_share"`
			TrainSeconds float64              `json:"train_seconds"`
			PeakRSS      int64                `json:"peak_rss_bytes"`
			GPU          *trainer.GPUCounters `json:"gpu"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return Result{}, fmt.Errorf("%s: %v", path, err)
		}
		epochs++
		r.TrainSeconds += m.TrainSeconds
		images += m.ImgPerSec * m.TrainSeconds
		wait += m.WaitShare * m.TrainSeconds
		cp += m.CopyShare * m.TrainSeconds
		compute += m.ComputeShare * m.TrainSeconds
		r.FinalLoss = m.TrainLoss
		r.PeakRSSBytes = max(r.PeakRSSBytes, m.PeakRSS)
		if g := m.GPU; g != nil {
			gpu.Graph = g.Graph && (gpuEpochs == 0 || gpu.Graph) // every epoch a graph
			gpuEpochs++
			addGPU(&gpu, g, 1)
		}
	}
	if epochs == 0 || r.TrainSeconds == 0 {
		return Result{}, fmt.Errorf("%s: no epochs recorded", path)
	}
	r.SecPerEpoch = r.TrainSeconds / epochs
	r.ImgPerSec = images / r.TrainSeconds
	r.WaitShare, r.CopyShare, r.ComputeShare = wait/r.TrainSeconds, cp/r.TrainSeconds, compute/r.TrainSeconds
	r.DeviceBusy = r.ComputeShare
	if gpuEpochs > 0 {
		if gpuEpochs != int(epochs) {
			return Result{}, fmt.Errorf("%s: %d of %d epochs have gpu counters", path, gpuEpochs, int(epochs))
		}
		r.GPU = &trainer.GPUCounters{Graph: gpu.Graph}
		addGPU(r.GPU, &gpu, 1/epochs)
	}
	return r, sc.Err()
}

// runPyTorch runs the PyTorch anchor once; it prints one JSON object per
// variant on stdout.
func runPyTorch(ctx context.Context, opt Options, round int) ([]Result, error) {
	spec := opt.Spec
	spec.Variants = []Variant{Variants(opt.Workers)[0], Variants(opt.Workers)[4]} // before and after
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	args := append(append([]string(nil), opt.PyTorch[1:]...), "--spec", string(js))
	cmd := exec.CommandContext(ctx, opt.PyTorch[0], args...)
	cmd.Env = TorchEnv(os.Environ())
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(&stderr, opt.Log) // its per-epoch progress lines
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, tail(stderr.String(), 2000))
	}
	var rs []Result
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return rs, fmt.Errorf("pytorch output %q: %v", line, err)
		}
		r.Impl, r.Rounds = "pytorch", 1
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("no results from %v\n%s", opt.PyTorch, tail(stderr.String(), 2000))
	}
	return rs, nil
}

// TorchEnv is env for a PyTorch process at its best on this machine (as
// scripts/bench-env.sh's torch_env): OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
// dropped, so that OpenBLAS detects the core itself (these machines set
// Haswell, which leaves AVX-512 unused), and glibc's malloc told to keep
// freed memory (as installed it gives PyTorch's freed tensors back to the
// system, and every step pays the first-touch page faults again). Where
// that detection falls back to a generic core on this CPU (OpenBLAS 0.3.21
// on an Intel Xeon of family 6 model 207: Prescott, SSE3 kernels),
// scripts/bench-env.sh's torch_best exports TORCH_OPENBLAS_CORE, the
// widest core type the CPU allows, and the process gets it as
// OPENBLAS_CORETYPE.
func TorchEnv(env []string) []string {
	drop := []string{"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}
	var out []string
	core := ""
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "TORCH_OPENBLAS_CORE" {
			core = v
		}
		if !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	if core != "" {
		out = append(out, "OPENBLAS_CORETYPE="+core)
	}
	return append(out, "MALLOC_MMAP_THRESHOLD_=4294967296", "MALLOC_TRIM_THRESHOLD_=68719476736")
}

// median is a variant's result over its runs: the run of median training
// time (for an even count, the two middle runs together), with img/s, the
// time shares and s/epoch computed from those same runs' images and
// seconds, so that a row's img/s and its speedup (a ratio of times) always
// agree. Taking each field's median on its own averaged rates with two
// rounds, and a row could show more img/s than the baseline and a speedup
// below 1.
func median(runs []Result) Result {
	sorted := slices.Clone(runs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].TrainSeconds < sorted[j].TrainSeconds })
	n := len(sorted)
	mid := sorted[(n-1)/2 : n/2+1] // one run, or the two middle ones
	m := mid[0]
	m.Rounds = n
	var secs, images, epochs, wait, cp, compute, busy, loss float64
	var gpu *trainer.GPUCounters
	if mid[0].GPU != nil {
		gpu = &trainer.GPUCounters{Graph: true}
	}
	for _, r := range mid {
		if gpu != nil && r.GPU != nil {
			addGPU(gpu, r.GPU, 1/float64(len(mid)))
			gpu.Graph = gpu.Graph && r.GPU.Graph
		}
		secs += r.TrainSeconds
		images += r.ImgPerSec * r.TrainSeconds
		if r.SecPerEpoch > 0 {
			epochs += r.TrainSeconds / r.SecPerEpoch
		}
		wait += r.WaitShare * r.TrainSeconds
		cp += r.CopyShare * r.TrainSeconds
		compute += r.ComputeShare * r.TrainSeconds
		busy += r.DeviceBusy * r.TrainSeconds
		loss += r.FinalLoss
	}
	k := float64(len(mid))
	m.GPU = gpu
	m.TrainSeconds = secs / k
	m.FinalLoss = loss / k
	if secs > 0 {
		m.ImgPerSec = images / secs
		m.WaitShare, m.CopyShare, m.ComputeShare, m.DeviceBusy = wait/secs, cp/secs, compute/secs, busy/secs
	}
	if epochs > 0 {
		m.SecPerEpoch = secs / epochs
	}
	peaks := make([]int64, n)
	for i, r := range runs {
		peaks[i] = r.PeakRSSBytes
	}
	slices.Sort(peaks)
	m.PeakRSSBytes = peaks[n/2]
	return m
}

// addGPU adds w times g's per-step counts to sum (Graph is the caller's).
func addGPU(sum, g *trainer.GPUCounters, w float64) {
	sum.LaunchesPerStep += w * g.LaunchesPerStep
	sum.HostSyncsPerStep += w * g.HostSyncsPerStep
	sum.AllocsPerStep += w * g.AllocsPerStep
	sum.H2DBytesPerStep += w * g.H2DBytesPerStep
	sum.D2HBytesPerStep += w * g.D2HBytesPerStep
}

// gpuLine is a round's log line's tail for a run's driver counters ("" for
// none).
func gpuLine(g *trainer.GPUCounters) string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf("  per step: %.1f launches, %.2f host syncs, %.2f allocs, graph %t", g.LaunchesPerStep, g.HostSyncsPerStep, g.AllocsPerStep, g.Graph)
}

func slug(s string) string { return strings.ReplaceAll(s, " ", "_") }

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
