package config

import (
	"strings"
	"testing"
)

// TestArchSettings: the ResNets and their optimizer settings validate, on
// either device; bad values are named.
func TestArchSettings(t *testing.T) {
	ok := Default()
	ok.Model.Arch, ok.Model.Stem = "resnet18", "cifar"
	ok.Optim.Optimizer, ok.Optim.Schedule, ok.Optim.Milestones = "adamw", "multistep", []int{3, 6}
	ok.Optim.LabelSmoothing = 0.1
	ok.Model.Conv = nil // not read by the ResNets
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid resnet18 config: %v", err)
	}
	ok.Train.Device, ok.Model.Arch, ok.Optim.Optimizer, ok.Optim.Nesterov = "cuda", "resnet20", "sgd", true
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid resnet20 config on cuda (Nesterov): %v", err)
	}
	for _, tc := range []struct {
		edit func(c *Config)
		want string
	}{
		{func(c *Config) { c.Model.Arch = "resnet200" }, `model.arch: must be one of cnn, resnet18, resnet34, resnet50, resnet101, resnet152, wide_resnet50_2, wide_resnet101_2, resnext50_32x4d, resnext101_32x8d, resnet20, resnet32, resnet56, got "resnet200"`},
		{func(c *Config) { c.Model.Stem = "tiny" }, "model.stem: must be imagenet or cifar"},
		{func(c *Config) { c.Model.Conv = nil }, "model.conv: needs at least one conv block"},
		{func(c *Config) { c.Optim.Optimizer = "adam" }, "optim.optimizer: must be sgd or adamw"},
		{func(c *Config) { c.Optim.Nesterov, c.Optim.Momentum = true, 0 }, "optim.nesterov: needs"},
		{func(c *Config) { c.Optim.LabelSmoothing = 1 }, "optim.label_smoothing: must be in [0,1)"},
		{func(c *Config) { c.Optim.Schedule = "multistep" }, "optim.milestones: schedule multistep needs"},
		{func(c *Config) { c.Optim.Schedule, c.Optim.Milestones = "multistep", []int{5, 5} }, "optim.milestones: must be increasing"},
		{func(c *Config) { c.Optim.Betas = []float64{0.9, 1} }, "optim.betas[1]: must be in [0,1)"},
		{func(c *Config) { c.Optim.Schedule = "linear" }, "optim.schedule: must be cosine, step or multistep"},
	} {
		c := Default()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error containing %q, got %v", tc.want, err)
		}
	}
}
