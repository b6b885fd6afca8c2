package config

import (
	"stoke/gemm"
	"stoke/model"
)

// ModelSpec is the network this config describes, for a dataset of
// classes classes.
func (c Config) ModelSpec(classes int) model.Spec {
	return model.Spec{InputSize: c.Data.ImageSize, Classes: classes, Conv: c.Model.Conv, Arch: c.Model.Arch, Stem: c.Model.Stem}
}

// GEMMPrecision is train.precision as a gemm.Precision (fp32 for a value
// Validate refuses).
func (t Train) GEMMPrecision() gemm.Precision {
	p, _ := gemm.ParsePrecision(t.Precision)
	return p
}

// ModelOptions are the model's training settings: optimizer, weight decay,
// label smoothing, precision. The cnn with optim.optimizer sgd gets exactly
// the options it always had.
func (c Config) ModelOptions() model.Options {
	o := c.Optim
	opt := model.Options{
		Batch: c.Data.BatchSize, Seed: c.Train.Seed,
		Momentum: float32(o.Momentum), WeightDecay: float32(o.WeightDecay),
		Nesterov: o.Nesterov, NoDecayNormAndBias: !o.DecayNormAndBias,
		LabelSmoothing:   float32(o.LabelSmoothing),
		Precision:        c.Train.GEMMPrecision(),
		Winograd:         c.Train.Winograd,
		ZeroInitResidual: c.Model.ZeroInitResidual,
	}
	if o.Optimizer == model.OptimizerAdamW {
		opt.Optimizer = model.OptimizerAdamW
		opt.Momentum = 0
		if len(o.Betas) == 2 {
			opt.Beta1, opt.Beta2 = float32(o.Betas[0]), float32(o.Betas[1])
		}
		opt.Eps = float32(o.Eps)
	}
	return opt
}
