package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalOfACUDACheckpointRunsWhereThereIsNoGPU: `train eval` of a
// checkpoint trained on cuda runs on this machine's device when none is
// asked for: cuda where this binary and machine can run it, the cpu
// elsewhere, with a note (it used to open the checkpoint's cuda and fail
// with "built without CUDA" on a CPU-only machine). An explicit device is
// opened as asked.
func TestEvalOfACUDACheckpointRunsWhereThereIsNoGPU(t *testing.T) {
	c := tinyConfig(t)
	c.Train.Epochs = 1
	runOK(t, c)
	dir, _ := latestCheckpoint(c.Train.Out)
	path := filepath.Join(dir, stateFile)
	var m map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &m); err != nil {
		t.Fatal(err)
	}
	text := m["config"].(string)
	if !strings.Contains(text, "device: cpu\n") {
		t.Fatalf("the checkpoint's config names no device: cpu:\n%s", text)
	}
	m["config"] = strings.Replace(text, "device: cpu\n", "device: cuda\n", 1)
	b, _ := json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out bytes.Buffer
	rep, err := Evaluate(ctx, c.Train.Out, "", "", &out)
	if err != nil {
		t.Fatalf("eval of a cuda checkpoint, no --device: %v", err)
	}
	if rep.Images == 0 {
		t.Errorf("eval read no images: %+v", rep)
	}
	if strings.Contains(out.String(), "device: cpu") && !strings.Contains(out.String(), "evaluating on the cpu") {
		t.Errorf("eval fell back to the cpu without a note:\n%s", out.String())
	}
	out.Reset()
	if _, err := Evaluate(ctx, c.Train.Out, "", "cpu", &out); err != nil || strings.Contains(out.String(), "note:") {
		t.Errorf("eval --device cpu: %v\n%s", err, out.String())
	}
	if newCUDADevice == nil {
		if _, err := Evaluate(ctx, c.Train.Out, "", "cuda", &out); !errors.Is(err, ErrNoCUDA) {
			t.Errorf("eval --device cuda in a build without CUDA: %v, want ErrNoCUDA", err)
		}
	}
}
