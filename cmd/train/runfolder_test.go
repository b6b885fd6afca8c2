package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartRunsTwice: a second run of a shipped config whose folder
// holds a run goes to the next numbered folder and says so, where it
// stopped with "already holds a run"; a folder named with --out is still
// refused.
func TestQuickstartRunsTwice(t *testing.T) {
	args, _ := smallArgs(t, "--epochs", "1")
	var noOut []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--out" {
			i++
			continue
		}
		noOut = append(noOut, args[i])
	}
	cwd := t.TempDir()
	os.MkdirAll(filepath.Join(cwd, "runs", "quickstart"), 0o755)
	os.WriteFile(filepath.Join(cwd, "runs", "quickstart", "config.yaml"), []byte("# an earlier run\n"), 0o644)
	cmd := command(noOut...)
	cmd.Dir = cwd
	out := runOrFail(t, cmd)
	want := filepath.Join("runs", "quickstart-2")
	if !strings.Contains(out, "this one goes to "+want) {
		t.Errorf("output does not say where the run went:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(cwd, want, "latest.json")); err != nil {
		t.Errorf("no run in %s: %v", want, err)
	}
	named := command(append(noOut, "--out", filepath.Join("runs", "quickstart"))...)
	named.Dir = cwd
	if b, err := named.CombinedOutput(); err == nil || !strings.Contains(string(b), "already holds") {
		t.Errorf("--out naming a used folder: %v\n%s", err, b)
	}
}
