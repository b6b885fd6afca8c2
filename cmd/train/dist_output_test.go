//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMPIRanksPrintPlainLines: under mpirun (which gives each rank a pty,
// also when its own output is a pipe, as here) the default progress is
// plain lines: no carriage returns or escape codes in the job's output.
func TestMPIRanksPrintPlainLines(t *testing.T) {
	mpirunCmd(t, 2) // skips without mpirun or under -race
	root, err := smallDataset()
	if err != nil {
		t.Fatal(err)
	}
	out := runOrFail(t, mpirunCmd(t, 2, "--data", root, "--out", filepath.Join(t.TempDir(), "run"), "--image-size", "16", "--batch-size", "4",
		"--model.conv", "[{channels: 4, kernel: 3, pool: true}]", "--epochs", "1", "--train.dist", "mpi"))
	if strings.ContainsAny(out, "\r\033") {
		t.Fatalf("carriage returns or escape codes in a 2-rank job's output:\n%q", out)
	}
	if !strings.Contains(out, "epoch 1/1  train loss") {
		t.Fatalf("no epoch line:\n%s", out)
	}
}

// TestMPIRankFailureIsNamed: when rank 0 fails before training (its run
// folder holds another run), the job's output names that reason, and the
// other rank, ended by mpirun, does not claim to stop at a clean point.
func TestMPIRankFailureIsNamed(t *testing.T) {
	mpirunCmd(t, 2) // skips without mpirun or under -race
	run := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "config.yaml"), []byte("data: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := mpirunCmd(t, 2, quickArgs(t, run, "--batch-size", "32", "--train.dist", "mpi")...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the job on a used run folder exited 0:\n%s", out)
	}
	if !strings.Contains(string(out), "rank 0 of 2: run folder") || !strings.Contains(string(out), "already holds a run") {
		t.Fatalf("want rank 0's reason named:\n%s", out)
	}
	if strings.Contains(string(out), "stopping at the next clean point") {
		t.Fatalf("a rank ended by mpirun claims to stop at a clean point:\n%s", out)
	}
}
