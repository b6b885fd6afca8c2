package model

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The ResNet's ops, in the style of ops.go: each owns its output and its
// gradient ops' outputs; the work is the engine's (Engine's Layers).

// conv2d is y = conv(x, w), no bias, y of shape (B,Cout,Ho,Wo) and x of
// xShape. Gradients: dx (when needDX) and dw.
func (s *opSet) conv2d(k Conv2dKernel, xShape, wShape, yShape tensor.Shape, x, w *G.Node, needDX bool) (*G.Node, error) {
	fwd := s.op("Conv2d", []int{4, 4}, yShape)
	fwd.wrt = []bool{needDX, true}
	fwd.do = func(v []G.Value) error { return k.Forward(v[0], v[1], fwd.out) }
	fwd.diff = func(inputs G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		var dx *G.Node
		if needDX {
			op := s.op("Conv2dBackwardData", []int{4, 4}, xShape.Clone())
			op.share = true
			op.do = func(v []G.Value) error { return k.BackwardData(v[0], v[1], op.out) }
			var err error
			if dx, err = apply(op, inputs[1], dy); err != nil {
				return nil, err
			}
		}
		op := s.op("Conv2dBackwardFilter", []int{4, 4}, wShape.Clone())
		op.do = func(v []G.Value) error { return k.BackwardFilter(v[0], v[1], op.out) }
		dw, err := apply(op, inputs[0], dy)
		return G.Nodes{dx, dw}, err
	}
	return apply(fwd, x, w)
}

// batchNorm is BatchNorm2d (ReLU fused when the kernel's is): batch
// statistics and the staged running ones updated when mode.training, the
// running ones otherwise. Gradients dx, dγ, dβ come from one backward op;
// the dγ and dβ ops only hand them out, taking dx as input so that they
// run after.
func (s *opSet) batchNorm(b *bnLayer, mode *bnMode, x *G.Node) (*G.Node, error) {
	sh := x.Shape().Clone()
	fwd := s.op("BatchNorm2d", []int{4, 1, 1}, sh)
	fwd.wrt = []bool{true, true, true}
	fwd.do = func(v []G.Value) error {
		mean, vari := b.stats(mode.training)
		return b.k.Forward(v[0], v[1], v[2], fwd.out, mean, vari, mode.n, mode.training)
	}
	fwd.diff = func(inputs G.Nodes, y, dy *G.Node) (G.Nodes, error) {
		dxOp := s.op("BatchNorm2dBackward", []int{4, 1, 4, 4}, sh)
		dxOp.share = true
		dgOp, dbOp := s.bnParamGrads(b)
		dxOp.do = func(v []G.Value) error {
			return b.k.Backward(v[0], v[1], v[2], v[3], dxOp.out, dgOp.out, dbOp.out)
		}
		dx, err := apply(dxOp, inputs[0], inputs[1], y, dy)
		if err != nil {
			return nil, err
		}
		return handOut(dx, dgOp, dbOp)
	}
	return apply(fwd, x, b.gamma.node, b.beta.node)
}

// stats are the running statistics a BatchNorm forward updates (training:
// the staged ones, kept only when the step succeeds) or reads.
func (b *bnLayer) stats(training bool) (mean, vari G.Value) {
	if training {
		return b.stageMeanV, b.stageVarV
	}
	return b.meanV, b.variV
}

// bnParamGrads are the ops that hand out dγ and dβ, which a BatchNorm's
// backward op writes into their outputs.
func (s *opSet) bnParamGrads(b *bnLayer) (dg, db *kernelOp) {
	return s.op("BatchNorm2dWeightGrad", []int{4}, tensor.Shape{b.channels}),
		s.op("BatchNorm2dBiasGrad", []int{4}, tensor.Shape{b.channels})
}

// handOut returns dx and, after it, a node for each of ops: gradients that
// dx's op already wrote into their outputs, so that they do nothing but
// take dx as input, to run after it.
func handOut(dx *G.Node, ops ...*kernelOp) (G.Nodes, error) {
	out := G.Nodes{dx}
	for _, op := range ops {
		op.do = func([]G.Value) error { return nil }
		n, err := apply(op, dx)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// batchNormAddReLU is a BasicBlock's end, ReLU(bn2(x) + short), in one op
// (BatchNorm2d's statistics and staging as batchNorm's). One backward op
// computes dx, dγ, dβ and the shortcut's gradient (dy through the ReLU's
// mask, which BatchNorm's backward starts from too); the others hand them
// out. When the shortcut is the block's input, that node has a second
// consumer (the block's first conv): gorgonia's Backpropagate sums the two
// gradients with its own Add, which runs on the engine's TensorEngine.
func (s *opSet) batchNormAddReLU(b *bnLayer, mode *bnMode, x, short *G.Node) (*G.Node, error) {
	sh := x.Shape().Clone()
	fwd := s.op("BatchNorm2dAddReLU", []int{4, 1, 1, 4}, sh)
	fwd.wrt = []bool{true, true, true, true}
	fwd.do = func(v []G.Value) error {
		mean, vari := b.stats(mode.training)
		return b.kAdd.Forward(v[0], v[1], v[2], v[3], fwd.out, mean, vari, mode.n, mode.training)
	}
	fwd.diff = func(inputs G.Nodes, y, dy *G.Node) (G.Nodes, error) {
		dxOp := s.op("BatchNorm2dAddReLUBackward", []int{4, 1, 4, 4}, sh)
		dxOp.share = true
		dgOp, dbOp := s.bnParamGrads(b)
		dsOp := s.op("ReLUBackward", []int{4}, sh)
		dsOp.share, dsOp.writer = true, dxOp
		dxOp.do = func(v []G.Value) error {
			return b.kAdd.Backward(v[0], v[1], v[2], v[3], dxOp.out, dsOp.out, dgOp.out, dbOp.out)
		}
		dx, err := apply(dxOp, inputs[0], inputs[1], y, dy)
		if err != nil {
			return nil, err
		}
		return handOut(dx, dgOp, dbOp, dsOp)
	}
	return apply(fwd, x, b.gamma.node, b.beta.node, short)
}

// maxPoolK is MaxPool2d(K, stride, padding) from xShape to yShape.
func (s *opSet) maxPoolK(p MaxPoolKernel, xShape, yShape tensor.Shape, x *G.Node) (*G.Node, error) {
	fwd := s.op("MaxPool2d", []int{4}, yShape)
	fwd.wrt = []bool{true}
	fwd.do = func(v []G.Value) error { return p.Forward(v[0], fwd.out) }
	fwd.diff = func(_ G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		op := s.op("MaxPool2dBackward", []int{4}, xShape.Clone())
		op.share = true
		op.do = func(v []G.Value) error { return p.Backward(v[0], op.out) }
		dx, err := apply(op, dy)
		return G.Nodes{dx}, err
	}
	return apply(fwd, x)
}
