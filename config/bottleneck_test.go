package config

import (
	"strings"
	"testing"
)

// TestBottleneckArchSettings: the Bottleneck ResNets and ResNeXts validate
// with either stem; model.zero_init_residual reaches the model's options
// and is refused on the cnn, which has no residual block.
func TestBottleneckArchSettings(t *testing.T) {
	for _, arch := range []string{"resnet50", "resnet101", "resnet152", "wide_resnet50_2", "wide_resnet101_2", "resnext50_32x4d", "resnext101_32x8d"} {
		for _, stem := range []string{"imagenet", "cifar"} {
			c := Default()
			c.Model.Arch, c.Model.Stem, c.Data.ImageSize = arch, stem, 64
			c.Model.ZeroInitResidual = true
			if err := c.Validate(); err != nil {
				t.Errorf("%s, %s stem: %v", arch, stem, err)
			}
			if !c.ModelOptions().ZeroInitResidual {
				t.Errorf("%s: model.zero_init_residual true, but ModelOptions().ZeroInitResidual is false", arch)
			}
		}
	}
	c := Default()
	c.Model.ZeroInitResidual = true
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "model.zero_init_residual") {
		t.Errorf("cnn with model.zero_init_residual: want a refusal naming it, got %v", err)
	}
	if Default().ModelOptions().ZeroInitResidual {
		t.Error("model.zero_init_residual defaults to true; torchvision's default is false")
	}
}
