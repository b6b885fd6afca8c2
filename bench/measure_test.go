package bench

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"stoke/config"
	"stoke/data"
	"stoke/gemm"
	"stoke/model"
)

// TestStepLineIsTheMapItReplaced: bench-step's JSON line is, byte for
// byte, the map it was written from before (keys in sorted order), which
// scripts/bench-step.sh splits and reads.
func TestStepLineIsTheMapItReplaced(t *testing.T) {
	l := StepLine{Threads: 2, MSPerStep: 12.5, ImgPerS: 5120, PeakRSSBytes: 1 << 26, BestMS: 11.25, CPUMSPerStep: 24.75, Gemm: "gemm: x",
		Busy: "b", CPU: "c", CPUFamily: 26, CPUModel: 2, Load1Before: 0.5, OthersCores: 0.25, SIMD: []string{"avx2"}}
	got, _ := json.Marshal(l)
	want, _ := json.Marshal(map[string]any{"threads": 2, "ms_per_step": 12.5, "img_per_s": 5120.0, "peak_rss_bytes": int64(1 << 26),
		"best_ms": 11.25, "cpu_ms_per_step": 24.75, "gemm": "gemm: x",
		"busy": "b", "cpu": "c", "cpu_family": 26, "cpu_model": 2, "load1_before": 0.5, "others_cores": 0.25, "simd": []string{"avx2"}})
	if string(got) != string(want) {
		t.Errorf("StepLine marshals to\n%s\nwant\n%s", got, want)
	}
}

// TestDataLineFlattensTheStages: bench-data's JSON line has the stage
// costs beside the rate, in the order scripts and notes have seen.
func TestDataLineFlattensTheStages(t *testing.T) {
	b, _ := json.Marshal(DataLine{Workers: 1, ImageSize: 64, ImgPerS: 10, DType: "uint8", Decoder: "d",
		Stages:  StageCosts{Clock: "c", Read: 1, Decode: 2, CropResize: 3, Jitter: 4, Collate: 5, Loader: 15},
		Machine: DataMachine{CPU: "m", CPUFamily: 26, CPUModel: 2, Load1Before: 0.5, WallSeconds: 2, CPUSeconds: 1.5, OthersCores: 0.25, Busy: "b"}})
	want := `{"workers":1,"image_size":64,"img_per_s":10,"dtype":"uint8","decoder":"d","stage_clock":"c","read_us":1,"decode_us":2,"crop_resize_us":3,"jitter_us":4,"collate_us":5,"loader_us":15,` +
		`"cpu":"m","cpu_family":26,"cpu_model":2,"load1_before":0.5,"wall_seconds":2,"cpu_seconds":1.5,"others_cores":0.25,"busy":"b"}`
	if string(b) != want {
		t.Errorf("DataLine marshals to\n%s\nwant\n%s", b, want)
	}
}

// smallConfig is a config for a tiny dataset and CNN.
func smallConfig(t *testing.T) config.Config {
	t.Helper()
	root := filepath.Join(t.TempDir(), "ds")
	if err := data.Generate(root, data.SynthOptions{Classes: 2, Train: 10, Val: 2, Size: 32, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Data.Root, cfg.Data.ImageSize, cfg.Data.BatchSize = root, 12, 4
	cfg.Data.Synthetic.Classes = 2
	cfg.Augment.Brightness, cfg.Augment.Contrast, cfg.Augment.Saturation = 0.4, 0.4, 0.4
	cfg.Model.Conv = []model.ConvSpec{{Channels: 4, Kernel: 3, Pool: true}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestDataText: the text report is the header, the per-stage line and one
// line per worker count, each stage measured on the loader's own stages.
func TestDataText(t *testing.T) {
	cfg := smallConfig(t)
	var out bytes.Buffer
	if err := Data(DataOptions{Config: cfg, Workers: []int{0, 2}, Images: 8, DType: data.DTypeFloat32, Stages: true}, &out); err != nil {
		t.Fatal(err)
	}
	var lines []string // less the warnings of a busy machine, which depend on the machine's load
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "WARNING: the machine ") {
			lines = append(lines, l)
		}
	}
	load := `\(load: 1-min [-\d.]+ before, [-\d.]+ after; wall [\d.]+ s, CPU [\d.]+ s; other processes ([\d.]+ cores|unknown)\)`
	want := []string{
		`^bench-data: 20 images in .*/ds/train, 12 px output, batch 4, float32 batches, decoder .*, GOMAXPROCS \d+$`,
		`^machine: .*, \d+ CPUs, SIMD .*; stoke uses .*$`,
		`^per image, one goroutine \((thread CPU time|wall clock)\): read \d+ µs, decode \d+ µs, crop\+resize \d+ µs, jitter \d+ µs, collate \d+ µs; loader at 0 workers \d+ µs$`,
		`^workers 0: +\d+ img/s  ` + load + `$`,
		`^workers 2: +\d+ img/s  ` + load + `$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
}

// TestStepJSON: one JSON line per thread count, with the step timed and,
// on Linux, the peak RSS read.
func TestStepJSON(t *testing.T) {
	cfg := smallConfig(t)
	var out bytes.Buffer
	if err := Step(StepOptions{Config: cfg, Threads: []int{1, 2}, Steps: 2, Warmup: 1, JSON: true}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines:\n%s", out.String())
	}
	for i, line := range lines {
		var l StepLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Threads != i+1 || l.MSPerStep <= 0 || l.BestMS <= 0 || l.BestMS > l.MSPerStep*1.0001 || l.ImgPerS <= 0 || l.Gemm == "" ||
			(runtime.GOOS == "linux" && l.PeakRSSBytes <= 0) {
			t.Errorf("line %d: %+v", i, l)
		}
	}
}

// TestStepNamesTheBF16Path: at train.precision bf16 the JSON line's gemm
// says how the bf16 products run on this machine (the VDPBF16PS kernels,
// or the inputs rounded and the fp32 kernel, and why), not only the fp32
// kernel.
func TestStepNamesTheBF16Path(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Train.Precision = "bf16"
	var out bytes.Buffer
	if err := Step(StepOptions{Config: cfg, Threads: []int{1}, Steps: 1, Warmup: 0, JSON: true}, &out); err != nil {
		t.Fatal(err)
	}
	var l StepLine
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &l); err != nil {
		t.Fatal(err)
	}
	if want := gemm.PrecisionName(gemm.BF16); l.Precision != "bf16" || !strings.Contains(l.Gemm, want) {
		t.Errorf("precision %q, gemm %q: want bf16 and %q", l.Precision, l.Gemm, want)
	}
}

// TestDistMarkdown: a row per run, the 1-rank row without allreduce
// figures, a row not run with its note.
func TestDistMarkdown(t *testing.T) {
	md := DistMarkdown([]DistRow{
		{Ranks: 1, ImgPerSec: 1000.4},
		{Ranks: 2, BucketMB: 25, ImgPerSec: 1500, AllreduceMS: 1.234, ExposedMS: 0.5, OverlapShare: 0.6, Buckets: 1, AloneUS: 300},
		{Ranks: 4, BucketMB: 0.02, Note: "not run: x"},
	})
	want := "| ranks | bucket MB | buckets | train img/s (all ranks) | allreduce ms/step | waited after backward ms/step | overlapped backward | allreduce alone µs |\n|---|---|---|---|---|---|---|---|\n" +
		"| 1 | | | 1000 | | | | |\n" +
		"| 2 | 25 | 1 | 1500 | 1.23 | 0.50 | 60% | 300 |\n" +
		"| 4 | 0.02 | | not run: x | | | | |\n"
	if md != want {
		t.Errorf("table\n%s\nwant\n%s", md, want)
	}
}
