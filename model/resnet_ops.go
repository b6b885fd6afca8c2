package model

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"stoke/cpuops"
)

// The ResNet's ops, in the style of ops.go: each owns its output and its
// gradient ops' outputs; the work is cpuops'.

// conv2d is y = conv(x, w), no bias. Gradients: dx (when needDX) and dw.
func (s *opSet) conv2d(k *cpuops.Conv2d, x, w *G.Node, needDX bool) (*G.Node, error) {
	fwd := s.op("Conv2d", []int{4, 4}, tensor.Shape{k.B, k.Cout, k.Ho, k.Wo})
	fwd.wrt = []bool{needDX, true}
	var in [2][]float32
	fwd.do = func(v []G.Value) error {
		if err := f32s(v, in[:]); err != nil {
			return err
		}
		k.Forward(in[0], in[1], fwd.outData)
		return nil
	}
	fwd.diff = func(inputs G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		var dx *G.Node
		if needDX {
			op := s.op("Conv2dBackwardData", []int{4, 4}, tensor.Shape{k.B, k.Cin, k.H, k.W})
			var in [2][]float32
			op.do = func(v []G.Value) error {
				if err := f32s(v, in[:]); err != nil {
					return err
				}
				k.BackwardData(in[0], in[1], op.outData)
				return nil
			}
			var err error
			if dx, err = apply(op, inputs[1], dy); err != nil {
				return nil, err
			}
		}
		op := s.op("Conv2dBackwardFilter", []int{4, 4}, tensor.Shape{k.Cout, k.Cin, k.K, k.K})
		var fin [2][]float32
		op.do = func(v []G.Value) error {
			if err := f32s(v, fin[:]); err != nil {
				return err
			}
			k.BackwardFilter(fin[0], fin[1], op.outData)
			return nil
		}
		dw, err := apply(op, inputs[0], dy)
		return G.Nodes{dx, dw}, err
	}
	return apply(fwd, x, w)
}

// batchNorm is BatchNorm2d (ReLU fused when b.k.ReLU): batch statistics
// and the staged running ones updated when mode.training, the running
// ones otherwise. Gradients dx, dγ, dβ come from one backward op; the dγ
// and dβ ops only hand them out, taking dx as input so that they run after.
func (s *opSet) batchNorm(b *bnLayer, mode *bnMode, x *G.Node) (*G.Node, error) {
	sh := x.Shape().Clone()
	fwd := s.op("BatchNorm2d", []int{4, 1, 1}, sh)
	fwd.wrt = []bool{true, true, true}
	var in [3][]float32
	fwd.do = func(v []G.Value) error {
		if err := f32s(v, in[:]); err != nil {
			return err
		}
		if mode.training {
			b.k.Forward(in[0], in[1], in[2], fwd.outData, b.stageMean, b.stageVar, mode.n, true)
		} else {
			b.k.Forward(in[0], in[1], in[2], fwd.outData, b.mean, b.vari, mode.n, false)
		}
		return nil
	}
	fwd.diff = func(inputs G.Nodes, y, dy *G.Node) (G.Nodes, error) {
		dxOp := s.op("BatchNorm2dBackward", []int{4, 1, 4, 4}, sh)
		dgOp := s.op("BatchNorm2dWeightGrad", []int{4}, tensor.Shape{b.channels})
		dbOp := s.op("BatchNorm2dBiasGrad", []int{4}, tensor.Shape{b.channels})
		var in [4][]float32
		dxOp.do = func(v []G.Value) error {
			if err := f32s(v, in[:]); err != nil {
				return err
			}
			b.k.Backward(in[0], in[1], in[2], in[3], dxOp.outData, dgOp.outData, dbOp.outData)
			return nil
		}
		dgOp.do = func([]G.Value) error { return nil }
		dbOp.do = func([]G.Value) error { return nil }
		dx, err := apply(dxOp, inputs[0], inputs[1], y, dy)
		if err != nil {
			return nil, err
		}
		dg, err := apply(dgOp, dx)
		if err != nil {
			return nil, err
		}
		db, err := apply(dbOp, dx)
		if err != nil {
			return nil, err
		}
		return G.Nodes{dx, dg, db}, nil
	}
	return apply(fwd, x, b.gamma.node, b.beta.node)
}

// addReLU is the residual join ReLU(a + b); both inputs get the same
// gradient. Its shortcut input has a second consumer (the block's first
// conv): gorgonia's Backpropagate sums the two gradients with its own Add.
func (s *opSet) addReLU(a, b *G.Node) (*G.Node, error) {
	sh := a.Shape().Clone()
	fwd := s.op("AddReLU", []int{4, 4}, sh)
	fwd.wrt = []bool{true, true}
	var in [2][]float32
	fwd.do = func(v []G.Value) error {
		if err := f32s(v, in[:]); err != nil {
			return err
		}
		cpuops.AddReLU(in[0], in[1], fwd.outData)
		return nil
	}
	fwd.diff = func(_ G.Nodes, y, dy *G.Node) (G.Nodes, error) {
		op := s.op("ReLUBackward", []int{4, 4}, sh)
		var in [2][]float32
		op.do = func(v []G.Value) error {
			if err := f32s(v, in[:]); err != nil {
				return err
			}
			cpuops.ReLUBackward(in[0], in[1], op.outData)
			return nil
		}
		d, err := apply(op, y, dy)
		return G.Nodes{d, d}, err
	}
	return apply(fwd, a, b)
}

// maxPoolK is MaxPool2d(K, stride, padding).
func (s *opSet) maxPoolK(p *cpuops.MaxPoolK, x *G.Node) (*G.Node, error) {
	fwd := s.op("MaxPool2d", []int{4}, tensor.Shape{p.B, p.C, p.Ho, p.Wo})
	fwd.wrt = []bool{true}
	fwd.do = func(v []G.Value) error {
		d, err := f32(v[0])
		if err != nil {
			return err
		}
		p.Forward(d, fwd.outData)
		return nil
	}
	fwd.diff = func(_ G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		op := s.op("MaxPool2dBackward", []int{4}, tensor.Shape{p.B, p.C, p.H, p.W})
		op.do = func(v []G.Value) error {
			d, err := f32(v[0])
			if err != nil {
				return err
			}
			p.Backward(d, op.outData)
			return nil
		}
		dx, err := apply(op, dy)
		return G.Nodes{dx}, err
	}
	return apply(fwd, x)
}
