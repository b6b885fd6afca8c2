package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSignalsTogetherCountOnce: signals within signalWindow of the first are
// one request; one after it exits at once.
func TestSignalsTogetherCountOnce(t *testing.T) {
	sig := make(chan os.Signal, 4)
	var exits atomic.Int32
	var stderr syncBuffer
	ctx, cancel := watchSignals(sig, &stderr, func() { exits.Add(1) })
	defer cancel()
	sig <- syscall.SIGTERM
	sig <- syscall.SIGTERM // GNU timeout: the child, then its process group
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the first signal did not cancel the context")
	}
	time.Sleep(signalWindow / 2)
	if n := exits.Load(); n != 0 {
		t.Fatalf("two signals within %v exited at once", signalWindow)
	}
	time.Sleep(signalWindow)
	sig <- syscall.SIGINT // a person's second Ctrl-C
	deadline := time.Now().Add(time.Second)
	for exits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if exits.Load() != 1 {
		t.Fatal("a second signal after the window did not exit at once")
	}
	close(sig)
	if !strings.Contains(stderr.String(), "terminated: stopping at the next clean point") || !strings.Contains(stderr.String(), "exiting now") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) lock() {
	if b.mu == nil {
		b.mu = make(chan struct{}, 1)
	}
	b.mu <- struct{}{}
}
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string { b.lock(); defer func() { <-b.mu }(); return b.buf.String() }

// startAtFirstStep starts a run in a child process and returns once it
// prints its first progress line (steps are running).
func startAtFirstStep(t *testing.T, args []string) (proc *os.Process, wait func(time.Duration) (int, string)) {
	t.Helper()
	cmd := command(args...)
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
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
	return cmd.Process, func(d time.Duration) (int, string) {
		code := exitCode(waitWithin(t, cmd, d))
		return code, stderr.String()
	}
}

// TestDoubledSignalStillCheckpoints: one SIGTERM delivered twice (GNU
// timeout signals the child, then its group) stops the run with its
// checkpoint, every time (1 in 5 to 1 in 20 such runs exited without it);
// SIGHUP (a closed terminal) does the same as SIGTERM. The second signal
// comes a few ms after the first: sent back to back, the kernel merges
// two of a kind into one.
func TestDoubledSignalStillCheckpoints(t *testing.T) {
	for i, tc := range []struct {
		sigs []syscall.Signal
		gap  time.Duration
	}{
		{[]syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 0},
		{[]syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 2 * time.Millisecond},
		{[]syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 5 * time.Millisecond},
		{[]syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, 50 * time.Millisecond},
		{[]syscall.Signal{syscall.SIGINT, syscall.SIGTERM}, 2 * time.Millisecond},
		{[]syscall.Signal{syscall.SIGHUP}, 0},
	} {
		args, runDir := smallArgs(t, "--epochs", "50")
		proc, wait := startAtFirstStep(t, args)
		for k, s := range tc.sigs {
			if k > 0 {
				time.Sleep(tc.gap)
			}
			proc.Signal(s)
		}
		code, stderr := wait(30 * time.Second)
		if code != 130 || !strings.Contains(stderr, "saved in checkpoint") || strings.Contains(stderr, "exiting now") {
			t.Fatalf("run %d, signals %v %v apart: exit %d, stderr:\n%s", i, tc.sigs, tc.gap, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(runDir, "latest.json")); err != nil {
			t.Fatalf("run %d, signals %v: no checkpoint: %v", i, tc.sigs, err)
		}
	}
}

// TestInterruptDuringSetUpStopsAndCleansUp: a signal while the dataset is
// being generated stops the run within a second and leaves neither the
// half-made dataset (nor its temporary folder) nor a run folder (the
// generation used to run to its end, 31 s, after "stopping at the next
// clean point").
func TestInterruptDuringSetUpStopsAndCleansUp(t *testing.T) {
	cache, runDir := t.TempDir(), filepath.Join(t.TempDir(), "run")
	cmd := command("--data.cache_dir", cache, "--out", runDir, "--data.synthetic.train", "3000", "--data.synthetic.size", "96")
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "generating the synthetic dataset") {
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	time.Sleep(300 * time.Millisecond) // well into the generation
	cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	code := exitCode(waitWithin(t, cmd, 30*time.Second))
	took := time.Since(sent)
	if code != 130 || !strings.Contains(stderr.String(), "interrupted before the first step; nothing to keep") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if took > time.Second {
		t.Errorf("stopped %v after the signal, want under a second", took)
	}
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		t.Errorf("left in the cache folder: %s", e.Name())
	}
	if _, err := os.Stat(runDir); err == nil {
		t.Errorf("the run folder %s was left behind", runDir)
	}
}

// TestGenDataInterruptLeavesNothing: gen-data stops at a signal and leaves
// neither the dataset nor its temporary folder.
func TestGenDataInterruptLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	cmd := command("gen-data", "--out", filepath.Join(parent, "ds"), "--classes", "10", "--train", "3000", "--size", "96")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	sent := time.Now()
	code := exitCode(waitWithin(t, cmd, 30*time.Second))
	if code != 130 || !strings.Contains(stderr.String(), "nothing written") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if took := time.Since(sent); took > time.Second {
		t.Errorf("stopped %v after the signal", took)
	}
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}
