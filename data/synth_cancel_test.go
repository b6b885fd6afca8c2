package data

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestGenerateStopsWhenCancelled: a cancelled generation stops within a
// fraction of a second and leaves nothing behind, neither the dataset nor
// its temporary folder (it used to run to the end: 31 s for the quickstart's).
func TestGenerateStopsWhenCancelled(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ds")
	ctx, cancel := context.WithCancel(context.Background())
	opt := SynthOptions{Classes: 10, Train: 2000, Val: 100, Size: 64, Seed: 1} // minutes of work
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err := GenerateContext(ctx, dir, opt)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if took > time.Second {
		t.Errorf("took %v to stop after a cancel at 100 ms", took)
	}
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
	// EnsureSynthetic passes the cancel on.
	if _, err := EnsureSyntheticContext(ctx, dir, opt); !errors.Is(err, context.Canceled) {
		t.Errorf("EnsureSyntheticContext on a cancelled context: %v", err)
	}
}

// TestGenerateRemovesStalePartials: temporary folders that killed
// generations left behind (a second Ctrl-C exits at once) are removed by
// the next generation; one of a generation still running is kept.
func TestGenerateRemovesStalePartials(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ds")
	stale := []string{
		".ds.partial-1234567",          // the old form: no process ID
		".ds.partial-2147483646-98765", // a process that does not exist
	}
	live := ".ds.partial-" + strconv.Itoa(os.Getpid()) + "-1" // this process: still generating
	other := ".other.partial-1234567"                         // another dataset's
	for _, name := range append(stale, live, other) {
		if err := os.MkdirAll(filepath.Join(parent, name, "train", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Generate(dir, SynthOptions{Classes: 2, Train: 1, Val: 1, Size: 16, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		if _, err := os.Stat(filepath.Join(parent, name)); err == nil {
			t.Errorf("%s was not removed", name)
		}
	}
	for _, name := range []string{live, other, "ds"} {
		if _, err := os.Stat(filepath.Join(parent, name)); err != nil {
			t.Errorf("%s: %v; it should be kept", name, err)
		}
	}
}
