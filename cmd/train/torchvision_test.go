package main

import (
	"encoding/json"
	"os"
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
// as `train eval` does: each image the same, but for near ties
// (torchvisionAgrees), and at least half of them right (chance is a
// quarter). Skipped where
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
			t.Logf("%s %s stem: %d of %d right (train eval)", tc.arch, tc.stem, stokeHits, images)
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
// torchvision with strict=True and classify the same images; it fails t
// unless both give each image the same class, but for near ties. The two
// sides resize with different resamplers (torchvision's PIL against
// stoke's), so an image whose top two classes are within nearTie of each
// other on both sides may go either way; the classes that eval reports
// are `train predict`'s. It returns eval's count of images right.
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
	perImage := filepath.Join(t.TempDir(), "pytorch.jsonl")
	py, err := exec.Command("/usr/bin/python3", script, run, "--data", root, "--per-image", perImage).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, py)
	}
	m := pytorchTop1.FindSubmatch(py)
	if m == nil {
		t.Fatalf("%s printed no top-1:\n%s", script, py)
	}
	images, _ = strconv.Atoi(string(m[2]))
	if images != ev.Images {
		t.Fatalf("PyTorch classified %d val images, train eval %d\n%s", images, ev.Images, py)
	}
	type guess struct {
		class string
		gap   float64
	}
	val := filepath.Join(root, "val")
	rel := func(path string) string {
		r, err := filepath.Rel(val, path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	torch := map[string]guess{}
	f, err := os.ReadFile(perImage)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		var r struct {
			File, Class string
			Gap         float64
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", perImage, err)
		}
		torch[rel(r.File)] = guess{r.Class, r.Gap}
		files = append(files, r.File)
	}
	if len(files) != images {
		t.Fatalf("%s: %d images, its top-1 line says %d", perImage, len(files), images)
	}
	out = runOrFail(t, command(append([]string{"predict", "--checkpoint", run, "--json", "--top", "2"}, files...)...))
	differ := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var p struct {
			File string
			Top  []struct {
				Class string
				Prob  float64
			}
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil || len(p.Top) == 0 {
			t.Fatalf("train predict --json: %v\n%s", err, line)
		}
		gap := 1.0
		if len(p.Top) > 1 {
			gap = p.Top[0].Prob - p.Top[1].Prob
		}
		tv, ok := torch[rel(p.File)]
		if !ok {
			t.Fatalf("train predict classified %s, which PyTorch did not", p.File)
		}
		if p.Top[0].Class == tv.class {
			continue
		}
		differ++
		t.Logf("%s: stoke says %s (%.3f ahead of the next), PyTorch %s (%.3f ahead)", rel(p.File), p.Top[0].Class, gap, tv.class, tv.gap)
		if gap >= nearTie || tv.gap >= nearTie {
			t.Errorf("%s: not a near tie (under %.2f on both sides)", rel(p.File), nearTie)
		}
	}
	t.Logf("%d of %d images classed differently", differ, images)
	return stokeHits, images
}

// nearTie is the gap between an image's top two probabilities under which
// stoke's resampling and torchvision's may rank them differently.
const nearTie = 0.1
