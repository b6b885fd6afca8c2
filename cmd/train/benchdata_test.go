package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchDataStages runs `train bench-data` on the small dataset with
// colour jitter on, for both batch types: a JSON line per worker count,
// each with a rate and every stage measured (the crop+resize and the
// jitter written slot after slot into a batch-sized buffer), and the
// 0-worker loader's own cost on the stages' clock.
func TestBenchDataStages(t *testing.T) {
	root, err := smallDataset()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "bench-data.yaml")
	os.WriteFile(cfg, []byte("data: {batch_size: 8}\naugment: {brightness: 0.4, contrast: 0.4, saturation: 0.4}\n"), 0o644)
	for _, dtype := range []string{"float32", "uint8"} {
		var out, errOut bytes.Buffer
		code := run([]string{"bench-data", "--config", cfg, "--data", root, "--image-size", "13", "--workers", "0,2",
			"--images", "24", "--json", "--dtype", dtype}, &out, &errOut)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", dtype, code, errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: %d lines, want one per worker count:\n%s", dtype, len(lines), out.String())
		}
		for i, line := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			num := func(k string) float64 {
				v, ok := m[k].(float64)
				if !ok {
					t.Errorf("%s line %d: no number %s: %s", dtype, i, k, line)
				}
				return v
			}
			if int(num("workers")) != []int{0, 2}[i] || m["dtype"] != dtype || num("img_per_s") <= 0 {
				t.Errorf("%s line %d: %s", dtype, i, line)
			}
			if num("read_us") <= 0 || num("decode_us") <= 0 || num("crop_resize_us") <= 0 || num("jitter_us") < 0 || num("collate_us") < 0 {
				t.Errorf("%s line %d: a stage not measured: %s", dtype, i, line)
			}
			if c, _ := m["stage_clock"].(string); c == "" || num("loader_us") <= 0 {
				t.Errorf("%s line %d: clock %q, loader %v µs: %s", dtype, i, c, num("loader_us"), line)
			}
		}
	}
}
