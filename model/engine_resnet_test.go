package model

import (
	"strings"
	"testing"
)

// plainEngine has Engine's methods only: not a ResNetEngine.
type plainEngine struct{ Engine }

// TestEngineWithoutResNetLayers: an engine that lacks the ResNet layers
// refuses the archs that need them, saying which; the cnn still builds and
// trains on it with every optimizer (an Engine's Updater).
func TestEngineWithoutResNetLayers(t *testing.T) {
	eng := plainEngine{CPUEngine()}
	for _, tc := range []struct {
		spec Spec
		opt  Options
		want string
	}{
		{Spec{InputSize: 16, Classes: 3, Arch: "resnet20"}, Options{Batch: 2, Momentum: 0.9}, "model.arch resnet20"},
		{Spec{InputSize: 32, Classes: 3, Arch: "resnet18", Stem: StemCIFAR}, Options{Batch: 2}, "model.arch resnet18"},
	} {
		m, err := NewOn(eng, tc.spec, tc.opt)
		if err == nil {
			m.Close()
			t.Errorf("%s %+v: built on an engine without ResNet layers", tc.spec.Arch, tc.opt)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ResNetEngine") {
			t.Errorf("%s: error %q, want it to name %q and model.ResNetEngine", tc.spec.Arch, err, tc.want)
		}
	}
	for _, opt := range []Options{
		{Batch: 2, Momentum: 0.9},
		{Batch: 2, Optimizer: OptimizerAdamW},
		{Batch: 2, Momentum: 0.9, Nesterov: true},
	} {
		m, err := NewOn(eng, tinySpec, opt)
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
		_, err = m.TrainStep(make([]float32, 2*3*6*6), []int32{0, 1}, 2, 0.1)
		m.Close()
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
	}
}
