package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLargeResNet152IsRefusedBeforeAnyWork: a resnet152 at 224 px in
// batches of 32768 (15 TiB of activations, by the memory estimate's count
// of its Bottlenecks) is refused before anything is built, generated or
// written (no run folder, no dataset), with exit 2, the estimate and the
// machine's limit.
func TestLargeResNet152IsRefusedBeforeAnyWork(t *testing.T) {
	dir := t.TempDir()
	out, cache := filepath.Join(dir, "run"), filepath.Join(dir, "cache")
	cmd := command("--model.arch", "resnet152", "--image-size", "224", "--batch-size", "32768",
		"--out", out, "--data.cache_dir", cache)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := waitWithin(t, cmd, 60*time.Second)
	if code := exitCode(err); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
	}
	for _, w := range []string{"needs about", "TiB", "more than this machine's", "activations", "data.batch_size"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	for _, p := range []string{out, cache} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was made before the refusal", p)
		}
	}
	t.Logf("%s", strings.TrimSpace(stderr.String()))
}
