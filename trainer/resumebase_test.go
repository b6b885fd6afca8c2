package trainer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeBaseReadsOnlyTheState: ResumeBase takes what it needs (the
// config and the global batch) from the checkpoint's state.json, without
// reading and hashing its tensors, which the trainer reads and checks once,
// when it resumes. So a checkpoint whose weights were damaged still gives
// the per-rank batch of its global batch (it used to fall back to the run's
// config.yaml unchanged), and the resume itself refuses the damage.
func TestResumeBaseReadsOnlyTheState(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	dir, ok := latestCheckpoint(c.Train.Out)
	if !ok {
		t.Fatal("no checkpoint")
	}
	w := filepath.Join(dir, weightsFile)
	b, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(w, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{c.Train.Out, dir} {
		base, run, err := ResumeBase(path, 2)
		if err != nil {
			t.Fatalf("ResumeBase(%s, 2 ranks): %v", path, err)
		}
		if base.Data.BatchSize != c.Data.BatchSize/2 || run != c.Train.Out {
			t.Errorf("ResumeBase(%s, 2 ranks): batch %d, run %s; want %d (the run's %d over 2 ranks), %s", path, base.Data.BatchSize, run, c.Data.BatchSize/2, c.Data.BatchSize, c.Train.Out)
		}
	}
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	if _, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)}); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("resuming from damaged weights: %v, want the SHA-256 refusal", err)
	}
}
