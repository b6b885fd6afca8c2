package model

// MinBatchNormPlane is the fewest values per sample that any BatchNorm
// layer of a model of s normalises each channel over: the H x W of its
// smallest input plane, which in the ResNets is the last stage's output
// (each stride-2 stage and its projection shortcut halve the side,
// rounding up). In training a channel's statistics are over batch x this
// many values, and over one value the variance is 0: the layer outputs
// only its bias and running_var decays towards 0 (PyTorch refuses it,
// "Expected more than 1 value per channel when training"). 0 for the cnn,
// which has no BatchNorm, and for a spec Validate refuses.
func (s Spec) MinBatchNormPlane() int {
	if !s.IsResNet() {
		return 0
	}
	l, err := s.layout()
	if err != nil {
		return 0
	}
	size := l.lastSide(s.InputSize)
	if size < 1 {
		return 0
	}
	return size * size
}
