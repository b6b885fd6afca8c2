package model

import (
	"fmt"
	"slices"
)

// ConvSpec is one conv block: a KxK convolution with stride 1 and "same"
// padding (K/2), a bias, ReLU, then an optional 2x2 max-pool with stride 2.
type ConvSpec struct {
	Channels int  `yaml:"channels" json:"channels"`
	Kernel   int  `yaml:"kernel" json:"kernel"`
	Pool     bool `yaml:"pool" json:"pool"`
}

// Spec describes the network. Arch "" or "cnn" is the plain CNN: conv
// blocks, then global average pool, then a linear head to Classes logits.
// The other archs are the ResNets of resnet.go, and ignore Conv. Input is
// 3 x InputSize x InputSize.
type Spec struct {
	InputSize int        `yaml:"-" json:"input_size"`
	Classes   int        `yaml:"-" json:"classes"`
	Conv      []ConvSpec `yaml:"conv" json:"conv"`
	Arch      string     `yaml:"-" json:"arch,omitempty"`
	Stem      string     `yaml:"-" json:"stem,omitempty"` // torchvision's ResNets (HasStem): imagenet or cifar
	// Skip lists cnn conv blocks whose input is added to their output,
	// y = x + ReLU(conv(x) + b): a residual connection, so x has two
	// consumers and its gradient fans out (gorgonia's built-in Add, forward
	// and backward, on the engine's values). Such a block keeps its input's
	// channels and has no pool. Not a config setting: the engine parity
	// tests' fan-out graph (the ResNet archs are the real residual nets).
	Skip []int `yaml:"-" json:"skip,omitempty"`
}

// skips says whether conv block i has a residual connection (Skip).
func (s Spec) skips(i int) bool { return slices.Contains(s.Skip, i) }

// Validate checks the spec and returns an error naming the first bad field,
// e.g. "model.conv[1].kernel: must be odd and >= 1, got 4".
func (s Spec) Validate() error {
	if s.InputSize <= 0 {
		return fmt.Errorf("model.input_size: must be > 0, got %d", s.InputSize)
	}
	if s.Classes < 2 {
		return fmt.Errorf("model.classes: must be >= 2, got %d", s.Classes)
	}
	if s.Arch != "" && s.Arch != ArchCNN {
		return s.validateResNet()
	}
	if len(s.Conv) == 0 {
		return fmt.Errorf("model.conv: need at least one conv block")
	}
	for _, i := range s.Skip {
		if i < 0 || i >= len(s.Conv) {
			return fmt.Errorf("model.skip: conv block %d does not exist", i)
		}
		cin := 3
		if i > 0 {
			cin = s.Conv[i-1].Channels
		}
		if c := s.Conv[i]; c.Pool || c.Channels != cin {
			return fmt.Errorf("model.conv[%d]: a skip connection needs no pool and %d channels (its input's), got pool %v, %d channels", i, cin, c.Pool, c.Channels)
		}
	}
	size := s.InputSize
	for i, c := range s.Conv {
		if c.Channels <= 0 {
			return fmt.Errorf("model.conv[%d].channels: must be > 0, got %d", i, c.Channels)
		}
		if c.Kernel < 1 || c.Kernel%2 == 0 {
			return fmt.Errorf("model.conv[%d].kernel: must be odd and >= 1, got %d", i, c.Kernel)
		}
		if c.Pool {
			if size/2 < 1 {
				return fmt.Errorf("model.conv[%d].pool: a %dx%d px input cannot be pooled (input_size %d is too small for this many pools)", i, size, size, s.InputSize)
			}
			size /= 2
		}
	}
	return nil
}
