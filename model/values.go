package model

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"stoke/cpuops"
	"stoke/gemm"
)

// Engine runs the graph's layers on one device: every op (ops.go,
// resnet_ops.go, loss.go) calls it, so the same gorgonia graph — its
// gradient and its order of execution — runs on the CPU (CPUEngine,
// cpuops's kernels) and on a GPU (cudaops's GraphEngine, kernels.cu on
// device memory). It is its three roles, each a small interface that the
// model calls on its own: its memory (Values), its layers' kernels
// (Layers: factories of one layer of a fixed shape each) and its
// optimizers' updates (Updater). One type may play all three (cpuEngine,
// GraphEngine); a wrapper replaces one role and keeps the others
// (paritytest.Tap wraps Layers).
//
// An engine must accept being called from any goroutine (the tape machine
// runs ops on one of its own): a GPU engine makes its context current
// itself. Calls on one engine are never concurrent.
type Engine struct {
	Values
	Layers
	Updater

	// Precision is what its conv and linear layers round their GEMM
	// inputs to (CPUEngine's CPUPrecision); NewOn refuses Options.Precision
	// of another. The zero value is fp32.
	Precision gemm.Precision
}

// Values is an engine's memory: float32 *tensor.Dense of a shape, their
// copies to and from the host and between values. On the CPU a value is a
// host slice; on a device, device memory (tensor.FromMemory; gorgonia only
// reads their shapes, see docs/cuda.md "What gorgonia does to device
// values"). The model speaks to both alike: it keeps a host slice beside
// each value it reads or writes (ValueOf), and Upload and Read between the
// two are the engine's to do or to skip, so the model has no host or
// device branch.
type Values interface {
	NewValue(shape tensor.Shape) (*tensor.Dense, error) // zeroed
	// ValueOf makes a value of shape holding data: on the host, data
	// itself (the value is that slice, so Upload and Read between the two
	// copy nothing); on a device, its own memory holding a copy of data.
	ValueOf(data []float32, shape tensor.Shape) (*tensor.Dense, error)
	// Upload copies src into dst, complete when it returns (src may be
	// reused at once); nothing to copy when src is dst's own memory.
	Upload(dst G.Value, src []float32) error
	// Read returns src's values on the host: src's own memory where the
	// engine's values are host slices, else buf (src's size; nil: a new
	// one), which it downloads into, complete when it returns. A caller
	// keeps the result as the next call's buf; one that writes into it
	// Uploads it back (a no-op on the host).
	Read(buf []float32, src G.Value) ([]float32, error)
	Copy(dst, src G.Value) error // same sizes
	// TensorEngine is what gorgonia's own ops compute with on this
	// engine's values: the Add that Backpropagate inserts where a node has
	// two consumers (a residual block's input) calls its tensor.Adder.
	// nil: gorgonia's standard engine (host slices).
	TensorEngine() tensor.Engine
}

func (cpuEngine) TensorEngine() tensor.Engine { return cpuTensor{} }

func (cpuEngine) NewValue(shape tensor.Shape) (*tensor.Dense, error) {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float32, shape.TotalSize()))), nil
}

func (cpuEngine) ValueOf(data []float32, shape tensor.Shape) (*tensor.Dense, error) {
	if len(data) != shape.TotalSize() {
		return nil, fmt.Errorf("a value of shape %v over %d floats", shape, len(data))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data)), nil
}

// cpuTensor is the CPU engine's tensor.Engine: gorgonia's standard
// engine, but for the Add that Backpropagate inserts where a node has two
// consumers (a residual block's input), which it runs on the cores the
// ops use (cpuops.Parallel) where the standard engine makes one serial
// pass: 1.5% of resnet50's step on 2 cores (batch 4, 224 px), the other
// core idle meanwhile. It writes where the standard engine would (into
// the reuse tensor, or into a with UseUnsafe) and each sum a[i] + b[i]
// is the one float32 addition the standard engine does: the same bits.
// Anything else (other types, views, an increment, a new tensor) is the
// standard engine's. The machines set it on every value they bind and
// every op's result (gorgonia's WithEngine), so tensor.Add finds it on
// the gradients the fan-out sums.
type cpuTensor struct{ tensor.StdEng }

var _ tensor.Adder = cpuTensor{}

func (e cpuTensor) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	fo := tensor.ParseFuncOpts(opts...)
	var c tensor.Tensor
	switch {
	case fo.Incr() != nil:
	case fo.Reuse() != nil:
		c = fo.Reuse()
	case !fo.Safe():
		c = a
	}
	x, y, z := flat32(a), flat32(b), flat32(c)
	if x == nil || y == nil || z == nil || len(x) != len(y) || len(z) != len(x) || !a.Shape().Eq(b.Shape()) {
		return e.StdEng.Add(a, b, opts...)
	}
	cpuops.Parallel(len(z), addPart, func(lo, hi int) { cpuops.Add(z[lo:hi], x[lo:hi], y[lo:hi]) })
	return c, nil
}

// addPart is the fewest elements a part of cpuTensor's Add gets.
const addPart = 1 << 15

// flat32 is t's float32s when t is a dense float32 tensor laid out
// contiguously (not a view), else nil.
func flat32(t tensor.Tensor) []float32 {
	d, ok := t.(*tensor.Dense)
	if !ok || d == nil || d.Dtype() != tensor.Float32 || d.IsMaterializable() || !d.DataOrder().IsRowMajor() {
		return nil
	}
	f := d.Float32s()
	if len(f) != d.Shape().TotalSize() {
		return nil
	}
	return f
}

func (cpuEngine) Upload(dst G.Value, src []float32) error {
	d, err := f32(dst)
	if err != nil {
		return err
	}
	if len(d) != len(src) {
		return fmt.Errorf("upload of %d floats into %d", len(src), len(d))
	}
	if !same(d, src) {
		copy(d, src)
	}
	return nil
}

func (cpuEngine) Read(_ []float32, src G.Value) ([]float32, error) { return f32(src) }

// same says a and b are one slice.
func same(a, b []float32) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
