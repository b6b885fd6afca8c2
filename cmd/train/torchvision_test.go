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

// TestCheckpointLoadsInTorchvision: a ResNet checkpoint that stoke trained
// loads with strict=True into torchvision's resnet18 (both stems; the cifar
// one after the README's two-line change) and into He et al.'s resnet20 as
// scripts/parity_pytorch.py builds it, and PyTorch classifies the val split
// as `train eval` does: the same number of images right, at least half of
// them (chance is a quarter). Skipped where
// /usr/bin/python3 lacks torch and torchvision, and under -race (.ci/run
// runs it without, beside the model's parity test).
func TestCheckpointLoadsInTorchvision(t *testing.T) {
	needTorchvision(t, "trains three ResNets")
	root := filepath.Join(t.TempDir(), "ds")
	runOrFail(t, command("gen-data", "--out", root, "--classes", "4", "--train", "24", "--val", "16", "--size", "64", "--seed", "3"))
	for _, tc := range []struct {
		arch, stem string
		size       int
	}{
		{"resnet18", "imagenet", 64},
		{"resnet18", "cifar", 32},
		{"resnet20", "cifar", 32},
	} {
		t.Run(tc.arch+"-"+tc.stem, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			runOrFail(t, command("--data", root, "--out", run, "--model.arch", tc.arch, "--model.stem", tc.stem,
				"--image-size", strconv.Itoa(tc.size), "--batch-size", "8", "--epochs", "3", "--optim.lr", "0.1", "--threads", "1",
				"--workers", "1", "--train.progress", "plain"))
			stokeHits, images := torchvisionAgrees(t, root, run)
			// Far from chance (1 in 4), so that agreeing says more than that
			// both predict one class everywhere.
			if 2*stokeHits < images {
				t.Errorf("train eval: %d of %d right after 3 epochs; want at least half, for the comparison to mean something", stokeHits, images)
			}
			t.Logf("%s %s stem: %d of %d right in both", tc.arch, tc.stem, stokeHits, images)
		})
	}
}

// needTorchvision skips t under -race (what trains is the model named by
// why; .ci/run runs these tests without it) and where /usr/bin/python3
// lacks torch, torchvision or yaml.
func needTorchvision(t *testing.T, why string) {
	t.Helper()
	if raceEnabled {
		t.Skip(why + "; .ci/run runs it without -race")
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch, torchvision, yaml").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 lacks torch/torchvision/yaml (apt-get install python3-torch python3-torchvision python3-yaml): %v: %s", err, strings.TrimSpace(string(out)))
	}
}

var pytorchTop1 = regexp.MustCompile(`PyTorch top-1 ([0-9.]+)% on ([0-9]+) images`)

// torchvisionAgrees has `train eval` score the run's checkpoint on the
// val split of root, and scripts/load_in_pytorch.py load it into
// torchvision with strict=True and score it too; it fails t unless both
// get the same number of the same images right, which it returns.
func torchvisionAgrees(t *testing.T, root, run string) (hits, images int) {
	t.Helper()
	script, err := filepath.Abs("../../scripts/load_in_pytorch.py")
	if err != nil {
		t.Fatal(err)
	}
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
	m := pytorchTop1.FindSubmatch(py)
	if m == nil {
		t.Fatalf("%s printed no top-1:\n%s", script, py)
	}
	pct, _ := strconv.ParseFloat(string(m[1]), 64)
	images, _ = strconv.Atoi(string(m[2]))
	pyHits := int(pct*float64(images)/100 + 0.5)
	if images != ev.Images || pyHits != stokeHits {
		t.Errorf("PyTorch: %d of %d val images right; train eval: %d of %d\n%s", pyHits, images, stokeHits, ev.Images, py)
	}
	return stokeHits, images
}
