package config

import (
	"slices"
	"strings"
	"testing"
)

// TestProgressiveSchedule: FFCV's get_resolution (rn50: 160 to 192 from
// epoch 65 to 76, multiples of 32), the sides of every epoch, and off.
func TestProgressiveSchedule(t *testing.T) {
	c := Default()
	c.Train.Epochs = 88
	c.Data.SizeRamp = SizeRamp{Start: 160, End: 192, StartEpoch: 65, EndEpoch: 76, Step: 32}
	want := map[int]int{0: 160, 65: 160, 66: 160, 70: 160, 71: 192, 75: 192, 76: 192, 87: 192, 200: 192}
	// np.round(np.interp(e, [65, 76], [160, 192]) / 32) * 32: 70 -> 174.5/32 = 5.45 -> 160; 71 -> 177.45/32 = 5.55 -> 192.
	for e, s := range want {
		if got := c.TrainSize(e); got != s {
			t.Errorf("epoch %d: side %d, want %d", e, got, s)
		}
	}
	if got := c.TrainSizes(); !slices.Equal(got, []int{160, 192}) {
		t.Errorf("TrainSizes = %v, want [160 192]", got)
	}
	c.Data.SizeRamp = SizeRamp{Start: 16, End: 32, StartEpoch: 1, EndEpoch: 3, Step: 8}
	for e, s := range []int{16, 16, 24, 32, 32} {
		if got := c.TrainSize(e); got != s {
			t.Errorf("16->32 over epochs 1..3: epoch %d side %d, want %d", e, got, s)
		}
	}
	if c.MaxTrainSize() != 32 || !c.SizesVary() {
		t.Errorf("MaxTrainSize %d, SizesVary %v; want 32, true", c.MaxTrainSize(), c.SizesVary())
	}
	c.Data.SizeRamp = SizeRamp{Start: 10, End: 20, StartEpoch: 0, EndEpoch: 4, Step: 32}
	for e := 0; e <= 4; e++ { // rounded to 0 or 32, then kept within [10, 20]
		if s := c.TrainSize(e); s < 10 || s > 20 {
			t.Errorf("epoch %d: side %d outside [10, 20]", e, s)
		}
	}
	off := Default()
	if off.TrainSize(5) != off.Data.ImageSize || off.EvalImageSize() != off.Data.ImageSize || off.SizesVary() {
		t.Errorf("off: TrainSize %d, EvalImageSize %d, SizesVary %v; want data.image_size twice, false", off.TrainSize(5), off.EvalImageSize(), off.SizesVary())
	}
	off.Data.EvalSize = 40
	if off.EvalImageSize() != 40 || !off.SizesVary() {
		t.Errorf("eval_size 40: EvalImageSize %d, SizesVary %v", off.EvalImageSize(), off.SizesVary())
	}
}

// TestProgressiveRefused: each bad setting is refused naming its field.
func TestProgressiveRefused(t *testing.T) {
	on := SizeRamp{Start: 16, End: 32, StartEpoch: 0, EndEpoch: 4, Step: 8}
	cases := []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"start 0, end set", func(c *Config) { c.Data.SizeRamp = SizeRamp{End: 32, Step: 8} }, "data.progressive.start: must be a side of at least 1 px"},
		{"negative start", func(c *Config) { c.Data.SizeRamp.Start = -16 }, "data.progressive.start: must be a side of at least 1 px"},
		{"end below start", func(c *Config) { c.Data.SizeRamp.End = 8 }, "data.progressive.end: must be at least data.progressive.start (16)"},
		{"step 0", func(c *Config) { c.Data.SizeRamp.Step = 0 }, "data.progressive.step: must be at least 1"},
		{"negative start_epoch", func(c *Config) { c.Data.SizeRamp.StartEpoch = -1 }, "data.progressive.start_epoch: must be 0 or more"},
		{"end_epoch before start_epoch", func(c *Config) { c.Data.SizeRamp.StartEpoch = 3; c.Data.SizeRamp.EndEpoch = 2 }, "data.progressive.end_epoch: must be at least data.progressive.start_epoch (3)"},
		{"end_epoch past the run", func(c *Config) { c.Data.SizeRamp.EndEpoch = 9 }, "data.progressive.end_epoch: 9 is past the run's last epoch (train.epochs 4)"},
		{"absurd end_epoch (no endless loop)", func(c *Config) { c.Data.SizeRamp.EndEpoch = 1 << 40 }, "data.progressive.end_epoch: 1099511627776 is past the run's last epoch"},
		{"epochs while off", func(c *Config) { c.Data.SizeRamp = SizeRamp{EndEpoch: 3, Step: 32} }, "data.progressive: start_epoch 0 and end_epoch 3 are set but progressive resizing is off"},
		{"negative eval_size", func(c *Config) { c.Data.EvalSize = -1 }, "data.eval_size: must be 0"},
		{"start too small for the cnn", func(c *Config) { c.Data.SizeRamp.Start = 2 }, "data.progressive.start: 2 px does not fit the model"},
		{"eval_size too small for the cnn", func(c *Config) { c.Data.SizeRamp = SizeRamp{Step: 32}; c.Data.EvalSize = 4 }, "data.eval_size: 4 px does not fit the model"},
		{"cuda", func(c *Config) { c.Train.Device = "cuda" }, "data.progressive: the cuda device builds its graph for one image side"},
		{"cuda, eval_size", func(c *Config) { c.Data.SizeRamp = SizeRamp{Step: 32}; c.Train.Device = "cuda"; c.Data.EvalSize = 48 }, "data.eval_size: the cuda device builds its graph for one image side"},
	}
	for _, tc := range cases {
		c := Default()
		c.Train.Epochs = 4
		c.Data.SizeRamp = on
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	c := Default()
	c.Train.Epochs = 4
	c.Data.SizeRamp, c.Data.EvalSize = on, 40
	if err := c.Validate(); err != nil {
		t.Errorf("a valid ramp and eval_size: %v", err)
	}
}

// TestBatchNormMinSliceAtTheSmallestSide: the fewest images a step may hold
// follows the smallest training side, not data.image_size: resnet18's
// imagenet stem leaves 1x1 px BatchNorm planes at 8 px, 2x2 at 64 px.
func TestBatchNormMinSliceAtTheSmallestSide(t *testing.T) {
	c := Default()
	c.Model.Arch, c.Model.Stem, c.Data.ImageSize = "resnet18", "imagenet", 64
	if got := c.BatchNormMinSlice(); got != 1 {
		t.Fatalf("64 px: BatchNormMinSlice %d, want 1", got)
	}
	c.Data.SizeRamp = SizeRamp{Start: 8, End: 64, StartEpoch: 0, EndEpoch: 4, Step: 8}
	if got := c.BatchNormMinSlice(); got != 2 {
		t.Errorf("progressive from 8 px: BatchNormMinSlice %d, want 2", got)
	}
}
