package config

import "fmt"

// batchNorm refuses a training batch whose BatchNorm statistics would be
// over one value per channel: batch 1 (per rank: data.batch_size is per
// rank and each rank normalises its own slice) on a model whose smallest
// BatchNorm plane is 1x1 px. It used to train silently to nonsense
// (resnet18, imagenet stem, 8 px, batch 1: val loss 6.3e10).
func (p *problems) batchNorm(c *Config) {
	if c.Data.BatchSize != 1 || c.Data.ImageSize < 1 {
		return
	}
	if c.BatchNormMinSlice() < 2 {
		return
	}
	fix := fmt.Sprintf("use data.batch_size 2 or more, or data.image_size %d or more", c.minImageForBatchNorm())
	if cifar := c; c.Model.Stem != "cifar" && c.ModelSpec(2).HasStem() {
		if cifar.Model.Stem = "cifar"; cifar.BatchNormMinSlice() < 2 {
			fix += ", or model.stem cifar"
		}
	}
	p.bad("data.batch_size", "1 image per rank with data.image_size %d leaves %s's last BatchNorm layers 1x1 px: one value per channel, whose variance is 0 (PyTorch refuses it: \"Expected more than 1 value per channel when training\"); %s",
		c.Data.ImageSize, c.Model.Arch, fix)
}

// BatchNormMinSlice is the fewest images a training step may hold on one
// rank for every BatchNorm channel to see more than one value: 2 when the
// model's smallest BatchNorm plane is 1x1 px, else 1 (any batch will do;
// also for the cnn, which has no BatchNorm). A rank's slice of the short
// last batch below it is left out (data.LoaderConfig.MinSlice).
//
// With data.progressive it is that of the smallest training side.
func (c Config) BatchNormMinSlice() int {
	if c.ModelSpecAt(2, c.TrainSizes()[0]).MinBatchNormPlane() == 1 {
		return 2
	}
	return 1
}

// minImageForBatchNorm is the smallest data.image_size from which the
// model's smallest BatchNorm plane has more than one pixel.
func (c Config) minImageForBatchNorm() int {
	d := c
	for s := max(c.Data.ImageSize, 1); s < 1<<16; s++ {
		d.Data.ImageSize = s
		if d.ModelSpec(2).MinBatchNormPlane() > 1 {
			return s
		}
	}
	return c.Data.ImageSize
}
