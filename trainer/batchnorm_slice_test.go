package trainer

import (
	"testing"

	"stoke/data"
	"stoke/model"
)

// TestShortLastBatchOfOneIsDroppedOnlyWhereBatchNormIsDegenerate: the
// training loader a run makes drops a short last batch of 1 image on a
// model whose last BatchNorm planes are 1x1 px (resnet20 at 4 px: a step
// over it normalised one value per channel), and keeps it on any other
// (the same ResNet at 8 px, the cnn).
func TestShortLastBatchOfOneIsDroppedOnlyWhereBatchNormIsDegenerate(t *testing.T) {
	for _, tc := range []struct {
		arch        string
		size, steps int
	}{
		{"resnet20", 4, 1}, // 30 images in batches of 29: the 1 left over is dropped
		{"resnet20", 8, 2}, // 2x2 px planes: 29 + 1 is fine
		{model.ArchCNN, 4, 2},
	} {
		c := tinyConfig(t)
		c.Model.Arch, c.Data.ImageSize, c.Data.BatchSize = tc.arch, tc.size, 29
		if tc.arch == model.ArchCNN {
			c.Model.Conv = []model.ConvSpec{{Channels: 4, Kernel: 3}}
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		trainSet, valSet, err := data.Scan(c.Data.Root)
		if err != nil {
			t.Fatal(err)
		}
		train, val, err := newLoaders(c, trainSet, valSet, nil, data.DTypeFloat32, data.Split{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := train.NumBatches(); got != tc.steps {
			t.Errorf("%s at %d px, 30 images in batches of 29: %d steps an epoch, want %d", tc.arch, tc.size, got, tc.steps)
		}
		if got := val.NumBatches(); got != 1 {
			t.Errorf("%s at %d px: %d validation batches, want 1 (evaluation is untouched)", tc.arch, tc.size, got)
		}
		train.Close()
		val.Close()
	}
}
