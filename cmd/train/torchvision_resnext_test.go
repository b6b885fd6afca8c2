package main

import (
	"path/filepath"
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
	needTorchvision(t, "trains a resnext50_32x4d")
	root := filepath.Join(t.TempDir(), "ds")
	runOrFail(t, command("gen-data", "--out", root, "--classes", "4", "--train", "8", "--val", "4", "--size", "64", "--seed", "3"))
	run := filepath.Join(t.TempDir(), "run")
	runOrFail(t, command("--data", root, "--out", run, "--model.arch", "resnext50_32x4d", "--model.stem", "imagenet",
		"--image-size", "64", "--batch-size", "8", "--epochs", "2", "--optim.lr", "0.01", "--threads", "2",
		"--workers", "1", "--train.progress", "plain"))
	hits, images := torchvisionAgrees(t, root, run)
	t.Logf("resnext50_32x4d imagenet stem: %d of %d right in both", hits, images)
}
