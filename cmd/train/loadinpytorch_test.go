package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"stoke/config"
	"stoke/trainer"
)

// TestLoadInPyTorchFindsTheDataset: scripts/load_in_pytorch.py finds a
// checkpoint's dataset where the trainer does (trainer.DatasetRoot), for a
// config naming data.root and for the generated dataset in data.cache_dir,
// $XDG_CACHE_HOME or ~/.cache, so that it needs no --data; --data still
// overrides. Needs only python3 with yaml (--print-data imports no torch).
func TestLoadInPyTorchFindsTheDataset(t *testing.T) {
	if out, err := exec.Command("python3", "-c", "import yaml").CombinedOutput(); err != nil {
		t.Skipf("python3 with yaml (apt-get install python3-yaml): %v: %s", err, out)
	}
	script, err := filepath.Abs("../../scripts/load_in_pytorch.py")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, tc := range []struct {
		name           string
		root, cacheDir string
		env            map[string]string
		override       string
	}{
		{name: "data.root", root: filepath.Join(tmp, "mine")},
		{name: "cache_dir", cacheDir: filepath.Join(tmp, "cache")},
		{name: "XDG_CACHE_HOME", env: map[string]string{"XDG_CACHE_HOME": filepath.Join(tmp, "xdg")}},
		{name: "HOME", env: map[string]string{"XDG_CACHE_HOME": "", "HOME": filepath.Join(tmp, "home")}},
		{name: "--data", cacheDir: filepath.Join(tmp, "cache"), override: filepath.Join(tmp, "other")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c := config.Default()
			c.Data.Root, c.Data.CacheDir = tc.root, tc.cacheDir
			c.Data.Synthetic = config.Synthetic{Classes: 2, Train: 1, Val: 1, Size: 16, Seed: 4}
			if tc.root != "" {
				if err := os.MkdirAll(tc.root, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			want, err := trainer.DatasetRoot(c.Data, io.Discard) // generates the 4 images if synthetic
			if err != nil {
				t.Fatal(err)
			}
			if tc.override != "" {
				want = tc.override
			}
			ck := filepath.Join(t.TempDir(), "ck")
			text, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			state, _ := json.Marshal(map[string]any{"format": 2, "config": string(text)})
			if err := os.MkdirAll(ck, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ck, "state.json"), state, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{script, ck, "--print-data"}
			if tc.override != "" {
				args = append(args, "--data", tc.override)
			}
			out, err := exec.Command("python3", args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("load_in_pytorch.py --print-data: %s; the trainer reads %s", got, want)
			}
		})
	}
}
