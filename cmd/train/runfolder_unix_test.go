//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResumeAndEvalRefuseAFIFOCheckpoint: a FIFO as the latest
// checkpoint's model.safetensors is refused by --resume and by train eval
// (before, train eval blocked on it, and SIGTERM did not end it).
func TestResumeAndEvalRefuseAFIFOCheckpoint(t *testing.T) {
	args, run := smallArgs(t, "--epochs", "1")
	runOrFail(t, command(args...))
	weights := filepath.Join(run, "checkpoints", "epoch-0001", "model.safetensors")
	os.Remove(weights)
	if err := syscall.Mkfifo(weights, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range [][]string{{"--resume", run, "--epochs", "2"}, {"eval", "--checkpoint", run}} {
		cmd := command(c...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := waitWithin(t, cmd, 2*time.Minute) // a guard against a hang, not a timing
		if exitCode(err) != 1 || !strings.Contains(out.String(), "not a regular file") {
			t.Errorf("%v: exit %d, want 1 naming the FIFO as not a regular file:\n%s", c, exitCode(err), out.String())
		}
	}
}
