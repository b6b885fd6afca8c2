package trainer

import (
	"math"

	"stoke/config"
)

// schedule is the learning rate as a pure function of the global step:
// linear warm-up to optim.lr over optim.warmup_epochs, then, by
// optim.schedule, cosine decay to optim.min_lr at the last step (also when
// the schedule is unset), or step / multistep decay: lr·gamma^k with k the
// number of decays whose epoch has begun (every step_epochs epochs, or at
// each milestone), as PyTorch's StepLR and MultiStepLR stepped once per
// epoch. Being a function of the step alone, it resumes exactly.
type schedule struct {
	cfg           config.Optim
	stepsPerEpoch int
	epochs        int
}

func (s schedule) lr(step int) float64 {
	total := s.epochs * s.stepsPerEpoch
	warm := int(math.Round(s.cfg.WarmupEpochs * float64(s.stepsPerEpoch)))
	if warm > total {
		warm = total
	}
	if step < warm {
		return s.cfg.LR * float64(step+1) / float64(warm)
	}
	switch s.cfg.Schedule {
	case "step", "multistep":
		epoch := step / max(1, s.stepsPerEpoch)
		k := 0
		if s.cfg.Schedule == "step" {
			k = epoch / max(1, s.cfg.StepEpochs)
		} else {
			for _, m := range s.cfg.Milestones {
				if epoch >= m {
					k++
				}
			}
		}
		return s.cfg.LR * math.Pow(s.cfg.Gamma, float64(k))
	}
	if total-warm <= 1 {
		return s.cfg.LR
	}
	p := float64(step-warm) / float64(total-warm-1)
	p = math.Min(math.Max(p, 0), 1)
	return s.cfg.MinLR + (s.cfg.LR-s.cfg.MinLR)*0.5*(1+math.Cos(math.Pi*p))
}
