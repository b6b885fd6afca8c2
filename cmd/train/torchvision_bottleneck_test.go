package main

import (
	"path/filepath"
	"testing"
)

// TestResNet50CheckpointLoadsInTorchvision is TestCheckpointLoadsInTorchvision
// for the Bottleneck: a resnet50 checkpoint (imagenet stem, 64 px,
// zero_init_residual, 2 epochs on a generated 4-class set of 32 images)
// loads with strict=True into torchvision.models.resnet50(num_classes=4),
// and PyTorch gets the same number of the 16 val images right as `train
// eval`. A resnet50 from scratch learns little in 8 steps, so this checks
// names, layouts and the eval-mode forward pass, not learning (the parity
// test checks the step).
// Skipped under -race and where /usr/bin/python3 lacks torch, torchvision or
// yaml.
func TestResNet50CheckpointLoadsInTorchvision(t *testing.T) {
	needTorchvision(t, "trains a resnet50")
	root := filepath.Join(t.TempDir(), "ds")
	runOrFail(t, command("gen-data", "--out", root, "--classes", "4", "--train", "8", "--val", "4", "--size", "64", "--seed", "3"))
	run := filepath.Join(t.TempDir(), "run")
	runOrFail(t, command("--data", root, "--out", run, "--model.arch", "resnet50", "--model.stem", "imagenet",
		"--image-size", "64", "--batch-size", "8", "--epochs", "2", "--optim.lr", "0.01", "--model.zero_init_residual", "--threads", "2",
		"--workers", "1", "--train.progress", "plain"))
	hits, images := torchvisionAgrees(t, root, run)
	t.Logf("resnet50 imagenet stem: %d of %d right in both", hits, images)
}
