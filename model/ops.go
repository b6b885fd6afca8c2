package model

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"stoke/gemm"
)

// Kernel names the matrix multiply the model's ops run on this machine, for
// the run to print once (e.g. "gemm: Go assembly AVX2+FMA 6x16 micro-kernel").
func Kernel() string { return gemm.Name() }

// KernelAt is Kernel at precision p: at tf32 and bf16 also how their
// products run (bf16 on the VDPBF16PS kernels where the CPU has them).
func KernelAt(p gemm.Precision) string {
	if p == gemm.FP32 {
		return gemm.Name()
	}
	return gemm.Name() + "; " + gemm.PrecisionName(p)
}

// WinogradNote is what opt.Winograd does on the CPU engine, for the start
// line: "" when off.
func WinogradNote(opt Options) string {
	switch {
	case !opt.Winograd:
		return ""
	case opt.Precision != gemm.FP32:
		return "; train.winograd changes nothing at " + opt.Precision.String() + " (fp32 only)"
	}
	return "; 3x3 convs by Winograd F(2x2,3x3) where it pays"
}

// The graph's layers are gorgonia Ops of ours whose work is done by the
// kernels of package cpuops (its package comment has the op table, the
// contract a device backend implements too). Each op owns its output
// value, allocated when the graph is built and returned by every run:
// the tape machine's Reset clears its registers, so it never offers a
// buffer back (docs/gorgonia.md, "Custom ops"). Gradients are
// ops of ours too, so the backward pass allocates nothing either. On the
// CPU engine the ResNets' activation gradients then trade their values
// for buffers shared by liveness (share.go).
//
// kernelOp is the one Op type; what it computes is its do function.
type kernelOp struct {
	name   string
	id     int   // unique in the model: gorgonia hash-conses nodes by op hash and children
	inDims []int // dims of each input, for the type
	shape  tensor.Shape
	out    G.Value // *tensor.Dense, or *G.F32 for a scalar
	do     func(in []G.Value) error
	diff   func(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) // nil: not differentiable
	wrt    []bool
	after  func() error // called once do has run (a gradient op: hand it to the GradSync)

	set    *opSet    // the model's ops, for the dry run (share.go)
	share  bool      // an activation gradient written by one op alone: its value may share memory (share.go)
	writer *kernelOp // the op whose do writes out, when not this one's (a handed-out gradient: handOut)
}

// opSet makes the model's ops, numbering them, with their output values
// on eng. The first failed allocation is kept in err.
type opSet struct {
	n   int
	eng Engine
	err error

	all   []*kernelOp
	trace *opTrace // during the dry run: each Do is recorded, none computes
}

func (s *opSet) op(name string, inDims []int, shape tensor.Shape) *kernelOp {
	s.n++
	op := &kernelOp{name: name, id: s.n, inDims: inDims, shape: shape, wrt: make([]bool, len(inDims)), set: s}
	s.all = append(s.all, op)
	switch {
	case len(shape) == 0:
		op.out = G.NewF32(0)
	default:
		v, err := s.eng.NewValue(shape)
		if err != nil {
			s.err = cmpErr(s.err, fmt.Errorf("%s: %w", name, err))
			v = tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float32))
		}
		op.out = v
	}
	return op
}

func cmpErr(old, err error) error {
	if old != nil {
		return old
	}
	return err
}

func (op *kernelOp) Arity() int { return len(op.inDims) }

func (op *kernelOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, 0, len(op.inDims)+1)
	for _, d := range op.inDims {
		if d == 0 {
			ts = append(ts, a)
		} else {
			ts = append(ts, G.TensorType{Dims: d, Of: a})
		}
	}
	if len(op.shape) == 0 {
		ts = append(ts, a)
	} else {
		ts = append(ts, G.TensorType{Dims: len(op.shape), Of: a})
	}
	return hm.NewFnType(ts...)
}

func (op *kernelOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != len(op.inDims) {
		return nil, fmt.Errorf("%s: want %d inputs, got %d", op.name, len(op.inDims), len(in))
	}
	if len(op.shape) == 0 {
		return tensor.ScalarShape(), nil
	}
	return op.shape.Clone(), nil
}

func (op *kernelOp) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != len(op.inDims) {
		return nil, fmt.Errorf("%s: want %d inputs, got %d", op.name, len(op.inDims), len(vals))
	}
	if t := op.set.trace; t != nil {
		t.record(op, vals)
		return op.out, nil
	}
	if err := op.do(vals); err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	if op.after != nil {
		if err := op.after(); err != nil {
			return nil, fmt.Errorf("%s: %w", op.name, err)
		}
	}
	return op.out, nil
}

func (op *kernelOp) ReturnsPtr() bool     { return false }
func (op *kernelOp) CallsExtern() bool    { return false } // true would make the compiler allocate a buffer per run
func (op *kernelOp) OverwritesInput() int { return -1 }
func (op *kernelOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "stoke/model.%s#%d", op.name, op.id)
}
func (op *kernelOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op *kernelOp) String() string { return op.name }

func (op *kernelOp) DiffWRT(n int) []bool { return op.wrt }

func (op *kernelOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.diff == nil {
		return nil, fmt.Errorf("%s has no gradient", op.name)
	}
	return op.diff(inputs, output, grad)
}

// f32 returns a value's float32 data without copying.
func f32(v G.Value) ([]float32, error) {
	if d, ok := v.(*tensor.Dense); ok && d.Dtype() == tensor.Float32 && d.IsNativelyAccessible() {
		return d.Float32s(), nil
	}
	return nil, fmt.Errorf("want a float32 dense tensor, got %T", v)
}

// f32s unpacks every input.
func f32s(vals []G.Value, dst [][]float32) error {
	for i, v := range vals {
		d, err := f32(v)
		if err != nil {
			return fmt.Errorf("input %d: %w", i, err)
		}
		dst[i] = d
	}
	return nil
}

func apply(op *kernelOp, in ...*G.Node) (*G.Node, error) { return G.ApplyOp(op, in...) }

// convBlock is y = ReLU(conv(x, w) + b), max-pooled when pooled. Its gradients: dx (when needDX:
// the first block's input is data and needs none), dw, and db, which the
// filter-gradient op computes alongside dw; the db op only hands it out,
// taking dw as input so that it runs after.
func (s *opSet) convBlock(k ConvKernel, B, Cin, H, W, Cout, K int, pool bool, x, w, b *G.Node, needDX bool) (*G.Node, error) {
	yShape, name := tensor.Shape{B, Cout, H, W}, "ConvBiasReLU"
	if pool {
		yShape, name = tensor.Shape{B, Cout, H / 2, W / 2}, "ConvBiasReLUPool"
	}
	fwd := s.op(name, []int{4, 4, 1}, yShape)
	fwd.wrt = []bool{needDX, true, true}
	fwd.do = func(v []G.Value) error { return k.Forward(v[0], v[1], v[2], fwd.out) }
	fwd.diff = func(inputs G.Nodes, y, dy *G.Node) (G.Nodes, error) {
		var dx *G.Node
		if needDX {
			op := s.op("ConvBackwardData", []int{4, 4, 4}, tensor.Shape{B, Cin, H, W})
			op.do = func(v []G.Value) error { return k.BackwardData(v[0], v[1], v[2], op.out) }
			var err error
			if dx, err = apply(op, inputs[1], y, dy); err != nil {
				return nil, err
			}
		}
		dwOp := s.op("ConvBackwardFilter", []int{4, 4, 4}, tensor.Shape{Cout, Cin, K, K})
		dbOp := s.op("ConvBiasGrad", []int{4}, tensor.Shape{Cout})
		dwOp.do = func(v []G.Value) error { return k.BackwardFilter(v[0], v[1], v[2], dwOp.out, dbOp.out) }
		dbOp.do = func([]G.Value) error { return nil }
		dw, err := apply(dwOp, inputs[0], y, dy)
		if err != nil {
			return nil, err
		}
		db, err := apply(dbOp, dw)
		if err != nil {
			return nil, err
		}
		return G.Nodes{dx, dw, db}, nil
	}
	return apply(fwd, x, w, b)
}

// avgPool is the global average pool (B,C,H,W) → (B,C).
func (s *opSet) avgPool(x *G.Node) (*G.Node, error) {
	sh := x.Shape()
	k, err := s.engine().NewAvgPool(sh[0]*sh[1], sh[2]*sh[3])
	if err != nil {
		return nil, err
	}
	fwd := s.op("GlobalAvgPool", []int{4}, tensor.Shape{sh[0], sh[1]})
	fwd.wrt = []bool{true}
	fwd.do = func(v []G.Value) error { return k.Forward(v[0], fwd.out) }
	fwd.diff = func(_ G.Nodes, _, dy *G.Node) (G.Nodes, error) {
		op := s.op("GlobalAvgPoolBackward", []int{2}, sh.Clone())
		op.do = func(v []G.Value) error { return k.Backward(v[0], op.out) }
		dx, err := apply(op, dy)
		return G.Nodes{dx}, err
	}
	return apply(fwd, x)
}

// engine is the set's engine, the CPU's when none was given.
func (s *opSet) engine() Engine {
	if s.eng.Layers == nil {
		return CPUEngine()
	}
	return s.eng
}

// linear is z = h·w + b for h (B,C), w (C,N), b (N).
func (s *opSet) linear(h, w, b *G.Node) (*G.Node, error) {
	B, C, N := h.Shape()[0], h.Shape()[1], w.Shape()[1]
	k, err := s.engine().NewLinear(B, C, N)
	if err != nil {
		return nil, err
	}
	fwd := s.op("Linear", []int{2, 2, 1}, tensor.Shape{B, N})
	fwd.wrt = []bool{true, true, true}
	fwd.do = func(v []G.Value) error { return k.Forward(v[0], v[1], v[2], fwd.out) }
	fwd.diff = func(inputs G.Nodes, _, dz *G.Node) (G.Nodes, error) {
		dhOp := s.op("LinearBackwardData", []int{2, 2}, tensor.Shape{B, C})
		dwOp := s.op("LinearBackwardWeight", []int{2, 2}, tensor.Shape{C, N})
		dbOp := s.op("LinearBackwardBias", []int{2}, tensor.Shape{N})
		dhOp.do = func(v []G.Value) error { return k.BackwardData(v[0], v[1], dhOp.out) }
		dwOp.do = func(v []G.Value) error { return k.BackwardWeight(v[0], v[1], dwOp.out) }
		dbOp.do = func(v []G.Value) error { return k.BackwardBias(v[0], dbOp.out) }
		dh, err := apply(dhOp, inputs[1], dz)
		if err != nil {
			return nil, err
		}
		dw, err := apply(dwOp, inputs[0], dz)
		if err != nil {
			return nil, err
		}
		db, err := apply(dbOp, dz)
		if err != nil {
			return nil, err
		}
		return G.Nodes{dh, dw, db}, nil
	}
	return apply(fwd, h, w, b)
}
