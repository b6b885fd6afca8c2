package config

import (
	"fmt"
	"math"
	"time"
)

// The engines compute in float32 (model.Options, the optimizer updates,
// augment's normalisation), the loop counts steps in an int and the
// collectives' deadline is a time.Duration. A setting that is a fine
// float64 can still be +Inf or 0 there, or overflow the count: such a
// value fails steps later with a message that blames something else (an
// eps of 1e-50 is 0 in float32, the first AdamW step divides by it, and
// the run stops blaming the learning rate), or runs silently as another
// value (a warm-up of 1e308 epochs overflows the step count to no warm-up
// at all). These checks refuse them here, naming the key and the range
// that works.

const (
	// minFloat32 is float32's smallest normal number, about 1.18e-38: below
	// it a value is 0 or a subnormal with a few bits left.
	minFloat32 = 0x1p-126
	// maxFloat32 is float32's largest finite number, about 3.4e38.
	maxFloat32 = math.MaxFloat32
	// belowOne32 is the largest float32 below 1 (1 - 2^-24, 0.99999994):
	// a probability or decay rate above it is 1 in float32.
	belowOne32 = 1 - 0x1p-24
	// MaxEpochs bounds train.epochs, so that epochs x steps per epoch (the
	// schedule's step count) stays far inside an int64.
	MaxEpochs = 1_000_000
	// maxDuration is the longest time.Duration, in seconds (about 292
	// years); a longer one overflows.
	maxDuration = float64(math.MaxInt64) / float64(time.Second)
	// maxBucketMB bounds train.dist_bucket_mb (1 TiB): the bucket's size
	// in bytes is an int.
	maxBucketMB = 1 << 20
)

// float32Range is the usable range of a positive float32 setting, as the
// messages print it.
var float32Range = fmt.Sprintf("[%.3g, %.3g]", minFloat32, maxFloat32)

// inFloat32 refuses a nonzero v that float32 cannot hold: past its largest
// number (+Inf there) or below its smallest normal one (0 there, or a
// subnormal of a few bits). Call it on a value already known to be finite.
func (p *problems) inFloat32(path string, v float64) bool {
	a := math.Abs(v)
	switch {
	case a > maxFloat32:
		p.bad(path, "%v is +Inf in float32, which the engines compute in; usable values are within %s", v, float32Range)
		return false
	case a != 0 && a < minFloat32:
		p.bad(path, "%v is 0 in float32, which the engines compute in; usable values are within %s (or 0 where 0 is allowed)", v, float32Range)
		return false
	}
	return true
}

// belowOne refuses a v in [0,1) that float32 rounds to 1 (0.999999999):
// a momentum or beta of 1 never forgets, and AdamW's bias correction
// 1 - beta^t is then 0.
func (p *problems) belowOne(path string, v float64) {
	if v < 1 && v > belowOne32 && float32(v) == 1 {
		p.bad(path, "%v is 1 in float32, which the engines compute in; at most %.8f", v, belowOne32)
	}
}

// float32s checks the settings the engines read as float32, after the
// checks of their meaning (optim, augment) have passed.
func (p *problems) float32s(c *Config) {
	o, a := &c.Optim, &c.Augment
	if finiteNum(o.LR) && o.LR > 0 {
		p.inFloat32("optim.lr", o.LR)
	}
	if finiteNum(o.Eps) && o.Eps > 0 {
		p.inFloat32("optim.eps", o.Eps)
	}
	if finiteNum(o.WeightDecay) && o.WeightDecay > 0 && p.inFloat32("optim.weight_decay", o.WeightDecay) &&
		o.Optimizer == "adamw" && finiteNum(o.LR) && o.LR > 0 && o.LR*o.WeightDecay >= 1 {
		// AdamW multiplies the weights by 1 - lr*wd each step (decoupled
		// decay): at 1 they are zeroed, past it they flip sign and grow.
		p.bad("optim.weight_decay", "%v with adamw and optim.lr %v: each step multiplies the weights by 1 - lr x weight_decay = %.3g, which zeroes or flips them; must be below 1/lr = %.3g", o.WeightDecay, o.LR, 1-o.LR*o.WeightDecay, 1/o.LR)
	}
	if finiteNum(o.MinLR) && o.MinLR > 0 {
		p.inFloat32("optim.min_lr", o.MinLR)
	}
	if finiteNum(o.Gamma) && o.Gamma > 0 {
		p.inFloat32("optim.gamma", o.Gamma)
	}
	p.belowOne("optim.momentum", o.Momentum)
	p.belowOne("optim.label_smoothing", o.LabelSmoothing)
	for i, b := range o.Betas {
		p.belowOne(fmt.Sprintf("optim.betas[%d]", i), b)
	}
	for i, s := range a.Std {
		if finiteNum(s) && s > 0 {
			p.inFloat32(fmt.Sprintf("augment.std[%d]", i), s)
		}
	}
	for i, m := range a.Mean {
		if p.finite(fmt.Sprintf("augment.mean[%d]", i), m) && math.Abs(m) > maxFloat32 {
			p.inFloat32(fmt.Sprintf("augment.mean[%d]", i), m)
		}
	}
	for _, j := range []struct {
		path string
		v    float64
	}{{"augment.brightness", a.Brightness}, {"augment.contrast", a.Contrast}, {"augment.saturation", a.Saturation}} {
		if finiteNum(j.v) && j.v > maxFloat32 {
			p.inFloat32(j.path, j.v)
		}
	}
}

// counts checks the settings that become a step count, a duration or a
// byte count: their float64 value must fit the integer it turns into.
func (p *problems) counts(c *Config) {
	o, t := &c.Optim, &c.Train
	if t.Epochs > MaxEpochs {
		p.bad("train.epochs", "must be at most %d (the schedule counts epochs x steps per epoch in an int), got %d", MaxEpochs, t.Epochs)
	}
	// A warm-up longer than the run would end it still warming up: the lr
	// would reach optim.lr at the last step and never decay. The schedule
	// used to clip it silently to the run; 1e308 or 2e18 epochs overflowed
	// the step count to no warm-up at all.
	if finiteNum(o.WarmupEpochs) && o.WarmupEpochs > 0 && t.Epochs >= 1 && o.WarmupEpochs > float64(t.Epochs) {
		p.bad("optim.warmup_epochs", "%v is longer than the run's train.epochs %d: the learning rate would still be warming up at the last step and never decay; use at most %d, or raise train.epochs", o.WarmupEpochs, t.Epochs, t.Epochs)
	}
	if o.Schedule == "step" && o.StepEpochs > MaxEpochs {
		p.bad("optim.step_epochs", "must be at most %d, got %d", MaxEpochs, o.StepEpochs)
	}
	if o.Schedule == "multistep" && len(o.Milestones) > 0 && o.Milestones[len(o.Milestones)-1] > MaxEpochs {
		p.bad("optim.milestones", "must be at most %d, got %v", MaxEpochs, o.Milestones)
	}
	p.decays(o, t.Epochs)
	if finiteNum(t.DistTimeout) && t.DistTimeout > 0 {
		switch {
		case t.DistTimeout > maxDuration:
			p.bad("train.dist_timeout", "%v s overflows a duration (it would run as the 300 s default); must be in [1e-09, %.4g] seconds", t.DistTimeout, maxDuration)
		case t.DistTimeout*float64(time.Second) < 1:
			p.bad("train.dist_timeout", "%v s is under a nanosecond (it would run as the 300 s default); must be in [1e-09, %.4g] seconds", t.DistTimeout, maxDuration)
		}
	}
	if finiteNum(t.DistBucketMB) && t.DistBucketMB > 0 {
		if t.DistBucketMB > maxBucketMB || t.DistBucketMB*(1<<20) < 1 {
			p.bad("train.dist_bucket_mb", "must be in [%.3g, %d] (a byte to 1 TiB), got %v", 1.0/(1<<20), maxBucketMB, t.DistBucketMB)
		}
	}
}

func finiteNum[T int | float64](v T) bool {
	f := float64(v)
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

// decays refuses a step or multistep schedule whose lr x gamma^k leaves
// float32 by the last epoch: 0 (50 decays by 0.1 from 0.1), after which
// the run trains on at lr 0, or +Inf (gamma > 1).
func (p *problems) decays(o *Optim, epochs int) {
	if !(finiteNum(o.LR) && o.LR > 0 && finiteNum(o.Gamma) && o.Gamma > 0) || epochs < 1 || epochs > MaxEpochs {
		return
	}
	k := 0 // decays begun by the last epoch, epochs-1 (schedule.lr)
	switch o.Schedule {
	case "step":
		if o.StepEpochs < 1 {
			return
		}
		k = (epochs - 1) / o.StepEpochs
	case "multistep":
		for _, m := range o.Milestones {
			if m <= epochs-1 {
				k++
			}
		}
	default:
		return
	}
	last := o.LR * math.Pow(o.Gamma, float64(k))
	if last < minFloat32 || last > maxFloat32 {
		p.bad("optim.gamma", "%v: after %d decays the learning rate is %.3g by the last epoch, which is %s in float32; the lr must stay within %s",
			o.Gamma, k, last, map[bool]string{true: "0", false: "+Inf"}[last < minFloat32], float32Range)
	}
}
