package configs

import (
	"slices"
	"testing"

	"stoke/config"
	"stoke/model"
)

// TestImageNetRecipesAsWritten: the two ImageNet recipes say what their
// headers say (torchvision's classic and the FFCV-like ramp), and validate.
// Until resnet50 is in model.Archs they are validated with resnet18 in its
// place (TestShippedConfigsAreValid takes them as shipped).
func TestImageNetRecipesAsWritten(t *testing.T) {
	load := func(name string) config.Config {
		t.Helper()
		b, err := FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := config.Parse(b, name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Model.Arch != "resnet50" || c.Model.Stem != "imagenet" {
			t.Errorf("%s: arch %s stem %s, want resnet50 imagenet", name, c.Model.Arch, c.Model.Stem)
		}
		if !slices.Contains(model.Archs, c.Model.Arch) {
			c.Model.Arch = "resnet18"
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return c
	}
	tv := load("imagenet-resnet50.yaml")
	o := tv.Optim
	if tv.Train.Epochs != 90 || o.Schedule != "step" || o.StepEpochs != 30 || o.Gamma != 0.1 || o.Momentum != 0.9 || o.WeightDecay != 1e-4 ||
		o.LR*256/float64(8*tv.Data.BatchSize) != 0.1 || o.LabelSmoothing != 0 || o.WarmupEpochs != 0 || !o.DecayNormAndBias {
		t.Errorf("imagenet-resnet50.yaml is not torchvision's classic recipe: epochs %d, optim %+v", tv.Train.Epochs, o)
	}
	if tv.TrainSize(0) != 224 || tv.EvalImageSize() != 224 || tv.Augment.EvalResizeRatio != 0.875 || tv.Augment.Scale[0] != 0.08 || tv.Augment.HFlip != 0.5 {
		t.Errorf("imagenet-resnet50.yaml: train %d px, eval %d px, ratio %v, scale %v, flip %v", tv.TrainSize(0), tv.EvalImageSize(), tv.Augment.EvalResizeRatio, tv.Augment.Scale, tv.Augment.HFlip)
	}

	ff := load("imagenet-resnet50-ffcv.yaml")
	var sides []int
	for e := range ff.Train.Epochs {
		sides = append(sides, ff.TrainSize(e))
	}
	if sides[0] != 160 || sides[65] != 160 || sides[76] != 192 || sides[87] != 192 || !slices.Equal(ff.TrainSizes(), []int{160, 192}) {
		t.Errorf("imagenet-resnet50-ffcv.yaml: sides by epoch %v, want 160 to 192 from epoch 65 to 76", sides)
	}
	if ff.EvalImageSize() != 224 || ff.Optim.LabelSmoothing != 0.1 || ff.Optim.Schedule == "step" || ff.Optim.Schedule == "multistep" || ff.Optim.WarmupEpochs <= 0 {
		t.Errorf("imagenet-resnet50-ffcv.yaml: eval %d px, optim %+v; want 224, label smoothing 0.1, warm-up then a step-free decay", ff.EvalImageSize(), ff.Optim)
	}
}
