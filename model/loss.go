package model

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"stoke/cpuops"
)

// The loss is softmax cross-entropy against a weighted one-hot target,
// computed with log-sum-exp in float64. gorgonia has no fused, stable form,
// and a weighted target carries the valid-row mask in the same input: row i
// of the target is (1/n)·onehot(label_i) for the n valid rows and zero for
// padded rows, so padded rows add nothing to the loss or to any gradient.
//
//	loss = Σ_i Σ_k t_ik · (lse(z_i) − z_ik)
//	∂loss/∂z_ik = softmax(z_i)_k · Σ_k t_ik − t_ik
//
// The op maps (logits (B,K), target (B,K)) to a float32 scalar; its
// gradient op takes the upstream scalar too: gorgonia's own seed (a host
// *F32 holding 1) when the loss is the output.
func (s *opSet) softmaxCrossEntropy(logits, target *G.Node) (*G.Node, error) {
	B, K := logits.Shape()[0], logits.Shape()[1]
	if !logits.Shape().Eq(target.Shape()) {
		return nil, fmt.Errorf("logits %v and target %v must be equal (B,K) shapes", logits.Shape(), target.Shape())
	}
	k, err := s.engine().NewXent(B, K)
	if err != nil {
		return nil, err
	}
	fwd := s.op("SoftmaxCrossEntropy", []int{2, 2}, nil)
	fwd.wrt = []bool{true, false}
	fwd.do = func(v []G.Value) error {
		l, err := k.Forward(v[0], v[1])
		*fwd.out.(*G.F32) = G.F32(l)
		return err
	}
	fwd.diff = func(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
		op := s.op("SoftmaxCrossEntropyGrad", []int{2, 2, 0}, tensor.Shape{B, K})
		op.do = func(v []G.Value) error {
			g, err := scalarF32(v[2])
			if err != nil {
				return err
			}
			return k.Backward(v[0], v[1], g, op.out)
		}
		dz, err := apply(op, inputs[0], inputs[1], grad)
		return G.Nodes{dz, nil}, err
	}
	return apply(fwd, logits, target)
}

func scalarF32(v G.Value) (float32, error) {
	switch s := v.(type) {
	case *G.F32:
		return float32(*s), nil
	case *tensor.Dense:
		if d, ok := s.Data().([]float32); ok && len(d) == 1 {
			return d[0], nil
		}
		if d, ok := s.Data().(float32); ok {
			return d, nil
		}
	}
	return 0, fmt.Errorf("want a float32 scalar, got %T", v)
}

// logSumExp is log Σ exp(row), stable: the row max is taken out first.
func logSumExp(row []float32) float64 { return cpuops.LogSumExp(row) }
