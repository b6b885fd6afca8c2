package config

import (
	"math"
	"slices"

	"stoke/model"
)

// SizeRamp (data.progressive) is progressive resizing, as in FFCV's ResNet recipes: the
// training images' side as a schedule of the epoch, small while the
// network learns coarse features, larger towards the end. Off when Start
// and End are both 0 (the default): data.image_size every epoch.
//
// Epochs are counted as epochs done, as FFCV (and optim.milestones) count
// them: the run's first epoch, "epoch 1" on its line, is epoch 0 here. The
// side of epoch e is Start up to StartEpoch, End from EndEpoch on, and in
// between the straight line from Start to End rounded to the nearest
// multiple of Step (half to even, as FFCV's np.round), kept within
// [Start, End]: FFCV's get_resolution.
type SizeRamp struct {
	Start      int `yaml:"start" help:"progressive resizing: the training images' side in pixels up to start_epoch (FFCV's min_res); start and end both 0 = off, data.image_size every epoch"`
	End        int `yaml:"end" help:"progressive resizing: the side from end_epoch on (FFCV's max_res), the largest: the batch buffers and the memory estimate are sized for it"`
	StartEpoch int `yaml:"start_epoch" help:"progressive resizing: the epoch (counted from 0: the line 'epoch 1' is epoch 0) up to which the side is start (FFCV's start_ramp)"`
	EndEpoch   int `yaml:"end_epoch" help:"progressive resizing: the epoch (from 0) from which the side is end (FFCV's end_ramp), at most train.epochs; in between the side ramps linearly"`
	Step       int `yaml:"step" help:"progressive resizing: each epoch's side on the ramp is rounded to the nearest multiple of step (FFCV: 32)"`
}

// On reports whether progressive resizing is on.
func (p SizeRamp) On() bool { return p.Start != 0 || p.End != 0 }

// size is the side of epoch e (epochs done) on the ramp; p must be valid
// and on.
func (p SizeRamp) size(e int) int {
	switch {
	case e <= p.StartEpoch:
		return p.Start
	case e >= p.EndEpoch:
		return p.End
	}
	f := float64(e-p.StartEpoch) / float64(p.EndEpoch-p.StartEpoch)
	interp := float64(p.Start) + f*float64(p.End-p.Start)
	step := max(p.Step, 1) // refused by Validate; no division by 0 before it
	s := int(math.RoundToEven(interp/float64(step))) * step
	return min(max(s, p.Start), p.End)
}

// TrainSize is the side in pixels of the training images of epoch (epochs
// done, from 0): data.progressive's schedule when it is on, else
// data.image_size.
func (c Config) TrainSize(epoch int) int {
	if !c.Data.SizeRamp.On() {
		return c.Data.ImageSize
	}
	return c.Data.SizeRamp.size(epoch)
}

// TrainSizes is every side the training images take, smallest first.
// Past end_epoch the side stays data.progressive.end, so these are all
// the sides of any number of epochs.
func (c Config) TrainSizes() []int {
	if !c.Data.SizeRamp.On() {
		return []int{c.Data.ImageSize}
	}
	g := c.Data.SizeRamp
	out := []int{g.Start}
	// The ramp's epochs (bounded: an absurd end_epoch, which Validate
	// refuses past train.epochs, must not loop for ever before it does).
	for e := max(g.StartEpoch, 0); e <= g.EndEpoch && e-g.StartEpoch <= 1<<16; e++ {
		if s := c.TrainSize(e); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if !slices.Contains(out, g.End) {
		out = append(out, g.End)
	}
	slices.Sort(out)
	return out
}

// MaxTrainSize is the largest training side: what the training loader's
// batch buffers hold.
func (c Config) MaxTrainSize() int { return slices.Max(c.TrainSizes()) }

// EvalImageSize is the side of the evaluation images: data.eval_size, or
// data.image_size when that is 0.
func (c Config) EvalImageSize() int {
	if c.Data.EvalSize != 0 {
		return c.Data.EvalSize
	}
	return c.Data.ImageSize
}

// SizesVary reports whether the model sees more than one input side in a
// run: a training side that changes, or an evaluation side of its own.
func (c Config) SizesVary() bool {
	sizes := c.TrainSizes()
	return len(sizes) > 1 || sizes[0] != c.EvalImageSize()
}

// ModelSpecAt is ModelSpec for input images of side size.
func (c Config) ModelSpecAt(classes, size int) model.Spec {
	s := c.ModelSpec(classes)
	s.InputSize = size
	return s
}

// progressive checks data.eval_size and data.progressive: the sizes, the
// ramp's epochs against train.epochs, each size against the model (a
// size too small for its pools or kernels), and the device.
func (p *problems) progressive(c *Config) {
	d, g := &c.Data, c.Data.SizeRamp
	if d.EvalSize < 0 {
		p.bad("data.eval_size", "must be 0 (= data.image_size) or a side of at least 1 px, got %d", d.EvalSize)
	}
	if g.Step < 1 {
		p.bad("data.progressive.step", "must be at least 1 (FFCV rounds to multiples of 32), got %d", g.Step)
	}
	if !g.On() {
		if g.StartEpoch != 0 || g.EndEpoch != 0 {
			p.bad("data.progressive", "start_epoch %d and end_epoch %d are set but progressive resizing is off (start and end are 0): set start and end, the sides in pixels, or leave the epochs out", g.StartEpoch, g.EndEpoch)
		}
	} else {
		ok := true
		if g.Start < 1 {
			p.bad("data.progressive.start", "must be a side of at least 1 px when progressive resizing is on (end is %d), got %d", g.End, g.Start)
			ok = false
		}
		if g.End < g.Start {
			p.bad("data.progressive.end", "must be at least data.progressive.start (%d): the side ramps up, got %d", g.Start, g.End)
			ok = false
		}
		if g.StartEpoch < 0 {
			p.bad("data.progressive.start_epoch", "must be 0 or more (epochs counted from 0), got %d", g.StartEpoch)
			ok = false
		}
		if g.EndEpoch < g.StartEpoch {
			p.bad("data.progressive.end_epoch", "must be at least data.progressive.start_epoch (%d), got %d", g.StartEpoch, g.EndEpoch)
			ok = false
		}
		if c.Train.Epochs > 0 && g.EndEpoch > c.Train.Epochs {
			p.bad("data.progressive.end_epoch", "%d is past the run's last epoch (train.epochs %d): the ramp would never reach data.progressive.end; lower end_epoch or raise train.epochs", g.EndEpoch, c.Train.Epochs)
			ok = false
		}
		if ok && g.Step >= 1 {
			p.sizeFits(c, "data.progressive.start", g.Start) // the smallest side
		}
	}
	if d.EvalSize > 0 {
		p.sizeFits(c, "data.eval_size", d.EvalSize)
	}
	if c.Train.Device == "cuda" && (g.On() || (d.EvalSize > 0 && d.EvalSize != d.ImageSize)) {
		what := "data.progressive"
		if !g.On() {
			what = "data.eval_size"
		}
		p.bad(what, "the cuda device builds its graph for one image side, and this run needs more than one (progressive resizing, or an eval size other than data.image_size); train with --device cpu, or set data.image_size alone")
	}
}

// sizeFits reports, under path, a side too small for the model: the
// problems model finds at data.image_size = size.
func (p *problems) sizeFits(c *Config, path string, size int) {
	if size < 1 || size == c.Data.ImageSize || !slices.Contains(model.Archs, c.Model.Arch) {
		return // refused above, checked as data.image_size, or an unknown arch (said once, as model.arch)
	}
	at := *c
	at.Data.ImageSize = size
	var q problems
	q.model(&at)
	if len(q) > 0 {
		p.bad(path, "%d px does not fit the model: %v", size, q[0])
	}
}
