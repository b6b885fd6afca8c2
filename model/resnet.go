package model

import (
	"fmt"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
)

// The ResNets, named and laid out as torchvision's state_dict so that a
// checkpoint loads into torchvision.models.resnet18(num_classes=K) with
// strict=True:
//
//	resnet18, resnet34  torchvision's BasicBlock ResNets, [2,2,2,2] and
//	                    [3,4,6,3] blocks of widths 64-128-256-512; stem
//	                    imagenet (conv1 7x7 stride 2 pad 3, bn1, ReLU,
//	                    max-pool 3x3 stride 2 pad 1) or cifar (conv1 3x3
//	                    stride 1 pad 1, bn1, ReLU, no max-pool)
//	resnet50, resnet101,  torchvision's Bottleneck ResNets ("v1.5"),
//	resnet152           [3,4,6,3], [3,4,23,3] and [3,8,36,3] blocks of
//	                    planes 64-128-256-512, out 4x that; either stem
//	wide_resnet50_2,    resnet50's and resnet101's layouts with the 3x3
//	wide_resnet101_2    convs twice as wide (width_per_group 128)
//	resnext50_32x4d,    resnet50's and resnet101's layouts with the 3x3
//	resnext101_32x8d    convs grouped: groups 32, width_per_group 4 and 8
//	resnet20/32/56      He et al. 2016, section 4.2: conv1 3x3 of 16
//	                    channels, 3 stages of n = 3/5/9 BasicBlocks of
//	                    16/32/64 channels, projection shortcuts (1x1 conv +
//	                    BN) where the shape changes
//
// A BasicBlock is ReLU(bn2(conv2(ReLU(bn1(conv1(x))))) + shortcut(x)),
// conv1 carrying the stage's stride; a Bottleneck is
// ReLU(bn3(conv3(ReLU(bn2(conv2(ReLU(bn1(conv1(x)))))))) + shortcut(x)):
// conv1 1x1 to the block's width (planes x width_per_group/64 x groups),
// conv2 3x3 carrying the stride (torchvision's v1.5; He et al. put it on
// conv1), conv3 1x1 to 4 x planes. Convs have no bias. Then a global
// average pool and fc.

// Arch names.
const (
	ArchCNN      = "cnn"
	StemImageNet = "imagenet"
	StemCIFAR    = "cifar"
)

// Archs lists every model.arch.
var Archs = []string{ArchCNN, "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
	"wide_resnet50_2", "wide_resnet101_2", "resnext50_32x4d", "resnext101_32x8d",
	"resnet20", "resnet32", "resnet56"}

// bottlenecks are the Bottleneck archs' layouts: blocks per stage, groups
// and width_per_group, as torchvision's resnet.py builds them.
var bottlenecks = map[string]struct {
	blocks            []int
	groups, baseWidth int
}{
	"resnet50":         {[]int{3, 4, 6, 3}, 1, 64},
	"resnet101":        {[]int{3, 4, 23, 3}, 1, 64},
	"resnet152":        {[]int{3, 8, 36, 3}, 1, 64},
	"wide_resnet50_2":  {[]int{3, 4, 6, 3}, 1, 128},
	"wide_resnet101_2": {[]int{3, 4, 23, 3}, 1, 128},
	"resnext50_32x4d":  {[]int{3, 4, 6, 3}, 32, 4},
	"resnext101_32x8d": {[]int{3, 4, 23, 3}, 32, 8},
}

// bottleneckExpansion is the Bottleneck's out channels per plane.
const bottleneckExpansion = 4

type resnetLayout struct {
	stemWidth, stemKernel, stemStride int
	maxPool                           bool
	widths, blocks                    []int // widths: each stage's planes
	// bottleneck: the stages are Bottlenecks of groups x planes x
	// baseWidth/64 channels in the 3x3 conv and 4 x planes out; else
	// BasicBlocks of planes channels.
	bottleneck        bool
	groups, baseWidth int
}

// residualBlock is one block of a layout, a BasicBlock or a Bottleneck: its
// state_dict prefix ("layer2.0."), its input channels, its width (the
// channels of its inner convs), its output channels, the stride (of conv1
// in a BasicBlock, conv2 in a Bottleneck), conv2's groups, and whether its
// shortcut is the 1x1 conv + BatchNorm projection (downsample) rather than
// the identity.
type residualBlock struct {
	prefix           string
	bottleneck       bool
	cin, width, cout int
	stride, groups   int
	downsample       bool
}

// residualBlocks lists the layout's blocks in order, after the stem: each
// stage's first block but the first stage's has stride 2, and a block
// whose shape changes projects its shortcut (torchvision's rule, and He et
// al.'s option B).
func (l resnetLayout) residualBlocks() []residualBlock {
	var out []residualBlock
	cin := l.stemWidth
	for s, planes := range l.widths {
		width, cout, groups := planes, planes, 1
		if l.bottleneck {
			// torchvision: int(planes * (base_width / 64.0)) * groups
			width, cout, groups = planes*l.baseWidth/64*l.groups, planes*bottleneckExpansion, l.groups
		}
		for b := 0; b < l.blocks[s]; b++ {
			stride := 1
			if s > 0 && b == 0 {
				stride = 2
			}
			out = append(out, residualBlock{prefix: fmt.Sprintf("layer%d.%d.", s+1, b), bottleneck: l.bottleneck,
				cin: cin, width: width, cout: cout, stride: stride, groups: groups, downsample: stride != 1 || cin != cout})
			cin = cout
		}
	}
	return out
}

// IsResNet says whether the spec is one of the ResNets.
func (s Spec) IsResNet() bool { return s.Arch != "" && s.Arch != ArchCNN }

// HasStem says whether the spec's arch is one of torchvision's ResNets,
// which read Spec.Stem (imagenet or cifar); the CIFAR ResNets and the cnn
// do not.
func (s Spec) HasStem() bool {
	_, b := bottlenecks[s.Arch]
	return b || s.Arch == "resnet18" || s.Arch == "resnet34"
}

func (s Spec) layout() (resnetLayout, error) {
	var l resnetLayout
	switch s.Arch {
	case "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
		"wide_resnet50_2", "wide_resnet101_2", "resnext50_32x4d", "resnext101_32x8d":
		l.widths = []int{64, 128, 256, 512}
		l.blocks = []int{2, 2, 2, 2}
		switch bn, ok := bottlenecks[s.Arch]; {
		case ok:
			l.blocks, l.bottleneck, l.groups, l.baseWidth = bn.blocks, true, bn.groups, bn.baseWidth
		case s.Arch == "resnet34":
			l.blocks = []int{3, 4, 6, 3}
		}
		l.stemWidth = 64
		switch s.Stem {
		case "", StemImageNet:
			l.stemKernel, l.stemStride, l.maxPool = 7, 2, true
		case StemCIFAR:
			l.stemKernel, l.stemStride = 3, 1
		default:
			return l, fmt.Errorf("model.stem: must be %s or %s, got %q", StemImageNet, StemCIFAR, s.Stem)
		}
	case "resnet20", "resnet32", "resnet56":
		n := map[string]int{"resnet20": 3, "resnet32": 5, "resnet56": 9}[s.Arch]
		l.widths, l.blocks = []int{16, 32, 64}, []int{n, n, n}
		// Their stem is always the 3x3 conv without max-pool; Stem is
		// not read (the config's default, imagenet, is for resnet18/34).
		l.stemWidth, l.stemKernel, l.stemStride = 16, 3, 1
	default:
		return l, fmt.Errorf("model.arch: must be one of %s, got %q", strings.Join(Archs, ", "), s.Arch)
	}
	return l, nil
}

func (s Spec) validateResNet() error {
	l, err := s.layout()
	if err != nil {
		return err
	}
	// Every stage must keep at least one pixel.
	if l.lastSide(s.InputSize) < 1 {
		return fmt.Errorf("model.input_size: %d px is too small for %s", s.InputSize, s.Arch)
	}
	return nil
}

func convOut(size, k, stride, pad int) int { return (size+2*pad-k)/stride + 1 }

// lastSide is the side of the last stage's planes for an input of side
// input: the stem, its max-pool, then each stride-2 stage halving the
// side, rounding up.
func (l resnetLayout) lastSide(input int) int {
	size := convOut(input, l.stemKernel, l.stemStride, l.stemKernel/2)
	if l.maxPool {
		size = convOut(size, 3, 2, 1)
	}
	for i := 1; i < len(l.widths); i++ {
		size = convOut(size, 3, 2, 1)
	}
	return size
}

// bnLayer is one BatchNorm2d: its affine parameters are params of the
// model; its running statistics are buffers, staged during a training
// step and kept only when the step succeeds. The ops read and write them as
// engine values (the *V fields, Values.ValueOf of the slices): on the host
// those are the slices themselves; on a device, device copies, and the
// slices are host copies brought up to date by pull (State) and uploaded by
// push (Load).
type bnLayer struct {
	name                  string
	gamma, beta           *param
	mean, vari            []float32 // running_mean, running_var
	stageMean, stageVar   []float32
	meanV, variV          G.Value
	stageMeanV, stageVarV G.Value
	tracked               int64 // num_batches_tracked
	k                     BatchNormKernel
	kAdd                  BatchNormAddReLUKernel // instead of k: a BasicBlock's bn2, the residual join fused
	channels, hw          int
}

// bnMode is what the BatchNorm ops read at run time.
type bnMode struct {
	training bool
	n        int // valid samples in the batch
}

// buffers returns copies of a BatchNorm's buffers, named as torchvision's.
func (b *bnLayer) buffers() []NamedTensor {
	return []NamedTensor{
		{Name: b.name + ".running_mean", Shape: []int{b.channels}, Data: slices.Clone(b.mean)},
		{Name: b.name + ".running_var", Shape: []int{b.channels}, Data: slices.Clone(b.vari)},
		{Name: b.name + ".num_batches_tracked", Shape: []int{}, Data: []float32{float32(b.tracked)}},
	}
}

// splitBuffers takes the BatchNorm buffers out of params, checked: each
// present with its shape, num_batches_tracked a whole number (stored as
// F32, exact to 2^24 steps; PyTorch's copy_ casts it to int64 on load).
func (m *Model) splitBuffers(params []NamedTensor) (rest []NamedTensor, bufs map[string]NamedTensor, err error) {
	if len(m.bns) == 0 {
		return params, nil, nil
	}
	want := map[string][]int{}
	for _, b := range m.bns {
		for _, t := range b.buffers() {
			want[t.Name] = t.Shape
		}
	}
	bufs = map[string]NamedTensor{}
	for _, t := range params {
		if _, ok := want[t.Name]; ok {
			if _, dup := bufs[t.Name]; dup {
				return nil, nil, fmt.Errorf("tensor %q appears twice in params", t.Name)
			}
			bufs[t.Name] = t
			continue
		}
		rest = append(rest, t)
	}
	for _, b := range m.bns {
		for _, w := range b.buffers() {
			if err := check(bufs, w.Name, w.Shape); err != nil {
				return nil, nil, err
			}
		}
		if _, err := wholeCount(b.name+".num_batches_tracked", bufs[b.name+".num_batches_tracked"].Data[0]); err != nil {
			return nil, nil, err
		}
	}
	return rest, bufs, nil
}

func (m *Model) loadBuffers(bufs map[string]NamedTensor) {
	for _, b := range m.bns {
		copy(b.mean, bufs[b.name+".running_mean"].Data)
		copy(b.vari, bufs[b.name+".running_var"].Data)
		b.tracked = int64(bufs[b.name+".num_batches_tracked"].Data[0])
	}
}

// bnBuffers returns copies of the BatchNorm running statistics (none for
// the cnn), in torchvision's names, as Params lists them.
func (m *Model) bnBuffers() []NamedTensor {
	var out []NamedTensor
	for _, b := range m.bns {
		out = append(out, b.buffers()...)
	}
	return out
}

// stageBN copies the running statistics to where a training step updates
// them; commitBN keeps the step's update. The copies are the engine's, of
// its values.
func (m *Model) stageBN() error {
	for _, b := range m.bns {
		if err := cmpErr(m.eng.Copy(b.stageMeanV, b.meanV), m.eng.Copy(b.stageVarV, b.variV)); err != nil {
			return fmt.Errorf("staging %s's running statistics: %w", b.name, err)
		}
	}
	return nil
}

func (m *Model) commitBN() error {
	for _, b := range m.bns {
		if err := cmpErr(m.commitCopy(b.meanV, b.stageMeanV), m.commitCopy(b.variV, b.stageVarV)); err != nil {
			return fmt.Errorf("keeping %s's running statistics: %w", b.name, err)
		}
		b.tracked++
	}
	return nil
}
