package config

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"

	"stoke/data"
	"stoke/model"
)

// Limits that no machine this runs on reaches; beyond them a setting is a
// typo, and would cost minutes and gigabytes before failing.
const (
	// MaxThreads bounds train.threads (GOMAXPROCS): each one costs the Go
	// runtime memory of its own (1,000,000 reached 21.9 GB).
	MaxThreads = 1024
	// MaxConvBlocks bounds model.conv.
	MaxConvBlocks = 256
)

// Validate checks every setting and returns all problems at once, each
// naming its field and what would be valid.
func (c *Config) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
	}
	positive := func(path string, v int) {
		if v <= 0 {
			bad(path, "must be at least 1, got %d", v)
		}
	}
	finite := func(path string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad(path, "must be a finite number, got %v", v)
			return false
		}
		return true
	}

	d := &c.Data
	positive("data.image_size", d.ImageSize)
	positive("data.batch_size", d.BatchSize)
	if d.Workers < 0 {
		bad("data.workers", "must be 0 (load inline) or more, got %d", d.Workers)
	}
	positive("data.prefetch", d.Prefetch)
	if d.BadImages != "fail" && d.BadImages != "skip" {
		bad("data.bad_images", "must be fail or skip, got %q", d.BadImages)
	}
	positive("data.max_pixels", d.MaxPixels)
	if d.MaxPixels > data.MaxPixelsLimit {
		bad("data.max_pixels", "must be at most %d (65536x65536, the largest JPEG; 16 GiB as RGB), got %d", data.MaxPixelsLimit, d.MaxPixels)
	}
	positive("data.max_decode_bytes", d.MaxDecode)
	switch d.BatchDType {
	case "auto", "float32", "uint8":
	default:
		bad("data.batch_dtype", "must be auto, float32 or uint8, got %q", d.BatchDType)
	}
	switch d.Decoder {
	case "auto", "turbo", "go":
	default:
		bad("data.decoder", "must be auto, turbo or go, got %q", d.Decoder)
	}
	if d.Root == "" {
		s := &d.Synthetic
		if s.Classes < 2 {
			bad("data.synthetic.classes", "must be at least 2, got %d", s.Classes)
		}
		positive("data.synthetic.train", s.Train)
		positive("data.synthetic.val", s.Val)
		if s.Size < 8 {
			bad("data.synthetic.size", "must be at least 8 pixels, got %d", s.Size)
		}
	}

	a := &c.Augment
	if len(a.Scale) != 2 {
		bad("augment.scale", "must be two numbers [min, max], got %d", len(a.Scale))
	} else if !(a.Scale[0] > 0 && a.Scale[0] <= a.Scale[1] && a.Scale[1] <= 1) {
		bad("augment.scale", "must satisfy 0 < min <= max <= 1, got %v", a.Scale)
	}
	if len(a.Ratio) != 2 {
		bad("augment.ratio", "must be two numbers [min, max], got %d", len(a.Ratio))
	} else if !(a.Ratio[0] > 0 && a.Ratio[0] <= a.Ratio[1]) || math.IsInf(a.Ratio[1], 0) {
		bad("augment.ratio", "must satisfy 0 < min <= max, got %v", a.Ratio)
	}
	if finite("augment.hflip", a.HFlip) && (a.HFlip < 0 || a.HFlip > 1) {
		bad("augment.hflip", "is a probability in [0,1], got %v", a.HFlip)
	}
	for _, j := range []struct {
		path string
		v    float64
	}{{"augment.brightness", a.Brightness}, {"augment.contrast", a.Contrast}, {"augment.saturation", a.Saturation}} {
		if finite(j.path, j.v) && j.v < 0 {
			bad(j.path, "must be 0 (off) or more, got %v", j.v)
		}
	}
	if len(a.Mean) != 3 {
		bad("augment.mean", "must be three numbers (R, G, B), got %d", len(a.Mean))
	}
	if len(a.Std) != 3 {
		bad("augment.std", "must be three numbers (R, G, B), got %d", len(a.Std))
	}
	for i, s := range a.Std {
		if !(s > 0) || math.IsInf(s, 0) {
			bad(fmt.Sprintf("augment.std[%d]", i), "must be > 0, got %v", s)
		}
	}
	if !(a.EvalResizeRatio > 0 && a.EvalResizeRatio <= 1) {
		bad("augment.eval_resize_ratio", "must be in (0,1], got %v", a.EvalResizeRatio)
	}

	if c.Model.Arch != model.ArchCNN {
		// model.conv is not read
	} else if len(c.Model.Conv) == 0 {
		bad("model.conv", "needs at least one conv block")
	} else if n := len(c.Model.Conv); n > MaxConvBlocks {
		bad("model.conv", "has %d conv blocks; at most %d (building the graph grows faster than the blocks: 256 take 0.2 s, 100000 never finished)", n, MaxConvBlocks)
	} else {
		side, pools := d.ImageSize, 0 // the side of each block's input
		for i, b := range c.Model.Conv {
			if b.Channels <= 0 {
				bad(fmt.Sprintf("model.conv[%d].channels", i), "must be at least 1, got %d", b.Channels)
			}
			if b.Kernel <= 0 || b.Kernel%2 == 0 {
				bad(fmt.Sprintf("model.conv[%d].kernel", i), "must be an odd number >= 1, got %d", b.Kernel)
			} else if side > 0 && b.Kernel > side {
				bad(fmt.Sprintf("model.conv[%d].kernel", i), "%d is larger than the block's %dx%d px input (data.image_size %d after %d pools); at most %d", b.Kernel, side, side, d.ImageSize, pools, side-(1-side%2))
			}
			if b.Pool && side > 0 {
				if side < 2 {
					bad(fmt.Sprintf("model.conv[%d].pool", i), "a %dx%d px input cannot be pooled (data.image_size %d after %d pools)", side, side, d.ImageSize, pools)
				}
				side, pools = side/2, pools+1
			}
		}
	}

	// Every arch runs on both devices: the cuda engine (cudaops.GraphEngine)
	// is a model.ResNetEngine.
	if !slices.Contains(model.Archs, c.Model.Arch) {
		bad("model.arch", "must be one of %s, got %q", strings.Join(model.Archs, ", "), c.Model.Arch)
	}
	if c.Model.Stem != model.StemImageNet && c.Model.Stem != model.StemCIFAR {
		bad("model.stem", "must be %s or %s, got %q", model.StemImageNet, model.StemCIFAR, c.Model.Stem)
	}
	if c.Model.Arch != model.ArchCNN && c.Model.Arch != "" {
		spec := c.ModelSpec(2)
		if err := spec.Validate(); err != nil {
			bad("data.image_size", "%d: %v", d.ImageSize, err)
		}
	}

	o := &c.Optim
	if o.Optimizer != model.OptimizerSGD && o.Optimizer != model.OptimizerAdamW {
		bad("optim.optimizer", "must be %s or %s, got %q", model.OptimizerSGD, model.OptimizerAdamW, o.Optimizer)
	}
	if o.Nesterov && (o.Optimizer != model.OptimizerSGD || !(o.Momentum > 0)) {
		bad("optim.nesterov", "needs optim.optimizer sgd and optim.momentum > 0")
	}
	if len(o.Betas) != 2 {
		bad("optim.betas", "must be two numbers [beta1, beta2], got %d", len(o.Betas))
	} else {
		for i, b := range o.Betas {
			if !(b >= 0 && b < 1) {
				bad(fmt.Sprintf("optim.betas[%d]", i), "must be in [0,1), got %v", b)
			}
		}
	}
	if finite("optim.eps", o.Eps) && !(o.Eps > 0) {
		bad("optim.eps", "must be > 0, got %v", o.Eps)
	}
	if finite("optim.label_smoothing", o.LabelSmoothing) && (o.LabelSmoothing < 0 || o.LabelSmoothing >= 1) {
		bad("optim.label_smoothing", "must be in [0,1), got %v", o.LabelSmoothing)
	}
	switch o.Schedule {
	case "cosine":
	case "step":
		positive("optim.step_epochs", o.StepEpochs)
	case "multistep":
		if len(o.Milestones) == 0 {
			bad("optim.milestones", "schedule multistep needs at least one milestone epoch")
		}
		for i, e := range o.Milestones {
			if e < 1 || (i > 0 && e <= o.Milestones[i-1]) {
				bad("optim.milestones", "must be increasing epochs >= 1, got %v", o.Milestones)
				break
			}
		}
	default:
		bad("optim.schedule", "must be cosine, step or multistep, got %q", o.Schedule)
	}
	if finite("optim.gamma", o.Gamma) && !(o.Gamma > 0) {
		bad("optim.gamma", "must be > 0, got %v", o.Gamma)
	}
	if finite("optim.lr", o.LR) && o.LR <= 0 {
		bad("optim.lr", "must be > 0, got %v", o.LR)
	}
	if finite("optim.momentum", o.Momentum) && (o.Momentum < 0 || o.Momentum >= 1) {
		bad("optim.momentum", "must be in [0,1), got %v", o.Momentum)
	}
	if finite("optim.weight_decay", o.WeightDecay) && o.WeightDecay < 0 {
		bad("optim.weight_decay", "must be 0 or more, got %v", o.WeightDecay)
	}
	if finite("optim.warmup_epochs", o.WarmupEpochs) && o.WarmupEpochs < 0 {
		bad("optim.warmup_epochs", "must be 0 or more, got %v", o.WarmupEpochs)
	}
	if finite("optim.min_lr", o.MinLR) && (o.MinLR < 0 || o.MinLR > o.LR) {
		bad("optim.min_lr", "must be in [0, optim.lr], got %v", o.MinLR)
	}

	t := &c.Train
	positive("train.epochs", t.Epochs)
	if t.Device != "cpu" && t.Device != "cuda" {
		bad("train.device", "must be cpu or cuda, got %q", t.Device)
	}
	if t.Out == "" {
		bad("train.out", "must name a run folder")
	}
	if t.Threads < 0 || t.Threads > MaxThreads {
		bad("train.threads", "must be 0 (all cores) to %d, got %d (this machine has %d cores)", MaxThreads, t.Threads, runtime.NumCPU())
	}
	switch t.Progress {
	case "auto", "bar", "plain", "none":
	default:
		bad("train.progress", "must be auto, bar, plain or none, got %q", t.Progress)
	}
	positive("train.keep_checkpoints", t.KeepCkpts)
	switch t.Dist {
	case "auto", "none", "mpi", "nccl":
	default:
		bad("train.dist", "must be auto, none, mpi or nccl, got %q", t.Dist)
	}
	if finite("train.dist_timeout", t.DistTimeout) && t.DistTimeout <= 0 {
		bad("train.dist_timeout", "must be > 0 seconds, got %v", t.DistTimeout)
	}
	if finite("train.dist_bucket_mb", t.DistBucketMB) && t.DistBucketMB <= 0 {
		bad("train.dist_bucket_mb", "must be > 0, got %v", t.DistBucketMB)
	}
	return errors.Join(errs...)
}
