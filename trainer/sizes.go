package trainer

import (
	"fmt"
	"strings"

	"stoke/augment"
	"stoke/config"
	"stoke/model"
)

// Image sizes that change in a run: progressive resizing (data.progressive,
// the training side a schedule of the epoch) and an evaluation side of its
// own (data.eval_size). The weights do not depend on the side — every arch
// ends in a global average pool — but a model's graph is built for one
// input shape. So the session keeps the training model at the epoch's side
// and, when the evaluation side differs, a second, forward-only use of a
// model built at that side, which takes the training model's weights and
// BatchNorm statistics before each evaluation. A training side that changes
// rebuilds the training model between epochs and moves its whole state
// (weights, buffers, optimizer slots, step count: what a checkpoint holds)
// into the new one, exactly as a resume does, so a run that changes side
// and one resumed at the new side compute the same numbers.
//
// Only the CPU engine rebuilds; the cuda device builds its graph once, and
// config validation refuses it more than one side.

// trainTransform is the training transform of cfg at side size.
func trainTransform(cfg config.Config, size int) (*augment.Train, error) {
	a := cfg.Augment
	tp := augment.DefaultTrainParams(size)
	tp.Scale, tp.Ratio = [2]float64{a.Scale[0], a.Scale[1]}, [2]float64{a.Ratio[0], a.Ratio[1]}
	tp.HFlip, tp.Brightness, tp.Contrast, tp.Saturation = a.HFlip, a.Brightness, a.Contrast, a.Saturation
	tp.Mean, tp.Std = vec3(a.Mean), vec3(a.Std)
	tf, err := augment.NewTrain(tp)
	if err != nil {
		return nil, fmt.Errorf("augment: %w", err)
	}
	return tf, nil
}

// modelAt builds a CPU model of the run's arch for inputs of side size,
// as openDevice's does (fresh weights; the caller loads a state into it).
func (s *session) modelAt(size int) (Backend, error) {
	if s.dev.Name != "cpu" {
		return nil, fmt.Errorf("train.device %s: this run needs the model at %d px as well as at %d px, and only the cpu engine rebuilds its graph for another image side; use --device cpu, or one data.image_size without data.progressive and data.eval_size", s.dev.Name, size, s.netSize)
	}
	opt := s.cfg.ModelOptions()
	opt.Mean, opt.Std = vec3(s.cfg.Augment.Mean), vec3(s.cfg.Augment.Std)
	m, err := model.New(s.cfg.ModelSpecAt(len(s.trainSet.Classes), size), opt)
	if err != nil {
		return nil, fmt.Errorf("the model at %d px: %w", size, err)
	}
	var b Backend = m
	if s.opt.wrapBackend != nil {
		b = s.opt.wrapBackend(b)
	}
	return b, nil
}

// sizeEpoch readies the training model and loader for epoch's side
// (config.TrainSize): when it changed, the model is rebuilt at the new side
// with the old one's whole state, and the loader takes that side's
// transform.
func (s *session) sizeEpoch(epoch int) error {
	size := s.cfg.TrainSize(epoch)
	if s.trainLoader.Size() != size {
		tf, err := trainTransform(s.cfg, size)
		if err != nil {
			return err
		}
		if err := s.trainLoader.SetTransform(tf); err != nil {
			return err
		}
	}
	if size == s.netSize {
		return nil
	}
	params, optim, err := s.net.State()
	if err != nil {
		return fmt.Errorf("epoch %d at %d px: %w", epoch+1, size, err)
	}
	s.net.Close() // before the new one is built: one training model's memory at a time
	net, err := s.modelAt(size)
	if err != nil {
		return err
	}
	s.net, s.netSize = net, size
	if err := net.Load(params, optim); err != nil {
		return fmt.Errorf("epoch %d at %d px: moving the model's state: %w", epoch+1, size, err)
	}
	if err := s.d.rehook(net); err != nil { // data parallel: the new graph hands its gradients over too
		return fmt.Errorf("epoch %d at %d px: %w", epoch+1, size, err)
	}
	return nil
}

// evalNet is the model that evaluates: the training model when it is at
// the evaluation side, else the evaluation model (built on first use),
// given the training model's weights and BatchNorm statistics.
func (s *session) evalNet() (Backend, error) {
	size := s.cfg.EvalImageSize()
	if size == s.netSize {
		return s.net, nil
	}
	if s.evalModel == nil {
		net, err := s.modelAt(size)
		if err != nil {
			return nil, err
		}
		s.evalModel = net
	}
	params, _, err := s.net.State()
	if err != nil {
		return nil, fmt.Errorf("evaluation at %d px: %w", size, err)
	}
	if err := s.evalModel.Load(params, nil); err != nil {
		return nil, fmt.Errorf("evaluation at %d px: %w", size, err)
	}
	return s.evalModel, nil
}

// sidesLine says which side each epoch of cfg trains at, and the
// evaluation side, as the run prints it at the start when they vary:
// "image sides: 8 px epochs 1-2, 12 px epoch 3, 16 px epoch 4; evaluation at 12 px"
// (epochs numbered as their lines are).
func sidesLine(cfg config.Config) string {
	var parts []string
	for e := 0; e < cfg.Train.Epochs; {
		s, end := cfg.TrainSize(e), e+1
		for end < cfg.Train.Epochs && cfg.TrainSize(end) == s {
			end++
		}
		if end == e+1 {
			parts = append(parts, fmt.Sprintf("%d px epoch %d", s, e+1))
		} else {
			parts = append(parts, fmt.Sprintf("%d px epochs %d-%d", s, e+1, end))
		}
		e = end
	}
	return fmt.Sprintf("image sides: %s; evaluation at %d px", strings.Join(parts, ", "), cfg.EvalImageSize())
}
