//go:build stokecuda

package cudaops

import (
	"errors"
	"fmt"

	gtensor "gorgonia.org/tensor"
)

// tensorEngine is the tensor.Engine the tape machines get on a GraphEngine
// (model.Engine.TensorEngine, gorgonia's WithEngine): gorgonia's own ops
// compute through it. The one it meets is the Add that Backpropagate
// inserts where a node has two consumers (a residual block's input, whose
// gradient is the sum of its consumers'), and a built-in Add in the forward
// graph; gorgonia's standard engine would read and write device memory
// from the host. Add runs on the engine's stream, in order with the ops.
//
// Its result goes where gorgonia's standard engine would put it: into the
// reuse tensor (a preallocated register), into a (UseUnsafe), or else
// into a device buffer of its own, one per pair of inputs, allocated on
// the first run and reused (the ops' outputs, and so the pairs, are the
// same from run to run).
type tensorEngine struct {
	g    *GraphEngine
	outs map[[2]uintptr]*gtensor.Dense
	adds int // Adds run, for the tests
}

var _ gtensor.Adder = (*tensorEngine)(nil)

// TensorEngine is model.Engine's: gorgonia's Add on device values.
func (g *GraphEngine) TensorEngine() gtensor.Engine {
	if g.te == nil {
		g.te = &tensorEngine{g: g, outs: map[[2]uintptr]*gtensor.Dense{}}
	}
	return g.te
}

var errHostAccess = errors.New("cudaops: gorgonia asked for host access to device memory")

// The tensor.Engine methods: the values are device memory, made by
// GraphEngine.NewValue; gorgonia must not allocate, fill or copy them.
func (*tensorEngine) AllocAccessible() bool { return false }
func (*tensorEngine) Alloc(int64) (gtensor.Memory, error) {
	return nil, errors.New("cudaops: gorgonia asked the device engine to allocate; values come from GraphEngine.NewValue")
}
func (*tensorEngine) Free(gtensor.Memory, int64) error                  { return nil } // the GraphEngine frees its memory
func (*tensorEngine) Memset(gtensor.Memory, interface{}) error          { return errHostAccess }
func (*tensorEngine) Memclr(gtensor.Memory)                             {}
func (*tensorEngine) Memcpy(_, _ gtensor.Memory) error                  { return errHostAccess }
func (*tensorEngine) Accessible(gtensor.Memory) (gtensor.Memory, error) { return nil, errHostAccess }
func (*tensorEngine) WorksWith(order gtensor.DataOrder) bool            { return order.IsRowMajor() }

// Add is c = a + b elementwise on the device.
func (te *tensorEngine) Add(a, b gtensor.Tensor, opts ...gtensor.FuncOpt) (gtensor.Tensor, error) {
	if !a.Shape().Eq(b.Shape()) {
		return nil, fmt.Errorf("cudaops: Add of shapes %v and %v", a.Shape(), b.Shape())
	}
	fo := gtensor.ParseFuncOpts(opts...)
	var c gtensor.Tensor
	switch {
	case fo.Incr() != nil:
		return nil, errors.New("cudaops: Add with an increment tensor is not supported")
	case fo.Reuse() != nil:
		c = fo.Reuse()
	case !fo.Safe():
		c = a
	default:
		key := [2]uintptr{a.Uintptr(), b.Uintptr()}
		out, ok := te.outs[key]
		if !ok {
			var err error
			if out, err = te.g.NewValue(a.Shape().Clone()); err != nil {
				return nil, err
			}
			gtensor.WithEngine(te)(out)
			te.outs[key] = out
		}
		c = out
	}
	if c.Shape().TotalSize() != a.Shape().TotalSize() {
		return nil, fmt.Errorf("cudaops: Add into %v from %v", c.Shape(), a.Shape())
	}
	n := a.Shape().TotalSize()
	te.adds++
	if err := te.g.run(func(v [5]buffer) error { return te.g.e.add(v[0], v[1], v[2], n) }, a, b, c); err != nil {
		return nil, err
	}
	return c, nil
}

func (*tensorEngine) AddScalar(gtensor.Tensor, interface{}, bool, ...gtensor.FuncOpt) (gtensor.Tensor, error) {
	return nil, errors.New("cudaops: Add of a scalar and a device tensor is not supported")
}
