package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestResNeXtCheckpointLoadsInTorchvision is
// TestResNet50CheckpointLoadsInTorchvision for resnext50_32x4d (grouped
// 3x3 convs, weights (Cout, Cin/32, 3, 3)): a checkpoint (imagenet stem,
// 64 px, 2 epochs on a generated 4-class set of 32 images) loads with
// strict=True into torchvision.models.resnext50_32x4d(num_classes=4), and
// PyTorch gets the same number of the 16 val images right as `train eval`.
// Skipped under -race and where /usr/bin/python3 lacks torch, torchvision
// or yaml.
func TestResNeXtCheckpointLoadsInTorchvision(t *testing.T) {
	if raceEnabled {
		t.Skip("trains a resnext50_32x4d; run without -race")
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch, torchvision, yaml").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 lacks torch/torchvision/yaml: %v: %s", err, strings.TrimSpace(string(out)))
	}
	root := filepath.Join(t.TempDir(), "ds")
	runOrFail(t, command("gen-data", "--out", root, "--classes", "4", "--train", "8", "--val", "4", "--size", "64", "--seed", "3"))
	script, err := filepath.Abs("../../scripts/load_in_pytorch.py")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run")
	runOrFail(t, command("--data", root, "--out", run, "--model.arch", "resnext50_32x4d", "--model.stem", "imagenet",
		"--image-size", "64", "--batch-size", "8", "--epochs", "2", "--optim.lr", "0.01", "--threads", "2",
		"--workers", "1", "--train.progress", "plain"))
	var ev struct {
		Images int     `json:"images"`
		Top1   float64 `json:"top1"`
	}
	out := runOrFail(t, command("eval", "--checkpoint", run, "--json"))
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &ev); err != nil {
		t.Fatalf("train eval --json: %v\n%s", err, out)
	}
	stokeHits := int(ev.Top1*float64(ev.Images) + 0.5)
	py, err := exec.Command("/usr/bin/python3", script, run, "--data", root).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, py)
	}
	m := regexp.MustCompile(`PyTorch top-1 ([0-9.]+)% on ([0-9]+) images`).FindSubmatch(py)
	if m == nil {
		t.Fatalf("%s printed no top-1:\n%s", script, py)
	}
	pct, _ := strconv.ParseFloat(string(m[1]), 64)
	images, _ := strconv.Atoi(string(m[2]))
	pyHits := int(pct*float64(images)/100 + 0.5)
	if images != ev.Images || pyHits != stokeHits {
		t.Errorf("PyTorch: %d of %d val images right; train eval: %d of %d\n%s", pyHits, images, stokeHits, ev.Images, py)
	}
	t.Logf("resnext50_32x4d imagenet stem: %d of %d right in both", stokeHits, ev.Images)
}
