package config

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"

	"stoke/data"
	"stoke/gemm"
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
	var p problems
	p.data(&c.Data)
	p.augment(&c.Augment)
	p.model(c)
	p.progressive(c)
	p.optim(&c.Optim)
	p.train(&c.Train)
	p.cuda(&c.Cuda)
	p.float32s(c)
	p.counts(c)
	p.batchNorm(c)
	return errors.Join(p...)
}

// problems collects what Validate finds, in the order of the fields.
type problems []error

func (p *problems) bad(path, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
}

func (p *problems) positive(path string, v int) {
	if v <= 0 {
		p.bad(path, "must be at least 1, got %d", v)
	}
}

// finite reports whether v is a number, and says so when it is not.
func (p *problems) finite(path string, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		p.bad(path, "must be a finite number, got %v", v)
		return false
	}
	return true
}

// cuda checks the GPU engine's settings whatever the device, so that a
// config meant for a GPU fails on the machine where it is written.
func (p *problems) cuda(c *Cuda) {
	switch c.Gemm {
	case "auto", "cublas", "own":
	default:
		p.bad("cuda.gemm", "must be auto, cublas or own, got %q", c.Gemm)
	}
	switch c.Graphs {
	case "auto", "on", "off":
	default:
		p.bad("cuda.graphs", "must be auto, on or off, got %q", c.Graphs)
	}
	if c.Cublas != strings.TrimSpace(c.Cublas) || strings.ContainsRune(c.Cublas, 0) {
		p.bad("cuda.cublas", "must be a file or folder path without leading or trailing spaces, got %q", c.Cublas)
	}
}

func (p *problems) data(d *Data) {
	p.positive("data.image_size", d.ImageSize)
	p.positive("data.batch_size", d.BatchSize)
	if d.Workers < 0 && !d.Workers.Auto() {
		p.bad("data.workers", "must be 0 (load inline) or more, or auto, got %d", int(d.Workers))
	}
	p.positive("data.prefetch", d.Prefetch)
	if d.BadImages != "fail" && d.BadImages != "skip" {
		p.bad("data.bad_images", "must be fail or skip, got %q", d.BadImages)
	}
	p.positive("data.max_pixels", d.MaxPixels)
	if d.MaxPixels > data.MaxPixelsLimit {
		p.bad("data.max_pixels", "must be at most %d (65536x65536, the largest JPEG; 16 GiB as RGB), got %d", data.MaxPixelsLimit, d.MaxPixels)
	}
	p.positive("data.max_decode_bytes", d.MaxDecode)
	if d.ShuffleBuf < 0 {
		p.bad("data.shuffle_buffer", "must be 0 (the global permutation) or more, got %d", d.ShuffleBuf)
	}
	switch d.Format {
	case "auto", "folder", "shards":
	default:
		p.bad("data.format", "must be auto, folder or shards, got %q", d.Format)
	}
	switch d.BatchDType {
	case "auto", "float32", "uint8":
	default:
		p.bad("data.batch_dtype", "must be auto, float32 or uint8, got %q", d.BatchDType)
	}
	switch d.Decoder {
	case "auto", "turbo", "go":
	default:
		p.bad("data.decoder", "must be auto, turbo or go, got %q", d.Decoder)
	}
	if d.Root == "" {
		s := d.Synthetic
		var fe *data.SynthFieldError
		if err := (data.SynthOptions{Classes: s.Classes, Train: s.Train, Val: s.Val, Size: s.Size, Quality: data.DefaultSynthQuality}).Check(); errors.As(err, &fe) {
			p.bad("data.synthetic."+fe.Field, "must be %s, got %d", fe.Want, fe.Value)
		}
	}
}

func (p *problems) augment(a *Augment) {
	if len(a.Scale) != 2 {
		p.bad("augment.scale", "must be two numbers [min, max], got %d", len(a.Scale))
	} else if !(a.Scale[0] > 0 && a.Scale[0] <= a.Scale[1] && a.Scale[1] <= 1) {
		p.bad("augment.scale", "must satisfy 0 < min <= max <= 1, got %v", a.Scale)
	}
	if len(a.Ratio) != 2 {
		p.bad("augment.ratio", "must be two numbers [min, max], got %d", len(a.Ratio))
	} else if !(a.Ratio[0] > 0 && a.Ratio[0] <= a.Ratio[1]) || math.IsInf(a.Ratio[1], 0) {
		p.bad("augment.ratio", "must satisfy 0 < min <= max, got %v", a.Ratio)
	}
	if p.finite("augment.hflip", a.HFlip) && (a.HFlip < 0 || a.HFlip > 1) {
		p.bad("augment.hflip", "is a probability in [0,1], got %v", a.HFlip)
	}
	for _, j := range []struct {
		path string
		v    float64
	}{{"augment.brightness", a.Brightness}, {"augment.contrast", a.Contrast}, {"augment.saturation", a.Saturation}} {
		if p.finite(j.path, j.v) && j.v < 0 {
			p.bad(j.path, "must be 0 (off) or more, got %v", j.v)
		}
	}
	if len(a.Mean) != 3 {
		p.bad("augment.mean", "must be three numbers (R, G, B), got %d", len(a.Mean))
	}
	if len(a.Std) != 3 {
		p.bad("augment.std", "must be three numbers (R, G, B), got %d", len(a.Std))
	}
	for i, s := range a.Std {
		if !(s > 0) || math.IsInf(s, 0) {
			p.bad(fmt.Sprintf("augment.std[%d]", i), "must be > 0, got %v", s)
		}
	}
	if !(a.EvalResizeRatio > 0 && a.EvalResizeRatio <= 1) {
		p.bad("augment.eval_resize_ratio", "must be in (0,1], got %v", a.EvalResizeRatio)
	}
}

// model checks model.* against the image size and the device.
func (p *problems) model(c *Config) {
	d := &c.Data
	if c.Model.Arch != model.ArchCNN {
		// model.conv is not read
	} else if len(c.Model.Conv) == 0 {
		p.bad("model.conv", "needs at least one conv block")
	} else if n := len(c.Model.Conv); n > MaxConvBlocks {
		p.bad("model.conv", "has %d conv blocks; at most %d (building the graph grows faster than the blocks: 256 take 0.2 s, 100000 never finished)", n, MaxConvBlocks)
	} else {
		side, pools := d.ImageSize, 0 // the side of each block's input
		for i, b := range c.Model.Conv {
			if b.Channels <= 0 {
				p.bad(fmt.Sprintf("model.conv[%d].channels", i), "must be at least 1, got %d", b.Channels)
			}
			if b.Kernel <= 0 || b.Kernel%2 == 0 {
				p.bad(fmt.Sprintf("model.conv[%d].kernel", i), "must be an odd number >= 1, got %d", b.Kernel)
			} else if side > 0 && b.Kernel > side {
				p.bad(fmt.Sprintf("model.conv[%d].kernel", i), "%d is larger than the block's %dx%d px input (data.image_size %d after %d pools); at most %d", b.Kernel, side, side, d.ImageSize, pools, side-(1-side%2))
			}
			if b.Pool && side > 0 {
				if side < 2 {
					p.bad(fmt.Sprintf("model.conv[%d].pool", i), "a %dx%d px input cannot be pooled (data.image_size %d after %d pools)", side, side, d.ImageSize, pools)
				}
				side, pools = side/2, pools+1
			}
		}
	}

	// Every arch runs on both devices: the cuda engine (cudaops.GraphEngine)
	// is a model.Engine's Layers, which has every layer.
	knownArch := slices.Contains(model.Archs, c.Model.Arch)
	if !knownArch {
		hint := ""
		for _, a := range model.Archs {
			if strings.EqualFold(a, c.Model.Arch) {
				hint = fmt.Sprintf(" (did you mean %s? names are lower case)", a)
			}
		}
		p.bad("model.arch", "must be one of %s, got %q%s", strings.Join(model.Archs, ", "), c.Model.Arch, hint)
	}
	if c.Model.ZeroInitResidual && c.Model.Arch == model.ArchCNN {
		p.bad("model.zero_init_residual", "the cnn has no residual blocks to start at 0; it is for the ResNets (model.arch resnet18, resnet50, ...): set it to false or pick a ResNet")
	}
	knownStem := c.Model.Stem == model.StemImageNet || c.Model.Stem == model.StemCIFAR
	if !knownStem {
		p.bad("model.stem", "must be %s or %s, got %q", model.StemImageNet, model.StemCIFAR, c.Model.Stem)
	}
	// The image size is checked against an arch and stem that exist; an
	// unknown one is reported once, above, not again as the image size's.
	if knownArch && knownStem && c.Model.Arch != model.ArchCNN {
		spec := c.ModelSpec(2)
		if err := spec.Validate(); err != nil {
			p.bad("data.image_size", "%d: %v", d.ImageSize, err)
		}
	}
}

func (p *problems) optim(o *Optim) {
	if o.Optimizer != model.OptimizerSGD && o.Optimizer != model.OptimizerAdamW {
		p.bad("optim.optimizer", "must be %s or %s, got %q", model.OptimizerSGD, model.OptimizerAdamW, o.Optimizer)
	}
	if o.Nesterov && (o.Optimizer != model.OptimizerSGD || !(o.Momentum > 0)) {
		p.bad("optim.nesterov", "needs optim.optimizer sgd and optim.momentum > 0")
	}
	if len(o.Betas) != 2 {
		p.bad("optim.betas", "must be two numbers [beta1, beta2], got %d", len(o.Betas))
	} else {
		for i, b := range o.Betas {
			if !(b >= 0 && b < 1) {
				p.bad(fmt.Sprintf("optim.betas[%d]", i), "must be in [0,1), got %v", b)
			}
		}
	}
	if p.finite("optim.eps", o.Eps) && !(o.Eps > 0) {
		p.bad("optim.eps", "must be > 0, got %v", o.Eps)
	}
	if p.finite("optim.label_smoothing", o.LabelSmoothing) && (o.LabelSmoothing < 0 || o.LabelSmoothing >= 1) {
		p.bad("optim.label_smoothing", "must be in [0,1), got %v", o.LabelSmoothing)
	}
	switch o.Schedule {
	case "cosine":
	case "step":
		p.positive("optim.step_epochs", o.StepEpochs)
	case "multistep":
		if len(o.Milestones) == 0 {
			p.bad("optim.milestones", "schedule multistep needs at least one milestone epoch")
		}
		for i, e := range o.Milestones {
			if e < 1 || (i > 0 && e <= o.Milestones[i-1]) {
				p.bad("optim.milestones", "must be increasing epochs >= 1, got %v", o.Milestones)
				break
			}
		}
	default:
		p.bad("optim.schedule", "must be cosine, step or multistep, got %q", o.Schedule)
	}
	if p.finite("optim.gamma", o.Gamma) && !(o.Gamma > 0) {
		p.bad("optim.gamma", "must be > 0, got %v", o.Gamma)
	}
	if p.finite("optim.lr", o.LR) && o.LR <= 0 {
		p.bad("optim.lr", "must be > 0, got %v", o.LR)
	}
	if p.finite("optim.momentum", o.Momentum) && (o.Momentum < 0 || o.Momentum >= 1) {
		p.bad("optim.momentum", "must be in [0,1), got %v", o.Momentum)
	}
	if p.finite("optim.weight_decay", o.WeightDecay) && o.WeightDecay < 0 {
		p.bad("optim.weight_decay", "must be 0 or more, got %v", o.WeightDecay)
	}
	if p.finite("optim.warmup_epochs", o.WarmupEpochs) && o.WarmupEpochs < 0 {
		p.bad("optim.warmup_epochs", "must be 0 or more, got %v", o.WarmupEpochs)
	}
	if p.finite("optim.min_lr", o.MinLR) && (o.MinLR < 0 || o.MinLR > o.LR) {
		p.bad("optim.min_lr", "must be in [0, optim.lr], got %v", o.MinLR)
	}
}

func (p *problems) train(t *Train) {
	p.positive("train.epochs", t.Epochs)
	if t.Device != "cpu" && t.Device != "cuda" {
		p.bad("train.device", "must be cpu or cuda, got %q", t.Device)
	}
	if _, err := gemm.ParsePrecision(t.Precision); err != nil {
		p.bad("train.precision", "must be fp32, tf32 or bf16, got %q", t.Precision)
	}
	if t.Out == "" {
		p.bad("train.out", "must name a run folder")
	}
	if t.Threads < 0 || t.Threads > MaxThreads {
		p.bad("train.threads", "must be 0 (all cores) to %d, got %d (this machine has %d cores)", MaxThreads, t.Threads, runtime.NumCPU())
	}
	switch t.Progress {
	case "auto", "bar", "plain", "none":
	default:
		p.bad("train.progress", "must be auto, bar, plain or none, got %q", t.Progress)
	}
	p.positive("train.keep_checkpoints", t.KeepCkpts)
	switch t.OnDivergence {
	case "auto", "stop", "warn":
	default:
		p.bad("train.on_divergence", "must be auto, stop or warn, got %q", t.OnDivergence)
	}
	switch t.Dist {
	case "auto", "none", "mpi":
	case "nccl":
		if t.Device != "cuda" {
			p.bad("train.dist", "train.dist nccl is refused on --device %s: NCCL sums the gradients on GPUs (it needs --device cuda); use train.dist mpi, which sums them over MPI on any device", t.Device)
		}
	default:
		p.bad("train.dist", "must be auto, none, mpi or nccl, got %q", t.Dist)
	}
	if p.finite("train.dist_timeout", t.DistTimeout) && t.DistTimeout <= 0 {
		p.bad("train.dist_timeout", "must be > 0 seconds, got %v", t.DistTimeout)
	}
	if p.finite("train.dist_bucket_mb", t.DistBucketMB) && t.DistBucketMB <= 0 {
		p.bad("train.dist_bucket_mb", "must be > 0, got %v", t.DistBucketMB)
	}
}
