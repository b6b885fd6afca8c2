package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"stoke/config"
	"stoke/data"
	"stoke/trace"
)

// TestMain lets the tests run the command in a child process: the test
// binary re-executed with STOKE_TRAIN_MAIN=1 is the train command.
func TestMain(m *testing.M) {
	if os.Getenv("STOKE_TRAIN_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "STOKE_TRAIN_MAIN=1")
	return cmd
}

// runOrFail runs cmd and returns its output, failing the test with it if
// cmd fails.
func runOrFail(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	return string(out)
}

// smallDataset is generated once, by the gen-data command itself.
var smallDataset = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "stoke-cmd-test-")
	if err != nil {
		return "", err
	}
	root := filepath.Join(dir, "ds")
	out, err := command("gen-data", "--out", root, "--classes", "3", "--train", "40", "--val", "8", "--size", "24").CombinedOutput()
	if err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return root, nil
})

func smallArgs(t *testing.T, extra ...string) (args []string, run string) {
	t.Helper()
	root, err := smallDataset()
	if err != nil {
		t.Fatalf("gen-data: %v", err)
	}
	run = filepath.Join(t.TempDir(), "run")
	args = []string{"--data", root, "--out", run, "--image-size", "16", "--batch-size", "16",
		"--model.conv", "[{channels: 8, kernel: 3, pool: true}]", "--train.progress", "plain"}
	return append(args, extra...), run
}

func TestHelpListsEverySetting(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d", code)
	}
	c := config.Default()
	for _, f := range c.Fields() {
		if !strings.Contains(out.String(), "--"+f.Path) {
			t.Errorf("--help does not explain --%s", f.Path)
		}
	}
	for _, short := range []string{"epochs", "batch-size", "workers", "prefetch", "pin-memory", "non-blocking", "device", "data", "out", "seed", "resume"} {
		if !strings.Contains(out.String(), "--"+short+" ") {
			t.Errorf("--help lacks the short flag --%s", short)
		}
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--batchsize=3"}, "did you mean --batch-size?"},
		{[]string{"--epochs=two"}, "train.epochs"},
		{[]string{"--workers=-1"}, "data.workers"},
		{[]string{"--config", "/nonexistent/c.yaml"}, "/nonexistent/c.yaml"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"gen-data"}, "--out is required"},
		{[]string{"gen-data", "--out", "/tmp/x", "--classes", "1"}, "--classes 1: want 2..105"},
		{[]string{"gen-data", "--out", "/tmp/x", "--size", "8"}, "--size 8: want 16..4096 pixels"},
		{[]string{"gen-data", "--out", "/tmp/x", "--quality", "0"}, "--quality 0: want 1..100"},
		{[]string{"gen-data", "--out", "/tmp/x", "--clases", "3"}, "unknown flag --clases (did you mean --classes?)"},
		{[]string{"gen-data", "--out", "/tmp/x", "extra"}, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("train %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestMemoryStaysFlat trains five epochs in a child process and compares the
// peak RSS after epoch 5 with that after epoch 1 (a gorgonia prototype grew
// without bound).
func TestMemoryStaysFlat(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race the detector's own memory grows with every goroutine; .ci/run runs this test without it")
	}
	// With image/jpeg (no libjpeg-turbo) every image is fresh garbage and the
	// heap saws between the live size and twice that, so peak RSS follows the
	// collector's timing (5-20% over the first epochs, then flat; seen on the
	// quickstart), not a leak. The bound below is for the turbo path.
	if name := data.DecoderName(data.DecoderTurbo); strings.HasPrefix(name, "unavailable") {
		t.Skip("libjpeg-turbo is not installed (apt-get install libturbojpeg0): " + name)
	}
	args, runDir := smallArgs(t, "--data.decoder", "turbo", "--epochs", "5", "--image-size", "32", "--batch-size", "32",
		"--model.conv", "[{channels: 16, kernel: 3, pool: true}, {channels: 32, kernel: 3, pool: true}]")
	if out, err := command(args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var peaks []int64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			PeakRSS int64 `json:"peak_rss_bytes"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		peaks = append(peaks, m.PeakRSS)
	}
	if len(peaks) != 5 {
		t.Fatalf("%d epochs in metrics.jsonl, want 5", len(peaks))
	}
	t.Logf("peak RSS after each epoch (MiB): %v", mib(peaks))
	if float64(peaks[4]) > 1.1*float64(peaks[0]) {
		t.Errorf("peak RSS grew from %d MiB after epoch 1 to %d MiB after epoch 5 (more than 10%%)", peaks[0]>>20, peaks[4]>>20)
	}
}

// TestInterruptWritesACheckpointAndResumes sends SIGINT to a real run: it
// must stop at a step boundary, write a checkpoint, say how to resume and
// exit 130; --resume then finishes the run.
func TestInterruptWritesACheckpointAndResumes(t *testing.T) {
	args, runDir := smallArgs(t, "--epochs", "3")
	cmd := command(args...)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the first progress line shows steps are running.
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " step ") {
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	err := waitWithin(t, cmd, time.Minute)
	if code := exitCode(err); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--resume "+runDir) || !strings.Contains(stderr.String(), "saved in checkpoint") {
		t.Errorf("stderr does not say where the checkpoint is and how to resume:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(runDir, "latest.json")); err != nil {
		t.Fatalf("no checkpoint after the interrupt: %v", err)
	}
	out, err := command(append(args, "--resume", runDir)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resumed from") || !strings.Contains(string(out), "epoch 3/3") {
		t.Errorf("resumed run's output:\n%s", out)
	}
}

// TestSecondInterruptExitsAtOnce: two interrupts end the process promptly,
// and whatever checkpoint it leaves is whole.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	args, runDir := smallArgs(t, "--epochs", "50")
	cmd := command(args...)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " step ") {
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(20 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(waitWithin(t, cmd, 30*time.Second)); code != 130 {
		t.Fatalf("exit %d, want 130", code)
	}
	// latest.json, if any, names a complete checkpoint.
	if b, err := os.ReadFile(filepath.Join(runDir, "latest.json")); err == nil {
		var l struct{ Checkpoint string }
		json.Unmarshal(b, &l)
		for _, f := range []string{"model.safetensors", "optimizer.safetensors", "state.json"} {
			if _, err := os.Stat(filepath.Join(runDir, l.Checkpoint, f)); err != nil {
				t.Errorf("latest.json names an incomplete checkpoint: %v", err)
			}
		}
	}
}

func waitWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		t.Fatalf("the run did not end within %v", d)
		return nil
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func mib(v []int64) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = x >> 20
	}
	return out
}

// TestTraceShowsWorkersOverlappingCompute runs with two workers and a
// timeline: the file must be trace-event JSON whose spans nest on each row,
// and loader spans must overlap training steps in time.
func TestTraceShowsWorkersOverlappingCompute(t *testing.T) {
	args, runDir := smallArgs(t, "--epochs", "1", "--workers", "2", "--train.trace", "trace.json")
	if out, err := command(args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f, err := trace.Read(filepath.Join(runDir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ start, end float64 }
	rows := map[int][]span{}
	var loads, steps []span
	for _, e := range f.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		s := span{e.TS, e.TS + e.Dur}
		rows[e.TID] = append(rows[e.TID], s)
		switch e.Cat {
		case "load":
			loads = append(loads, s)
		case "step":
			steps = append(steps, s)
		}
	}
	if len(loads) == 0 || len(steps) == 0 {
		t.Fatalf("%d load and %d step spans", len(loads), len(steps))
	}
	// Spans on one row either nest or follow each other (sorted by start).
	for tid, spans := range rows {
		var open []span
		for _, s := range spans {
			const eps = 0.01 // µs: start+dur is summed in floating point
			for len(open) > 0 && open[len(open)-1].end <= s.start+eps {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && s.end > open[len(open)-1].end+eps {
				t.Fatalf("row %d: span %v overlaps %v without nesting", tid, s, open[len(open)-1])
			}
			open = append(open, s)
		}
	}
	overlap := false
	for _, l := range loads {
		for _, s := range steps {
			if l.start < s.end && s.start < l.end {
				overlap = true
			}
		}
	}
	if !overlap {
		t.Error("no loader span overlaps a training step: the workers did not load ahead")
	}
}

// TestBenchWritesTheReport runs `train bench` on the small dataset, one
// epoch and one round, without PyTorch: every report file must appear, the
// JSON must hold the five variants, and each run's timeline must parse.
func TestBenchWritesTheReport(t *testing.T) {
	root, err := smallDataset()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bench.yaml")
	os.WriteFile(cfg, []byte("data: {image_size: 16, batch_size: 16}\nmodel: {conv: [{channels: 4, kernel: 3, pool: true}]}\ntrain: {epochs: 1}\n"), 0o644)
	out := filepath.Join(dir, "report")
	cmd := command("bench", "--config", cfg, "--data", root, "--rounds", "1", "--workers", "2", "--out", out, "--python", "")
	text, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	for _, f := range []string{"bench.md", "bench.json", "bench.csv", "chart.png", "chart.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	var rep struct {
		Results []struct {
			Name         string  `json:"name"`
			Speedup      float64 `json:"speedup"`
			TrainSeconds float64 `json:"train_seconds"`
			Trace        string  `json:"trace"`
			Note         string  `json:"note"`
		} `json:"results"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "bench.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 5 || rep.Results[0].Name != "baseline" || rep.Results[0].Speedup != 1 {
		t.Fatalf("results %+v, want the five variants with the baseline first at 1x", rep.Results)
	}
	for _, r := range rep.Results {
		if r.TrainSeconds <= 0 || r.Speedup <= 0 {
			t.Errorf("%s: train %vs speedup %v", r.Name, r.TrainSeconds, r.Speedup)
		}
		if _, err := trace.Read(r.Trace); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
	if rep.Results[2].Note == "" || !strings.Contains(string(text), "| baseline |") {
		t.Errorf("the cpu's pin_memory row should say the switch cannot act; output:\n%s", text)
	}
}
