package config

import (
	"strings"
	"testing"
)

// validateWith applies overrides (path, value, ...) to the defaults and
// validates.
func validateWith(t *testing.T, kv ...string) error {
	t.Helper()
	c := Default()
	var o []Override
	for i := 0; i+1 < len(kv); i += 2 {
		o = append(o, Override{kv[i], kv[i+1]})
	}
	if err := c.Apply(o); err != nil {
		t.Fatalf("apply %v: %v", kv, err)
	}
	return c.Validate()
}

// TestNumbersOutsideFloat32AreRefused: every setting the engines read as
// float32, or that becomes a step count, a duration or a byte count, is
// refused when its value cannot work there, naming the key and the range
// that does; the edges of those ranges still validate.
func TestNumbersOutsideFloat32AreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want []string // "" : valid
	}{
		{"adamw eps 0 in float32", []string{"optim.optimizer", "adamw", "optim.eps", "1e-50"}, []string{"optim.eps", "1e-50 is 0 in float32", "1.18e-38"}},
		{"adamw eps subnormal", []string{"optim.optimizer", "adamw", "optim.eps", "1e-40"}, []string{"optim.eps", "0 in float32"}},
		{"adamw eps smallest normal", []string{"optim.optimizer", "adamw", "optim.eps", "1.2e-38"}, nil},
		{"lr +Inf in float32", []string{"optim.lr", "1e300"}, []string{"optim.lr", "1e+300 is +Inf in float32", "3.4e+38"}},
		{"lr 0 in float32", []string{"optim.lr", "1e-60", "optim.min_lr", "0"}, []string{"optim.lr", "is 0 in float32"}},
		{"lr large but float32", []string{"optim.lr", "1e30"}, nil},
		{"weight decay +Inf", []string{"optim.weight_decay", "1e308"}, []string{"optim.weight_decay", "+Inf in float32"}},
		{"weight decay 0 in float32", []string{"optim.weight_decay", "1e-45"}, []string{"optim.weight_decay", "0 in float32"}},
		{"adamw decay zeroes the weights", []string{"optim.optimizer", "adamw", "optim.lr", "0.1", "optim.weight_decay", "10"}, []string{"optim.weight_decay", "1/lr = 10"}},
		{"adamw decay below 1/lr", []string{"optim.optimizer", "adamw", "optim.lr", "0.1", "optim.weight_decay", "9"}, nil},
		{"min_lr 0 in float32", []string{"optim.min_lr", "1e-50"}, []string{"optim.min_lr", "0 in float32"}},
		{"beta2 is 1 in float32", []string{"optim.optimizer", "adamw", "optim.betas", "0.9,0.999999999"}, []string{"optim.betas[1]", "is 1 in float32", "0.99999994"}},
		{"beta2 just below 1 in float32", []string{"optim.optimizer", "adamw", "optim.betas", "0.9,0.99999994"}, nil},
		{"momentum is 1 in float32", []string{"optim.momentum", "0.9999999999"}, []string{"optim.momentum", "is 1 in float32"}},
		{"label smoothing is 1 in float32", []string{"optim.label_smoothing", "0.99999999"}, []string{"optim.label_smoothing", "is 1 in float32"}},
		{"std 0 in float32", []string{"augment.std", "1e-50,0.2,0.2"}, []string{"augment.std[0]", "0 in float32"}},
		{"std +Inf in float32", []string{"augment.std", "0.2,1e39,0.2"}, []string{"augment.std[1]", "+Inf in float32"}},
		{"mean +Inf in float32", []string{"augment.mean", "0.5,0.5,1e300"}, []string{"augment.mean[2]", "+Inf in float32"}},
		{"brightness +Inf in float32", []string{"augment.brightness", "1e300"}, []string{"augment.brightness", "+Inf in float32"}},
		{"gamma decays lr to 0", []string{"optim.schedule", "step", "optim.step_epochs", "1", "optim.gamma", "1e-10", "train.epochs", "12"}, []string{"optim.gamma", "after 11 decays", "0 in float32"}},
		{"gamma grows lr to Inf", []string{"optim.schedule", "multistep", "optim.milestones", "1,2", "optim.gamma", "1e30", "train.epochs", "3"}, []string{"optim.gamma", "after 2 decays", "+Inf in float32"}},
		{"gamma fine", []string{"optim.schedule", "step", "optim.step_epochs", "1", "optim.gamma", "0.1", "train.epochs", "12"}, nil},
		{"warm-up 1e308 epochs", []string{"optim.warmup_epochs", "1e308"}, []string{"optim.warmup_epochs", "longer than the run's train.epochs 12", "at most 12"}},
		{"warm-up 2e18 epochs", []string{"optim.warmup_epochs", "2e18"}, []string{"optim.warmup_epochs", "at most 12"}},
		{"warm-up longer than the run", []string{"optim.warmup_epochs", "10", "train.epochs", "2"}, []string{"optim.warmup_epochs", "10 is longer than the run's train.epochs 2", "never decay"}},
		{"warm-up as long as the run", []string{"optim.warmup_epochs", "2", "train.epochs", "2"}, nil},
		{"epochs past the step count", []string{"train.epochs", "1e15"}, []string{"train.epochs", "at most 1000000"}},
		{"step_epochs past the step count", []string{"optim.schedule", "step", "optim.step_epochs", "9e18"}, []string{"optim.step_epochs", "at most 1000000"}},
		{"dist timeout overflows a duration", []string{"train.dist_timeout", "1e10"}, []string{"train.dist_timeout", "overflows a duration", "300 s default", "9.223e+09"}},
		{"dist timeout under a nanosecond", []string{"train.dist_timeout", "1e-12"}, []string{"train.dist_timeout", "under a nanosecond"}},
		{"dist timeout 9e9 s", []string{"train.dist_timeout", "9e9"}, nil},
		{"bucket past 1 TiB", []string{"train.dist_bucket_mb", "1e13"}, []string{"train.dist_bucket_mb", "1 TiB"}},
		{"bucket under a byte", []string{"train.dist_bucket_mb", "1e-9"}, []string{"train.dist_bucket_mb", "a byte"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateWith(t, tc.kv...)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%v: %v, want valid", tc.kv, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%v validates; want an error naming %q", tc.kv, tc.want[0])
			}
			t.Logf("%v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestNaNMeanIsRefused: augment.mean had no check at all.
func TestNaNMeanIsRefused(t *testing.T) {
	c, err := Parse([]byte("augment:\n  mean: [0.5, .nan, 0.5]\n"), "x.yaml")
	if err == nil {
		err = c.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "augment.mean[1]") {
		t.Fatalf("mean [0.5, .nan, 0.5]: %v, want an error naming augment.mean[1]", err)
	}
}

// TestBatchNormOverOneValueIsRefused: batch 1 on a model whose last
// BatchNorm planes are 1x1 px is refused, naming the keys and what to
// change; a larger batch, a larger image, the cifar stem or the cnn are
// not.
func TestBatchNormOverOneValueIsRefused(t *testing.T) {
	base := []string{"model.arch", "resnet18", "data.image_size", "16", "data.batch_size", "1"}
	err := validateWith(t, base...)
	if err == nil {
		t.Fatal("resnet18, imagenet stem, 8 px, batch 1 validates")
	}
	t.Logf("%v", err)
	for _, w := range []string{"data.batch_size", "data.image_size 16", "1x1 px", "one value per channel", "data.batch_size 2 or more", "data.image_size 33 or more", "model.stem cifar"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	for _, kv := range [][]string{
		append(base[:4:4], "data.batch_size", "2"),
		{"model.arch", "resnet18", "data.image_size", "33", "data.batch_size", "1"},
		{"model.arch", "resnet18", "model.stem", "cifar", "data.image_size", "16", "data.batch_size", "1"},
		{"data.image_size", "16", "data.batch_size", "1"}, // the cnn: no BatchNorm
	} {
		if err := validateWith(t, kv...); err != nil {
			t.Errorf("%v: %v, want valid", kv, err)
		}
	}
	err = validateWith(t, "model.arch", "resnet20", "data.image_size", "4", "data.batch_size", "1")
	if err == nil || !strings.Contains(err.Error(), "data.image_size 5 or more") || strings.Contains(err.Error(), "model.stem") {
		t.Errorf("resnet20 at 4 px, batch 1: %v, want a refusal naming data.image_size 5 and not the stem", err)
	}
	if err := validateWith(t, "model.arch", "resnet18", "data.image_size", "8", "data.batch_size", "1"); err == nil || strings.Contains(err.Error(), "model.stem cifar") {
		t.Errorf("resnet18 at 8 px, batch 1: %v, want a refusal that does not offer the cifar stem (1x1 there too)", err)
	}
}

// TestUnknownArchIsReportedOnce: --model.arch=ResNet18 is one problem,
// with a hint, and no "data.image_size: 16: model.arch: ..." echo of it.
func TestUnknownArchIsReportedOnce(t *testing.T) {
	for _, kv := range [][]string{{"model.arch", "ResNet18"}, {"model.arch", "resnet18", "model.stem", "CIFAR"}} {
		err := validateWith(t, kv...)
		if err == nil {
			t.Fatalf("%v validates", kv)
		}
		t.Logf("%v", err)
		if strings.Contains(err.Error(), "data.image_size") || strings.Count(err.Error(), "must be") != 1 {
			t.Errorf("%v: %q, want one problem and none blamed on data.image_size", kv, err)
		}
	}
	if err := validateWith(t, "model.arch", "ResNet18"); err == nil || !strings.Contains(err.Error(), "did you mean resnet18?") {
		t.Errorf("ResNet18: %v, want a hint naming resnet18", err)
	}
}
