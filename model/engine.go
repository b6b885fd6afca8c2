package model

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"stoke/cpuops"
)

// Engine runs the graph's layers on one device: every op of the cnn arch
// (ops.go, loss.go) calls it, and the ResNets' ops call its ResNetEngine
// extension (engine_resnet.go), so the same gorgonia graph — its gradient and
// its order of execution — runs on the CPU (CPUEngine, cpuops's kernels) and
// on a GPU (cudaops's engine, kernels.cu on device memory).
//
// Values are float32 *tensor.Dense made by NewValue: host slices on the CPU,
// device memory elsewhere (tensor.FromMemory; gorgonia only reads their
// shapes, see docs/cuda.md "What gorgonia does to device values"). An
// engine must accept being called from any goroutine (the tape machine runs
// ops on one of its own): a GPU engine makes its context current itself.
// Calls on one engine are never concurrent.
type Engine interface {
	// Host says values are host slices: the model then reads and writes
	// them in place instead of copying through Upload and Download.
	Host() bool
	NewValue(shape tensor.Shape) (*tensor.Dense, error) // zeroed
	Upload(dst G.Value, src []float32) error
	Download(dst []float32, src G.Value) error // complete when it returns
	// TensorEngine is what gorgonia's own ops compute with on this
	// engine's values: the Add that Backpropagate inserts where a node has
	// two consumers (a residual block's input) calls its tensor.Adder.
	// nil on the host: gorgonia's standard engine.
	TensorEngine() tensor.Engine

	// NewConv is one conv block of a fixed shape: y = ReLU(conv(x, w) + b),
	// KxK, stride 1, pad K/2, max-pooled 2x2 when pool (cpuops.Conv).
	NewConv(B, Cin, H, W, Cout, K int, pool bool) (ConvKernel, error)
	AvgPool(x, y G.Value, BC, HW int) error           // (B,C,H,W) → (B,C)
	AvgPoolBackward(dy, dx G.Value, BC, HW int) error // (B,C) → (B,C,H,W)
	// Linear is z = h·w + b for h (B,C), w (C,N), b (N); and its gradients.
	Linear(B, C, N int, h, w, b, z G.Value) error
	LinearBackwardData(B, C, N int, w, dz, dh G.Value) error
	LinearBackwardWeight(B, C, N int, h, dz, dw G.Value) error
	LinearBackwardBias(B, N int, dz, db G.Value) error
	// Xent is Σ t·(logsumexp(z) − z) over (B,N) logits z and a weighted
	// target t; XentBackward is dz = g·(softmax(z)·Σt − t).
	Xent(B, N int, z, t G.Value) (float64, error)
	XentBackward(B, N int, z, t G.Value, g float32, dz G.Value) error
	// Updater is the optimizers' kernels (Optimizer): every arch can use
	// every optimizer on every engine.
	Updater
}

// ConvKernel is one conv block's kernels (cpuops.Conv's contract): y is the
// block's output, which the backward reads for the ReLU mask (and, pooled,
// the kernel's own argmax); BackwardFilter computes db beside dw.
type ConvKernel interface {
	Forward(x, w, b, y G.Value) error
	BackwardData(w, y, dy, dx G.Value) error
	BackwardFilter(x, y, dy, dw, db G.Value) error
}

// CPUEngine is the host engine: cpuops's kernels on the values' slices.
// Each call returns an engine of its own, whose ResNet convolutions share
// their filter-gradient scratch (cpuops.Conv2dShared): one model's, whose
// calls are never concurrent.
func CPUEngine() Engine { return cpuEngine{conv: new(cpuops.Conv2dShared)} }

type cpuEngine struct {
	conv *cpuops.Conv2dShared // nil: each conv its own
}

func (cpuEngine) Host() bool { return true }

func (cpuEngine) TensorEngine() tensor.Engine { return nil }

func (cpuEngine) NewValue(shape tensor.Shape) (*tensor.Dense, error) {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(make([]float32, shape.TotalSize()))), nil
}

func (cpuEngine) Upload(dst G.Value, src []float32) error {
	d, err := f32(dst)
	if err != nil {
		return err
	}
	if len(d) != len(src) {
		return fmt.Errorf("upload of %d floats into %d", len(src), len(d))
	}
	copy(d, src)
	return nil
}

func (cpuEngine) Download(dst []float32, src G.Value) error {
	s, err := f32(src)
	if err != nil {
		return err
	}
	copy(dst, s)
	return nil
}

// host unpacks up to 5 values into slices, stopping at the first that is
// not one; an array, so that a step allocates nothing here.
func host(vals ...G.Value) (out [5][]float32, err error) {
	for i, v := range vals {
		d, err := f32(v)
		if err != nil {
			return out, fmt.Errorf("argument %d: %w", i, err)
		}
		out[i] = d
	}
	return out, nil
}

func (cpuEngine) NewConv(B, Cin, H, W, Cout, K int, pool bool) (ConvKernel, error) {
	c, err := cpuops.NewConv(B, Cin, H, W, Cout, K, pool)
	if err != nil {
		return nil, err
	}
	return cpuConv{c}, nil
}

type cpuConv struct{ k *cpuops.Conv }

func (c cpuConv) Forward(x, w, b, y G.Value) error {
	a, err := host(x, w, b, y)
	if err == nil {
		c.k.Forward(a[0], a[1], a[2], a[3])
	}
	return err
}

func (c cpuConv) BackwardData(w, y, dy, dx G.Value) error {
	a, err := host(w, y, dy, dx)
	if err == nil {
		c.k.BackwardData(a[0], a[1], a[2], a[3])
	}
	return err
}

func (c cpuConv) BackwardFilter(x, y, dy, dw, db G.Value) error {
	a, err := host(x, y, dy, dw, db)
	if err == nil {
		c.k.BackwardFilter(a[0], a[1], a[2], a[3], a[4])
	}
	return err
}

func (cpuEngine) AvgPool(x, y G.Value, _, _ int) error {
	a, err := host(x, y)
	if err == nil {
		cpuops.AvgPoolForward(a[0], a[1])
	}
	return err
}

func (cpuEngine) AvgPoolBackward(dy, dx G.Value, _, _ int) error {
	a, err := host(dy, dx)
	if err == nil {
		cpuops.AvgPoolBackward(a[0], a[1])
	}
	return err
}

func (cpuEngine) Linear(B, C, N int, h, w, b, z G.Value) error {
	a, err := host(h, w, b, z)
	if err == nil {
		cpuops.LinearForward(B, C, N, a[0], a[1], a[2], a[3])
	}
	return err
}

func (cpuEngine) LinearBackwardData(B, C, N int, w, dz, dh G.Value) error {
	a, err := host(w, dz, dh)
	if err == nil {
		cpuops.LinearBackwardData(B, C, N, a[0], a[1], a[2])
	}
	return err
}

func (cpuEngine) LinearBackwardWeight(B, C, N int, h, dz, dw G.Value) error {
	a, err := host(h, dz, dw)
	if err == nil {
		cpuops.LinearBackwardWeight(B, C, N, a[0], a[1], a[2])
	}
	return err
}

func (cpuEngine) LinearBackwardBias(B, N int, dz, db G.Value) error {
	a, err := host(dz, db)
	if err == nil {
		cpuops.LinearBackwardBias(B, N, a[0], a[1])
	}
	return err
}

func (cpuEngine) Xent(B, N int, z, t G.Value) (float64, error) {
	a, err := host(z, t)
	if err != nil {
		return 0, err
	}
	return cpuops.XentForward(B, N, a[0], a[1]), nil
}

func (cpuEngine) XentBackward(B, N int, z, t G.Value, g float32, dz G.Value) error {
	a, err := host(z, t, dz)
	if err == nil {
		cpuops.XentBackward(B, N, a[0], a[1], g, a[2])
	}
	return err
}

func (cpuEngine) SGD(w, grad, v G.Value, _ int, lr, momentum, wd float32, first bool) error {
	a, err := host(w, grad, v)
	if err == nil {
		SGDUpdate(a[0], a[1], a[2], lr, momentum, wd, first)
	}
	return err
}

func (cpuEngine) SGDNesterov(w, grad, v G.Value, _ int, lr, momentum, wd float32, first bool) error {
	a, err := host(w, grad, v)
	if err == nil {
		SGDNesterovUpdate(a[0], a[1], a[2], lr, momentum, wd, first)
	}
	return err
}

func (cpuEngine) AdamW(w, grad, m, v G.Value, _ int, lr, b1, b2, eps, wd float32, t int64) error {
	a, err := host(w, grad, m, v)
	if err == nil {
		AdamWUpdate(a[0], a[1], a[2], a[3], lr, b1, b2, eps, wd, t)
	}
	return err
}
