package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackCommand: `train pack` writes shards that `train --data` reads,
// and refuses, exit status and message naming the flag, a missing flag, an
// --out inside --data or not empty, and a --data that is shards already.
func TestPackCommand(t *testing.T) {
	root, err := smallDataset()
	if err != nil {
		t.Fatalf("gen-data: %v", err)
	}
	shards := filepath.Join(t.TempDir(), "shards")
	out := runOrFail(t, command("pack", "--data", root, "--out", shards, "--shard-size", "65536"))
	if !strings.Contains(out, "packed 3 classes, 120 train images into") {
		t.Errorf("pack printed %q", out)
	}
	for _, f := range []string{"classes.txt", "train/000000.tar", "train/000000.tar.idx", "val/000000.tar"} {
		if _, err := os.Stat(filepath.Join(shards, f)); err != nil {
			t.Errorf("pack wrote no %s: %v", f, err)
		}
	}
	args, _ := smallArgs(t, "--epochs", "1")
	args[1] = shards // --data
	if out := runOrFail(t, command(args...)); !strings.Contains(out, "tar shards (") || !strings.Contains(out, "3 classes, 120 train / 24 val images") {
		t.Errorf("train --data SHARDS printed\n%s", out)
	}

	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pack", "--out", "y"}, 2, "--data is required"},
		{[]string{"pack", "--data", root}, 2, "--out is required"},
		{[]string{"pack", "--data", root, "--out", "y", "--shard-size", "10"}, 2, "--shard-size 10: want"},
		{[]string{"pack", "--data", root, "--out", filepath.Join(root, "s")}, 1, "is inside the dataset folder"},
		{[]string{"pack", "--data", root, "--out", full}, 1, "is not empty"},
		{[]string{"pack", "--data", shards, "--out", filepath.Join(t.TempDir(), "again")}, 1, "is already a shard set"},
	} {
		var so, se bytes.Buffer
		if code := run(tc.args, &so, &se); code != tc.code || !strings.Contains(se.String(), tc.want) {
			t.Errorf("train %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, se.String(), tc.code, tc.want)
		}
	}
}
