package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchStepPrecision: `train bench-step --precision bf16` times the
// step at bf16 and says so; an unknown precision is refused naming the
// choices, before anything runs.
func TestBenchStepPrecision(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench-step", "--precision", "bf16", "--steps", "1", "--warmup", "0", "--threads", "1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), ", precision bf16\n") {
		t.Errorf("the header does not say bf16:\n%s", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"bench-step", "--precision", "fp16"}, &stdout, &stderr); code != 2 {
		t.Errorf("--precision fp16: exit %d, want 2", code)
	}
	if want := `train.precision: must be fp32, tf32 or bf16, got "fp16"`; !strings.Contains(stderr.String(), want) || stdout.Len() > 0 {
		t.Errorf("--precision fp16: stderr %q, want %q (stdout empty: %q)", stderr.String(), want, stdout.String())
	}
}
