package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A network is a composition of layers, as torchvision's models/resnet.py
// is: a layer's constructor makes its parameters (named as the layer's
// torchvision state_dict entries, initialised from the model's one random
// stream, in state_dict order), and its apply makes its graph nodes on the
// engine, reading those parameters from its own fields. A composite layer
// (the cnn's conv block, a BasicBlock, a Bottleneck, the head) does both in
// one build call. Nothing matches names or positions between two walks:
// an arch is one more composition.
//
// The parameters are made in the constructors' order, the state_dict's,
// which is not always the graph's: a BasicBlock's bn2 (a Bottleneck's bn3)
// comes before its downsample in the state_dict, but its op reads the
// downsample's output.

// builder is what layers are built into: the model (its parameters, its
// BatchNorms, its engine's values), the op set and the random stream that
// initialises the weights.
type builder struct {
	m   *Model
	ops *opSet
	rng *rand.Rand
	B   int
}

func newBuilder(m *Model) *builder {
	return &builder{m: m, ops: &opSet{eng: m.eng}, B: m.opt.Batch,
		rng: rand.New(rand.NewPCG(m.opt.Seed, 0x5eed_c0de_5eed_c0de))}
}

// param adds p (its name, shape and flags set) to the model: its values,
// filled by init, its optimizer slots, its engine value and graph node.
func (b *builder) param(p *param, init func(p *param)) (*param, error) {
	n := 1
	for _, d := range p.shape {
		n *= d
	}
	p.data = make([]float32, n)
	init(p)
	m := b.m
	shape := p.shape
	if p.transposed {
		shape = []int{p.shape[1], p.shape[0]}
	}
	val, err := m.value(p.data, shape...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	slots := m.optim.Slots()
	p.slots, p.slotV = make([][]float32, len(slots)), make([]G.Value, len(slots))
	for i := range slots {
		p.slots[i] = make([]float32, n)
		if p.slotV[i], err = m.value(p.slots[i], shape...); err != nil {
			return nil, fmt.Errorf("%s%s: %w", p.name, slots[i], err)
		}
	}
	p.node = G.NewTensor(m.g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName(p.name), G.WithValue(val))
	m.params = append(m.params, p)
	return p, nil
}

// uniform is nn.Conv2d's and nn.Linear's default init, kaiming_uniform_(a=√5)
// for weights, which is U(−1/√fan_in, 1/√fan_in), and the same bound for
// biases; drawn in PyTorch's layout.
func (b *builder) uniform(fanIn int) func(p *param) {
	return func(p *param) {
		bound := 1 / math.Sqrt(float64(fanIn))
		v := make([]float32, len(p.data))
		for i := range v {
			v[i] = float32((2*b.rng.Float64() - 1) * bound)
		}
		p.set(v)
	}
}

// kaimingNormal is torchvision's ResNet conv init, kaiming_normal_(mode
// fan_out, ReLU gain).
func (b *builder) kaimingNormal(fanOut int) func(p *param) {
	return func(p *param) {
		std := math.Sqrt(2 / float64(fanOut))
		for i := range p.data {
			p.data[i] = float32(b.rng.NormFloat64() * std)
		}
	}
}

func fill(v float32) func(p *param) {
	return func(p *param) {
		for i := range p.data {
			p.data[i] = v
		}
	}
}

// nchw is a 4-d node's shape.
func nchw(x *G.Node) (B, C, H, W int) {
	s := x.Shape()
	return s[0], s[1], s[2], s[3]
}

// convBiasReLU is the cnn's conv block, nn.Conv2d(cin, cout, k,
// padding=k/2) + ReLU (+ MaxPool2d(2)), one op: weight and bias
// "<name>.weight", "<name>.bias".
type convBiasReLU struct {
	k, cout int
	pool    bool
	w, bias *param
}

func newConvBiasReLU(b *builder, name string, cin, cout, k int, pool bool) (*convBiasReLU, error) {
	c := &convBiasReLU{k: k, cout: cout, pool: pool}
	var err error
	if c.w, err = b.param(&param{name: name + ".weight", shape: []int{cout, cin, k, k}}, b.uniform(cin*k*k)); err != nil {
		return nil, err
	}
	if c.bias, err = b.param(&param{name: name + ".bias", shape: []int{cout}, noDecay: true}, b.uniform(cin*k*k)); err != nil {
		return nil, err
	}
	return c, nil
}

// apply is the block on x; needDX is false on the first block, whose
// input is data.
func (c *convBiasReLU) apply(b *builder, x *G.Node, needDX bool) (*G.Node, error) {
	B, cin, H, W := nchw(x)
	k, err := b.m.eng.NewConv(B, cin, H, W, c.cout, c.k, c.pool)
	if err != nil {
		return nil, err
	}
	return b.ops.convBlock(k, B, cin, H, W, c.cout, c.k, c.pool, x, c.w.node, c.bias.node, needDX)
}

// conv2d is nn.Conv2d(cin, cout, k, stride, padding=k/2, groups=groups,
// bias=False), the ResNets' conv: "<name>.weight", of shape (cout,
// cin/groups, k, k) as nn.Conv2d's.
type conv2d struct {
	cout, k, stride, groups int
	w                       *param
}

func newConv2d(b *builder, name string, cin, cout, k, stride, groups int) (*conv2d, error) {
	if groups < 1 || cin%groups != 0 || cout%groups != 0 {
		return nil, fmt.Errorf("%s: groups=%d must be at least 1 and divide both the %d input and the %d output channels", name, groups, cin, cout)
	}
	c := &conv2d{cout: cout, k: k, stride: stride, groups: groups}
	var err error
	// kaiming_normal_'s fan_out is weight.size(0)·k·k = cout·k·k, groups or not.
	c.w, err = b.param(&param{name: name + ".weight", shape: []int{cout, cin / groups, k, k}}, b.kaimingNormal(cout*k*k))
	return c, err
}

func (c *conv2d) apply(b *builder, x *G.Node, needDX bool) (*G.Node, error) {
	B, cin, H, W := nchw(x)
	re := b.m.eng
	kc, err := re.NewConv2d(B, cin, H, W, c.cout, c.k, c.stride, c.k/2, c.groups)
	if err != nil {
		return nil, err
	}
	ho, wo := convOut(H, c.k, c.stride, c.k/2), convOut(W, c.k, c.stride, c.k/2)
	xShape, wShape, yShape := tensor.Shape{B, cin, H, W}, tensor.Shape{c.cout, cin / c.groups, c.k, c.k}, tensor.Shape{B, c.cout, ho, wo}
	return b.ops.conv2d(kc, xShape, wShape, yShape, x, c.w.node, needDX)
}

// batchNorm2d is nn.BatchNorm2d(c): weight 1, bias 0, and the running
// statistics, buffers that follow its bias in the state_dict.
func newBatchNorm2d(b *builder, name string, c int) (*bnLayer, error) {
	return newBatchNorm2dGamma(b, name, c, 1)
}

// newBatchNorm2dGamma is nn.BatchNorm2d(c) with its weight set to gamma (a
// block's last BatchNorm under zero_init_residual: 0). The init draws
// nothing from the random stream, so the other weights are the same
// either way, as in torchvision.
func newBatchNorm2dGamma(b *builder, name string, c int, gamma float32) (*bnLayer, error) {
	l := &bnLayer{name: name, channels: c,
		mean: make([]float32, c), vari: fill1(c),
		stageMean: make([]float32, c), stageVar: make([]float32, c)}
	var err error
	if l.gamma, err = b.param(&param{name: name + ".weight", shape: []int{c}, noDecay: true}, fill(gamma)); err != nil {
		return nil, err
	}
	if l.beta, err = b.param(&param{name: name + ".bias", shape: []int{c}, noDecay: true, bn: l}, fill(0)); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		dst  *G.Value
		data []float32
	}{{&l.meanV, l.mean}, {&l.variV, l.vari}, {&l.stageMeanV, l.stageMean}, {&l.stageVarV, l.stageVar}} {
		if *v.dst, err = b.m.value(v.data, c); err != nil {
			return nil, fmt.Errorf("%s running statistics: %w", name, err)
		}
	}
	b.m.bns = append(b.m.bns, l)
	return l, nil
}

func fill1(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// apply is the BatchNorm on x, ReLU fused when relu.
func (l *bnLayer) apply(b *builder, x *G.Node, relu bool) (*G.Node, error) {
	B, C, H, W := nchw(x)
	l.hw = H * W
	var err error
	if l.k, err = b.m.eng.NewBatchNorm(B, C, l.hw, relu); err != nil {
		return nil, err
	}
	return b.ops.batchNorm(l, &b.m.mode, x)
}

// applyAddReLU is ReLU(BatchNorm(x) + short), one op: a BasicBlock's end.
func (l *bnLayer) applyAddReLU(b *builder, x, short *G.Node) (*G.Node, error) {
	B, C, H, W := nchw(x)
	l.hw = H * W
	var err error
	if l.kAdd, err = b.m.eng.NewBatchNormAddReLU(B, C, l.hw); err != nil {
		return nil, err
	}
	return b.ops.batchNormAddReLU(l, &b.m.mode, x, short)
}

// convBN is a conv then its BatchNorm: conv1 + bn1, downsample.0 + .1.
type convBN struct {
	conv *conv2d
	bn   *bnLayer
}

func newConvBN(b *builder, convName, bnName string, cin, cout, k, stride, groups int) (convBN, error) {
	c, err := newConv2d(b, convName, cin, cout, k, stride, groups)
	if err != nil {
		return convBN{}, err
	}
	bn, err := newBatchNorm2d(b, bnName, cout)
	return convBN{c, bn}, err
}

func (c convBN) apply(b *builder, x *G.Node, relu, needDX bool) (*G.Node, error) {
	h, err := c.conv.apply(b, x, needDX)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.conv.w.name, err)
	}
	if h, err = c.bn.apply(b, h, relu); err != nil {
		return nil, fmt.Errorf("%s: %w", c.bn.name, err)
	}
	return h, nil
}

// maxPool2d is nn.MaxPool2d(k, stride, pad): no parameters.
func maxPool2d(b *builder, x *G.Node, k, stride, pad int) (*G.Node, error) {
	B, C, H, W := nchw(x)
	p, err := b.m.eng.NewMaxPool(B, C, H, W, k, stride, pad)
	if err != nil {
		return nil, err
	}
	ho, wo := convOut(H, k, stride, pad), convOut(W, k, stride, pad)
	return b.ops.maxPoolK(p, tensor.Shape{B, C, H, W}, tensor.Shape{B, C, ho, wo}, x)
}

// build makes the block on x: a BasicBlock or a Bottleneck.
func (blk residualBlock) build(b *builder, x *G.Node) (*G.Node, error) {
	if blk.bottleneck {
		return blk.buildBottleneck(b, x)
	}
	return blk.buildBasic(b, x)
}

// lastBNGamma is the initial weight of a block's last BatchNorm (bn2 of a
// BasicBlock, bn3 of a Bottleneck): 1, or 0 with Options.ZeroInitResidual
// (torchvision's zero_init_residual), so that each block starts as its
// shortcut.
func (b *builder) lastBNGamma() float32 {
	if b.m.opt.ZeroInitResidual {
		return 0
	}
	return 1
}

// buildBasic makes torchvision's BasicBlock blk (resnet.go) on x:
// ReLU(bn2(conv2(ReLU(bn1(conv1(x))))) + shortcut(x)), conv1 carrying the
// stride; the shortcut is x, or downsample (1x1 conv + BatchNorm).
func (blk residualBlock) buildBasic(b *builder, x *G.Node) (*G.Node, error) {
	pre := blk.prefix
	c1, err := newConvBN(b, pre+"conv1", pre+"bn1", blk.cin, blk.cout, 3, blk.stride, 1)
	if err != nil {
		return nil, err
	}
	c2, err := newConv2d(b, pre+"conv2", blk.cout, blk.cout, 3, 1, 1)
	if err != nil {
		return nil, err
	}
	bn2, err := newBatchNorm2dGamma(b, pre+"bn2", blk.cout, b.lastBNGamma())
	if err != nil {
		return nil, err
	}
	down, err := blk.newDownsample(b)
	if err != nil {
		return nil, err
	}

	y, err := c1.apply(b, x, true, true)
	if err != nil {
		return nil, err
	}
	if y, err = c2.apply(b, y, true); err != nil {
		return nil, fmt.Errorf("%sconv2: %w", pre, err)
	}
	return blk.join(b, bn2, "bn2", y, x, down)
}

// buildBottleneck makes torchvision's Bottleneck blk (resnet.go) on x:
// ReLU(bn3(conv3(ReLU(bn2(conv2(ReLU(bn1(conv1(x)))))))) + shortcut(x)),
// conv1 and conv3 1x1, conv2 3x3 carrying the stride (torchvision's v1.5);
// the shortcut is x, or downsample (1x1 conv with the stride + BatchNorm).
// The parameters are made in the state_dict's order: conv1, bn1, conv2,
// bn2, conv3, bn3, downsample.
func (blk residualBlock) buildBottleneck(b *builder, x *G.Node) (*G.Node, error) {
	pre := blk.prefix
	c1, err := newConvBN(b, pre+"conv1", pre+"bn1", blk.cin, blk.width, 1, 1, 1)
	if err != nil {
		return nil, err
	}
	c2, err := newConvBN(b, pre+"conv2", pre+"bn2", blk.width, blk.width, 3, blk.stride, blk.groups)
	if err != nil {
		return nil, err
	}
	c3, err := newConv2d(b, pre+"conv3", blk.width, blk.cout, 1, 1, 1)
	if err != nil {
		return nil, err
	}
	bn3, err := newBatchNorm2dGamma(b, pre+"bn3", blk.cout, b.lastBNGamma())
	if err != nil {
		return nil, err
	}
	down, err := blk.newDownsample(b)
	if err != nil {
		return nil, err
	}

	y, err := c1.apply(b, x, true, true)
	if err != nil {
		return nil, err
	}
	if y, err = c2.apply(b, y, true, true); err != nil {
		return nil, err
	}
	if y, err = c3.apply(b, y, true); err != nil {
		return nil, fmt.Errorf("%sconv3: %w", pre, err)
	}
	return blk.join(b, bn3, "bn3", y, x, down)
}

// newDownsample makes the block's projection shortcut, downsample.0 (1x1
// conv with the block's stride) and downsample.1 (BatchNorm), where the
// block changes the shape; nil where the shortcut is the identity.
func (blk residualBlock) newDownsample(b *builder) (*convBN, error) {
	if !blk.downsample {
		return nil, nil
	}
	pre := blk.prefix
	down, err := newConvBN(b, pre+"downsample.0", pre+"downsample.1", blk.cin, blk.cout, 1, blk.stride, 1)
	return &down, err
}

// join is the block's end, ReLU(last(y) + shortcut(x)) in one op, the
// shortcut x itself or down's projection of it.
func (blk residualBlock) join(b *builder, last *bnLayer, lastName string, y, x *G.Node, down *convBN) (*G.Node, error) {
	short := x
	if down != nil {
		var err error
		if short, err = down.apply(b, x, false, true); err != nil {
			return nil, err
		}
	}
	h, err := last.applyAddReLU(b, y, short)
	if err != nil {
		return nil, fmt.Errorf("%s%s + shortcut: %w", blk.prefix, lastName, err)
	}
	return h, nil
}

// head is the global average pool, fc (nn.Linear(C, classes): "fc.weight",
// held transposed in the graph so that fc is h·W, and "fc.bias") and the
// loss against target. It sets the model's logits and loss.
func head(b *builder, x, target *G.Node, classes int) error {
	_, C, _, _ := nchw(x)
	w, err := b.param(&param{name: "fc.weight", shape: []int{classes, C}, transposed: true}, b.uniform(C))
	if err != nil {
		return err
	}
	bias, err := b.param(&param{name: "fc.bias", shape: []int{classes}, noDecay: true}, b.uniform(C))
	if err != nil {
		return err
	}
	h, err := b.ops.avgPool(x)
	if err != nil {
		return fmt.Errorf("global average pool: %w", err)
	}
	m := b.m
	if m.logits, err = b.ops.linear(h, w.node, bias.node); err != nil {
		return fmt.Errorf("fc: %w", err)
	}
	if m.loss, err = b.ops.softmaxCrossEntropy(m.logits, target); err != nil {
		return fmt.Errorf("loss: %w", err)
	}
	return nil
}

// cnn is the plain CNN: Spec.Conv's blocks "conv<i>" (with Spec.Skip's
// residual adds), then the head.
func cnn(b *builder, spec Spec, x *G.Node) (*G.Node, error) {
	h := x
	for i, c := range spec.Conv {
		_, cin, _, _ := nchw(h)
		name := fmt.Sprintf("conv%d", i)
		blk, err := newConvBiasReLU(b, name, cin, c.Channels, c.Kernel, c.Pool)
		if err != nil {
			return nil, err
		}
		skip := h
		if h, err = blk.apply(b, h, i > 0); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if spec.skips(i) {
			if h, err = G.Add(skip, h); err != nil {
				return nil, fmt.Errorf("%s skip: %w", name, err)
			}
		}
	}
	return h, nil
}

// resnet is a ResNet of layout l (resnet.go): the stem (conv1,
// bn1, ReLU, the imagenet stem's max-pool), then the layout's blocks.
func resnet(b *builder, l resnetLayout, x *G.Node) (*G.Node, error) {
	stem, err := newConvBN(b, "conv1", "bn1", 3, l.stemWidth, l.stemKernel, l.stemStride, 1)
	if err != nil {
		return nil, err
	}
	h, err := stem.apply(b, x, true, false)
	if err != nil {
		return nil, err
	}
	if l.maxPool {
		if h, err = maxPool2d(b, h, 3, 2, 1); err != nil {
			return nil, fmt.Errorf("maxpool: %w", err)
		}
	}
	for _, blk := range l.residualBlocks() {
		if h, err = blk.build(b, h); err != nil {
			return nil, err
		}
	}
	return h, nil
}
