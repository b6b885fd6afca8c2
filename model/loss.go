package model

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The loss is a gorgonia Op of our own: softmax cross-entropy against a
// weighted one-hot target, computed with log-sum-exp in float64. gorgonia
// has no fused, stable form, and a weighted target carries the valid-row
// mask in the same input: row i of the target is (1/n)·onehot(label_i) for
// the n valid rows and zero for padded rows, so padded rows add nothing to
// the loss or to any gradient.
//
//	loss = Σ_i Σ_k t_ik · (lse(z_i) − z_ik)
//	∂loss/∂z_ik = softmax(z_i)_k · Σ_k t_ik − t_ik

// xentOp maps (logits (B,K), target (B,K)) to a float32 scalar.
type xentOp struct{}

func softmaxCrossEntropy(logits, target *G.Node) (*G.Node, error) {
	return G.ApplyOp(xentOp{}, logits, target)
}

func (xentOp) Arity() int { return 2 }

func (xentOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, m, a)
}

func (xentOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("xent: want 2 inputs, got %d", len(in))
	}
	return tensor.ScalarShape(), nil
}

func (xentOp) Do(vals ...G.Value) (G.Value, error) {
	z, t, b, k, err := xentInputs(vals)
	if err != nil {
		return nil, err
	}
	var loss float64
	for i := 0; i < b; i++ {
		row, trow := z[i*k:(i+1)*k], t[i*k:(i+1)*k]
		var w float64
		for _, v := range trow {
			w += float64(v)
		}
		if w == 0 {
			continue // padded row: its logits may be anything
		}
		lse := logSumExp(row)
		for j, v := range trow {
			if v != 0 {
				loss += float64(v) * (lse - float64(row[j]))
			}
		}
	}
	return G.NewF32(float32(loss)), nil
}

func (xentOp) ReturnsPtr() bool      { return false }
func (xentOp) CallsExtern() bool     { return false }
func (xentOp) OverwritesInput() int  { return -1 }
func (xentOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "model.SoftmaxCrossEntropy") }
func (op xentOp) Hashcode() uint32   { return hashOf(op) }
func (xentOp) String() string        { return "SoftmaxCrossEntropy" }

func (xentOp) DiffWRT(n int) []bool { return []bool{true, false} }

func (xentOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 2 {
		return nil, fmt.Errorf("xent: want 2 inputs, got %d", len(inputs))
	}
	dz, err := G.ApplyOp(xentGradOp{}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dz, nil}, nil
}

// xentGradOp maps (logits, target, upstream scalar gradient) to ∂loss/∂logits.
type xentGradOp struct{}

func (xentGradOp) Arity() int { return 3 }

func (xentGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, m, a, m)
}

func (xentGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 3 {
		return nil, fmt.Errorf("xent grad: want 3 inputs, got %d", len(in))
	}
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("xent grad: logits shape is %T", in[0])
	}
	return s.Clone(), nil
}

func (xentGradOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("xent grad: want 3 inputs, got %d", len(vals))
	}
	z, t, b, k, err := xentInputs(vals[:2])
	if err != nil {
		return nil, err
	}
	g, err := scalarF32(vals[2])
	if err != nil {
		return nil, fmt.Errorf("xent grad: %w", err)
	}
	dz := make([]float32, b*k)
	for i := 0; i < b; i++ {
		row, trow, drow := z[i*k:(i+1)*k], t[i*k:(i+1)*k], dz[i*k:(i+1)*k]
		var w float64
		for _, v := range trow {
			w += float64(v)
		}
		if w == 0 {
			continue
		}
		lse := logSumExp(row)
		for j := range drow {
			p := math.Exp(float64(row[j]) - lse)
			drow[j] = float32(float64(g) * (p*w - float64(trow[j])))
		}
	}
	return tensor.New(tensor.WithShape(b, k), tensor.WithBacking(dz)), nil
}

func (xentGradOp) ReturnsPtr() bool      { return false }
func (xentGradOp) CallsExtern() bool     { return false }
func (xentGradOp) OverwritesInput() int  { return -1 }
func (xentGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "model.SoftmaxCrossEntropyGrad") }
func (op xentGradOp) Hashcode() uint32   { return hashOf(op) }
func (xentGradOp) String() string        { return "SoftmaxCrossEntropyGrad" }

func hashOf(op G.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// xentInputs checks and unpacks the (logits, target) pair.
func xentInputs(vals []G.Value) (z, t []float32, b, k int, err error) {
	if len(vals) != 2 {
		return nil, nil, 0, 0, fmt.Errorf("xent: want 2 inputs, got %d", len(vals))
	}
	zt, ok1 := vals[0].(tensor.Tensor)
	tt, ok2 := vals[1].(tensor.Tensor)
	if !ok1 || !ok2 {
		return nil, nil, 0, 0, fmt.Errorf("xent: inputs must be tensors, got %T and %T", vals[0], vals[1])
	}
	if zt.Shape().Dims() != 2 || !zt.Shape().Eq(tt.Shape()) {
		return nil, nil, 0, 0, fmt.Errorf("xent: logits %v and target %v must be equal (B,K) shapes", zt.Shape(), tt.Shape())
	}
	z, ok1 = zt.Data().([]float32)
	t, ok2 = tt.Data().([]float32)
	if !ok1 || !ok2 {
		return nil, nil, 0, 0, fmt.Errorf("xent: inputs must be float32")
	}
	b, k = zt.Shape()[0], zt.Shape()[1]
	if len(z) != b*k || len(t) != b*k {
		return nil, nil, 0, 0, fmt.Errorf("xent: inputs are views, not contiguous (B,K) data")
	}
	return z, t, b, k, nil
}

func scalarF32(v G.Value) (float32, error) {
	switch s := v.(type) {
	case *G.F32:
		return float32(*s), nil
	case tensor.Tensor:
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
func logSumExp(row []float32) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}
