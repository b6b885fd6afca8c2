package model

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"stoke/cpuops"
	"stoke/gemm"
)

// Layers makes the kernels of one layer of a fixed shape: each keeps what
// its backward needs of its forward (a max-pool's argmax), and its
// scratch.
type Layers interface {
	// NewConv is one conv block of the cnn: y = ReLU(conv(x, w) + b),
	// KxK, stride 1, pad K/2, max-pooled 2x2 when pool: a Conv2d with
	// the bias + ReLU (+ pool) epilogue (cpuops.NewConvBlock).
	NewConv(B, Cin, H, W, Cout, K int, pool bool) (ConvKernel, error)
	// NewConv2d is y = conv(x, w) over (B,Cin,H,W) with a
	// (Cout,Cin/groups,K,K) filter, stride and zero padding pad, no bias,
	// as nn.Conv2d(groups=): output channels [g·Cout/groups, (g+1)·Cout/groups)
	// see only input channels [g·Cin/groups, (g+1)·Cin/groups); Cin and Cout
	// are multiples of groups (cpuops.Conv2d).
	NewConv2d(B, Cin, H, W, Cout, K, stride, pad, groups int) (Conv2dKernel, error)
	// NewBatchNorm is BatchNorm2d(C) over (B,C,HW), ReLU fused after it
	// when relu (cpuops.BatchNorm).
	NewBatchNorm(B, C, HW int, relu bool) (BatchNormKernel, error)
	// NewBatchNormAddReLU is y = ReLU(BatchNorm2d(C)(x) + s) over
	// (B,C,HW), a BasicBlock's bn2 and residual join
	// (cpuops.NewBatchNormAddReLU).
	NewBatchNormAddReLU(B, C, HW int) (BatchNormAddReLUKernel, error)
	// NewMaxPool is MaxPool2d(K, stride, pad) over (B,C,H,W) (cpuops.MaxPool).
	NewMaxPool(B, C, H, W, K, stride, pad int) (MaxPoolKernel, error)
	// NewAvgPool is the global average pool (B,C,H,W) → (B,C), BC = B·C
	// rows of HW.
	NewAvgPool(BC, HW int) (AvgPoolKernel, error)
	// NewLinear is z = h·w + b for h (B,C), w (C,N), b (N).
	NewLinear(B, C, N int) (LinearKernel, error)
	// NewXent is the loss over (B,N) logits (loss.go).
	NewXent(B, N int) (XentKernel, error)
}

// AvgPoolKernel is the global average pool and its gradient.
type AvgPoolKernel interface {
	Forward(x, y G.Value) error
	Backward(dy, dx G.Value) error
}

// LinearKernel is z = h·w + b and its gradients.
type LinearKernel interface {
	Forward(h, w, b, z G.Value) error
	BackwardData(w, dz, dh G.Value) error
	BackwardWeight(h, dz, dw G.Value) error
	BackwardBias(dz, db G.Value) error
}

// XentKernel is Σ t·(logsumexp(z) − z) over logits z and a weighted target
// t; Backward is dz = g·(softmax(z)·Σt − t).
type XentKernel interface {
	Forward(z, t G.Value) (float64, error)
	Backward(z, t G.Value, g float32, dz G.Value) error
}

// ConvKernel is one conv block's kernels (cpuops.NewConvBlock's): y is the
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
// calls are never concurrent. With no option it runs at fp32.
func CPUEngine(opts ...CPUOption) Engine {
	c := cpuEngine{conv: new(cpuops.Conv2dShared)}
	for _, o := range opts {
		o(&c)
	}
	return Engine{Values: c, Layers: c, Updater: c, Precision: c.prec}
}

// A CPUOption configures CPUEngine.
type CPUOption func(*cpuEngine)

// CPUPrecision makes the engine's conv and linear layers round their GEMM
// inputs to p (cpuops.Conv2d.SetPrecision, cpuops.LinearForwardPrec): the
// reference rounding every engine's tf32 and bf16 are tested against.
func CPUPrecision(p gemm.Precision) CPUOption { return func(e *cpuEngine) { e.prec = p } }

// CPUWinograd makes the engine's 3x3 stride-1 convs (not the cnn's conv
// blocks) compute all three passes by Winograd's F(2x2, 3x3)
// where it applies and pays (cpuops.Conv2d.SetWinograd), at fp32: 2.25
// times fewer multiply-adds, a different float rounding (within the bound
// cpuops' TestWinogradWithinBound checks), not the im2col GEMM's bits.
func CPUWinograd(on bool) CPUOption { return func(e *cpuEngine) { e.winograd = on } }

type cpuEngine struct {
	conv     *cpuops.Conv2dShared // nil: each conv its own
	prec     gemm.Precision
	winograd bool
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

func (e cpuEngine) NewConv(B, Cin, H, W, Cout, K int, pool bool) (ConvKernel, error) {
	c, err := cpuops.NewConvBlock(B, Cin, H, W, Cout, K, pool)
	if err != nil {
		return nil, err
	}
	c.SetPrecision(e.prec)
	if e.conv != nil {
		c.Share(e.conv)
	}
	return cpuConv{c}, nil
}

type cpuConv struct{ k *cpuops.Conv2d }

func (c cpuConv) Forward(x, w, b, y G.Value) error {
	a, err := host(x, w, b, y)
	if err == nil {
		c.k.ForwardBlock(a[0], a[1], a[2], a[3])
	}
	return err
}

func (c cpuConv) BackwardData(w, y, dy, dx G.Value) error {
	a, err := host(w, y, dy, dx)
	if err == nil {
		c.k.BackwardDataBlock(a[0], a[1], a[2], a[3])
	}
	return err
}

func (c cpuConv) BackwardFilter(x, y, dy, dw, db G.Value) error {
	a, err := host(x, y, dy, dw, db)
	if err == nil {
		c.k.BackwardFilterBlock(a[0], a[1], a[2], a[3], a[4])
	}
	return err
}

func (cpuEngine) NewAvgPool(BC, HW int) (AvgPoolKernel, error) { return cpuAvgPool{}, nil }

type cpuAvgPool struct{}

func (cpuAvgPool) Forward(x, y G.Value) error {
	a, err := host(x, y)
	if err == nil {
		cpuops.AvgPoolForward(a[0], a[1])
	}
	return err
}

func (cpuAvgPool) Backward(dy, dx G.Value) error {
	a, err := host(dy, dx)
	if err == nil {
		cpuops.AvgPoolBackward(a[0], a[1])
	}
	return err
}

func (e cpuEngine) NewLinear(B, C, N int) (LinearKernel, error) {
	return cpuLinear{B, C, N, e.prec}, nil
}

type cpuLinear struct {
	B, C, N int
	prec    gemm.Precision
}

func (l cpuLinear) Forward(h, w, b, z G.Value) error {
	a, err := host(h, w, b, z)
	if err == nil {
		cpuops.LinearForwardPrec(l.prec, l.B, l.C, l.N, a[0], a[1], a[2], a[3])
	}
	return err
}

func (l cpuLinear) BackwardData(w, dz, dh G.Value) error {
	a, err := host(w, dz, dh)
	if err == nil {
		cpuops.LinearBackwardDataPrec(l.prec, l.B, l.C, l.N, a[0], a[1], a[2])
	}
	return err
}

func (l cpuLinear) BackwardWeight(h, dz, dw G.Value) error {
	a, err := host(h, dz, dw)
	if err == nil {
		cpuops.LinearBackwardWeightPrec(l.prec, l.B, l.C, l.N, a[0], a[1], a[2])
	}
	return err
}

func (l cpuLinear) BackwardBias(dz, db G.Value) error {
	a, err := host(dz, db)
	if err == nil {
		cpuops.LinearBackwardBias(l.B, l.N, a[0], a[1])
	}
	return err
}

func (cpuEngine) NewXent(B, N int) (XentKernel, error) { return cpuXent{B, N}, nil }

type cpuXent struct{ B, N int }

func (x cpuXent) Forward(z, t G.Value) (float64, error) {
	a, err := host(z, t)
	if err != nil {
		return 0, err
	}
	return cpuops.XentForward(x.B, x.N, a[0], a[1]), nil
}

func (x cpuXent) Backward(z, t G.Value, g float32, dz G.Value) error {
	a, err := host(z, t, dz)
	if err == nil {
		cpuops.XentBackward(x.B, x.N, a[0], a[1], g, a[2])
	}
	return err
}

func (cpuEngine) SGD(w, grad, v G.Value, _ int, lr, momentum, wd float32, first bool) error {
	a, err := host(w, grad, v)
	if err == nil {
		w, g, v := a[0], a[1], a[2]
		inParallel(len(w), func(lo, hi int) { SGDUpdate(w[lo:hi], g[lo:hi], part(v, len(w), lo, hi), lr, momentum, wd, first) })
	}
	return err
}

func (cpuEngine) SGDNesterov(w, grad, v G.Value, _ int, lr, momentum, wd float32, first bool) error {
	a, err := host(w, grad, v)
	if err == nil {
		w, g, v := a[0], a[1], a[2]
		inParallel(len(w), func(lo, hi int) { SGDNesterovUpdate(w[lo:hi], g[lo:hi], v[lo:hi], lr, momentum, wd, first) })
	}
	return err
}

func (cpuEngine) AdamW(w, grad, m, v G.Value, _ int, lr, b1, b2, eps, wd float32, t int64) error {
	a, err := host(w, grad, m, v)
	if err == nil {
		w, g, m, v := a[0], a[1], a[2], a[3]
		inParallel(len(w), func(lo, hi int) { AdamWUpdate(w[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], lr, b1, b2, eps, wd, t) })
	}
	return err
}

// inParallel runs f over [0, n) in contiguous parts on the cores the ops
// use, when n is large enough to pay for them (cpuops.Parallel). The
// optimizers' updates go element by element, so the parts give the bits
// one loop gives, on any core count; on one core a model's update was a
// serial pass over all its weights and their state (4.6% of resnet50's
// step on 2 cores).
func inParallel(n int, f func(lo, hi int)) { cpuops.Parallel(n, parallelMin, f) }

// parallelMin is the fewest elements a part of inParallel gets.
const parallelMin = 1 << 15

// part is v[lo:hi] where v holds n values (a momentum buffer), else v (an
// unused one: SGD without momentum).
func part(v []float32, n, lo, hi int) []float32 {
	if len(v) != n {
		return v
	}
	return v[lo:hi]
}
