package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenDataSaysWhatItWritesFirst: gen-data names what it is about to write
// before it starts (the README's example takes minutes on a loaded machine
// and said nothing until it was done), then what it wrote.
func TestGenDataSaysWhatItWritesFirst(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := filepath.Join(t.TempDir(), "ds")
	if code := genData([]string{"--out", dir, "--classes", "2", "--train", "2", "--val", "1", "--size", "16"}, &out, &errOut); code != 0 {
		t.Fatalf("gen-data: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "generating 2 classes x (2 train + 1 val) images of 16 px in "+dir) ||
		!strings.HasPrefix(lines[1], "wrote 2 classes") {
		t.Fatalf("gen-data's output, want a line naming what it writes before the one saying it wrote it:\n%s", out.String())
	}
}
