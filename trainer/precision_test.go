package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stoke/model"
)

// TestPrecisionIsRecordedAndKept: a bf16 run says its precision at start,
// saves it in config.yaml, in the checkpoint's state.json and in the
// metadata of its (fp32) safetensors files, and a resume may not change it.
func TestPrecisionIsRecordedAndKept(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	c.Train.Precision = "bf16"
	var out bytes.Buffer
	if _, err := Run(context.Background(), c, Options{Out: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), ", precision bf16\n") {
		t.Errorf("the start does not say the precision:\n%s", out.String())
	}
	if cfg := readFile(t, filepath.Join(c.Train.Out, "config.yaml")); !strings.Contains(cfg, "precision: bf16\n") {
		t.Errorf("config.yaml lacks precision: bf16:\n%s", cfg)
	}
	dir, ok := latestCheckpoint(c.Train.Out)
	if !ok {
		t.Fatal("no checkpoint")
	}
	var sj stateJSON
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, stateFile))), &sj); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sj.Config, "precision: bf16\n") {
		t.Errorf("state.json's config lacks precision: bf16:\n%s", sj.Config)
	}
	for _, f := range []string{weightsFile, optimFile} {
		tensors, meta, err := model.ReadSafetensors(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if meta["precision"] != "bf16" {
			t.Errorf("%s: metadata precision %q, want bf16", f, meta["precision"])
		}
		if len(tensors) == 0 {
			t.Errorf("%s: no tensors", f)
		}
	}

	c.Train.Resume, c.Train.Epochs, c.Train.Precision = c.Train.Out, 2, "fp32"
	_, err := Run(context.Background(), c, Options{Out: new(bytes.Buffer)})
	if want := "train.precision is bf16 in the run but fp32 now"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("resume of a bf16 run at fp32: err %v, want %q", err, want)
	}
}

// TestCheckpointWithoutPrecisionResumesAtFP32: a run written before
// train.precision existed (its config.yaml and state.json without the key)
// resumes, at fp32.
func TestCheckpointWithoutPrecisionResumesAtFP32(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	strip := func(path string, quoted bool) {
		text := readFile(t, path)
		line := "  precision: fp32\n"
		if quoted {
			line = `  precision: fp32\n`
		}
		if !strings.Contains(text, line) {
			t.Fatalf("%s lacks %q:\n%s", path, line, text)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(text, line, "", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	strip(filepath.Join(c.Train.Out, "config.yaml"), false)
	dir, _ := latestCheckpoint(c.Train.Out)
	strip(filepath.Join(dir, stateFile), true)
	c.Train.Resume, c.Train.Epochs = c.Train.Out, 2
	var out bytes.Buffer
	if _, err := Run(context.Background(), c, Options{Out: &out}); err != nil {
		t.Fatalf("resume of a checkpoint without train.precision: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), ", precision fp32\n") {
		t.Errorf("the resumed run does not say fp32:\n%s", out.String())
	}
}
