package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// weightsOf reads the bytes of a run's latest model.safetensors.
func weightsOf(t *testing.T, run string) []byte {
	t.Helper()
	var l struct{ Checkpoint string }
	b, err := os.ReadFile(filepath.Join(run, "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &l)
	w, err := os.ReadFile(filepath.Join(run, l.Checkpoint, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// metricsOf reads what of metrics.jsonl must not depend on timing.
func metricsOf(t *testing.T, run string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Epoch                                     int
			TrainLoss, TrainAcc, ValLoss, ValTop1, LR float64
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%+v", m))
	}
	return out
}

// TestPrintedResumeCommandContinuesExactly interrupts a run of non-default
// settings and runs the resume command it prints, exactly as printed, from
// another folder: the run must go on in its own folder with its own
// settings and end bit-identical to a run never interrupted.
func TestPrintedResumeCommandContinuesExactly(t *testing.T) {
	args, uninterrupted := smallArgs(t, "--epochs", "3", "--lr", "0.05", "--seed", "3")
	if out, err := command(args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	args, runDir := smallArgs(t, "--epochs", "3", "--lr", "0.05", "--seed", "3")
	cmd := command(args...)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "epoch 2/3 step ") {
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if code := exitCode(waitWithin(t, cmd, time.Minute)); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130; stderr:\n%s", code, stderr.String())
	}
	m := regexp.MustCompile(`continue with (.*)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no resume command printed:\n%s", stderr.String())
	}
	printed := strings.Fields(m[1])
	elsewhere := t.TempDir() // where runs/quickstart would land, were the defaults used
	resume := command(printed...)
	resume.Dir = elsewhere
	out, err := resume.CombinedOutput()
	if err != nil {
		t.Fatalf("the printed command %q: %v\n%s", m[1], err, out)
	}
	if !strings.Contains(string(out), "resumed from "+runDir) || !strings.Contains(string(out), "epoch 3/3") {
		t.Errorf("the resumed run's output:\n%s", out)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("the resume wrote into the folder it ran in: %v", entries)
	}
	if !bytes.Equal(weightsOf(t, runDir), weightsOf(t, uninterrupted)) {
		t.Error("the resumed run's weights differ from the uninterrupted run's")
	}
	got, want := metricsOf(t, runDir), metricsOf(t, uninterrupted)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("metrics after resume:\n%s\nuninterrupted:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// As the README says: --resume RUN --epochs N continues the run longer,
	// saying so once.
	more := command("--resume", runDir, "--epochs", "4")
	more.Dir = elsewhere
	out, err = more.CombinedOutput()
	if err != nil || strings.Count(string(out), "train.epochs changed from 3 to 4") != 1 || !strings.Contains(string(out), "epoch 4/4") {
		t.Errorf("--resume RUN --epochs 4: %v\n%s", err, out)
	}
	if n := len(metricsOf(t, runDir)); n != 4 {
		t.Errorf("metrics.jsonl has %d epochs after --epochs 4", n)
	}
}

// TestResumeRefusesEveryChangedSettingAtOnce: flags and a config file that
// change what a resume may not are all listed in one refusal.
func TestResumeRefusesEveryChangedSettingAtOnce(t *testing.T) {
	args, runDir := smallArgs(t, "--epochs", "1")
	if out, err := command(args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(file, []byte("augment: {hflip: 0}\n"), 0o644)
	var out, errOut bytes.Buffer
	code := run([]string{"--config", file, "--resume", runDir, "--lr", "0.3", "--batch-size", "4", "--seed", "3", "--workers", "0", "--epochs", "2"}, &out, &errOut)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errOut.String())
	}
	for _, want := range []string{
		"optim.lr is 0.05 in the run but 0.3 on the command line",
		"data.batch_size is 16 in the run but 4 on the command line",
		"train.seed is 1 in the run but 3 on the command line",
		"augment.hflip is 0.5 in the run but 0 in " + file,
		"data.image_size is 16 in the run but 32 in " + file,
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errOut.String())
		}
	}
	if strings.Contains(errOut.String(), "data.workers is") || strings.Contains(errOut.String(), "train.epochs is") {
		t.Errorf("the refusal lists a setting a resume may change:\n%s", errOut.String())
	}
}

// TestTwoTrainersOnOneFolder: a second trainer on a folder in use stops at
// once, naming the first one's PID, and leaves the first one's run alone.
func TestTwoTrainersOnOneFolder(t *testing.T) {
	args, _ := smallArgs(t, "--epochs", "1000")
	first := command(args...)
	stdout, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		first.Process.Kill()
		first.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " step ") {
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	second := command(args...)
	var stderr bytes.Buffer
	second.Stderr = &stderr
	second.Stdout = io.Discard
	t0 := time.Now()
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	code := exitCode(waitWithin(t, second, 20*time.Second))
	if code == 0 || !strings.Contains(stderr.String(), fmt.Sprintf("in use by another trainer (PID %d", first.Process.Pid)) {
		t.Errorf("second trainer: exit %d, stderr:\n%s", code, stderr.String())
	}
	t.Logf("the second trainer stopped after %v", time.Since(t0))
}

// TestResumeFromACheckpointFolder: --resume RUN/checkpoints/epoch-0001
// continues RUN from that checkpoint, in RUN, with RUN's settings.
func TestResumeFromACheckpointFolder(t *testing.T) {
	args, runDir := smallArgs(t, "--epochs", "2", "--seed", "4")
	if out, err := command(args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := weightsOf(t, runDir)
	wantMetrics := metricsOf(t, runDir)
	resume := command("--resume", filepath.Join(runDir, "checkpoints", "epoch-0001"))
	resume.Dir = t.TempDir()
	out, err := resume.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "epoch 2/2") {
		t.Fatalf("%v\n%s", err, out)
	}
	if !bytes.Equal(weightsOf(t, runDir), want) {
		t.Error("epoch 2 again from epoch 1's checkpoint gave other weights")
	}
	if got := metricsOf(t, runDir); strings.Join(got, "\n") != strings.Join(wantMetrics, "\n") {
		t.Errorf("metrics:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantMetrics, "\n"))
	}
}
