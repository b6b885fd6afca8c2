package trainer

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestTakeBackRemovesOnlyWhatTheRunWrote: a fresh run that ends before its
// first checkpoint takes back config.yaml and metrics.jsonl, and the folder
// itself when its claim made it; a folder that existed keeps the files it
// held. (This was cmd/train's second runFolder type.)
func TestTakeBackRemovesOnlyWhatTheRunWrote(t *testing.T) {
	base := t.TempDir()
	made := filepath.Join(base, "made")
	rf, err := claimRunFolder(made, false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(made, "config.yaml"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(made, "metrics.jsonl"), nil, 0o644)
	rf.takeBack()
	rf.release()
	if _, err := os.Stat(made); err == nil {
		t.Error("a run folder made by the run was left behind")
	}

	had := filepath.Join(base, "had")
	os.MkdirAll(had, 0o755)
	os.WriteFile(filepath.Join(had, "notes.txt"), []byte("mine"), 0o644)
	if rf, err = claimRunFolder(had, false, io.Discard); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(had, "config.yaml"), []byte("x"), 0o644)
	rf.takeBack()
	rf.release()
	if _, err := os.Stat(filepath.Join(had, "notes.txt")); err != nil {
		t.Errorf("a file the folder held before is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(had, "config.yaml")); err == nil {
		t.Error("config.yaml of the run was left")
	}
}
