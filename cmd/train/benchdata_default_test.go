package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stoke/config"
	"stoke/trainer"
)

// TestBenchDataUsesTheGeneratedDataset: without --data and with data.root
// empty, bench-data reads the generated dataset that train uses (it used
// to refuse: "no dataset").
func TestBenchDataUsesTheGeneratedDataset(t *testing.T) {
	cache := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "c.yaml")
	text := "data: {cache_dir: " + cache + ", image_size: 16, batch_size: 4, synthetic: {classes: 2, train: 8, val: 2, size: 24}}\n"
	os.WriteFile(cfgFile, []byte(text), 0o644)
	cmd := command("bench-data", "--config", cfgFile, "--workers", "0", "--images", "8", "--stages=false", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("--json printed a line that is not JSON: %q", line)
		}
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := trainer.DatasetRoot(cfg.Data, io.Discard) // train's dataset: now made, so only looked up
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 || filepath.Join(cache, entries[0].Name()) != want {
		t.Errorf("cache holds %v; want only train's dataset %s", entries, want)
	}
	if !strings.Contains(stderr.String(), "generating the synthetic dataset") {
		t.Errorf("the generation was not announced on stderr (stdout is JSON):\n%s", stderr.String())
	}
}
