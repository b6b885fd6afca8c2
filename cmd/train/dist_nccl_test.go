package main

import (
	"strings"
	"testing"
)

// TestNCCLRefusedOnOneProcess: train.dist nccl stops before any work on
// one process too, naming the way out (before: it trained over MPI without
// a word, where docs/distributed.md said it stops).
func TestNCCLRefusedOnOneProcess(t *testing.T) {
	args, run := smallArgs(t, "--epochs", "1", "--train.dist", "nccl")
	b, err := command(args...).CombinedOutput()
	out := string(b)
	if err == nil || !strings.Contains(out, "train.dist nccl is refused") || !strings.Contains(out, "use train.dist mpi") {
		t.Fatalf("train.dist nccl on one process: %v\n%s", err, out)
	}
	if strings.Contains(out, "epoch 1/1") {
		t.Errorf("it trained:\n%s", out)
	}
	_ = run
}
