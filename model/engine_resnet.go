package model

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"stoke/cpuops"
)

// Conv2dKernel is one convolution's kernels (cpuops.Conv2d's contract).
type Conv2dKernel interface {
	Forward(x, w, y G.Value) error
	BackwardData(w, dy, dx G.Value) error
	BackwardFilter(x, dy, dw G.Value) error
}

// BatchNormKernel is one BatchNorm's kernels (cpuops.BatchNorm's contract):
// Forward normalizes the first n rows (the rest of y is 0); in training with
// their batch statistics, updating runMean and runVar in place (momentum
// 0.1, the unbiased variance), otherwise with runMean and runVar. Backward
// is for the last training Forward, from its x, its y (the fused ReLU's
// mask) and dy.
type BatchNormKernel interface {
	Forward(x, gamma, beta, y, runMean, runVar G.Value, n int, training bool) error
	Backward(x, gamma, y, dy, dx, dgamma, dbeta G.Value) error
}

// BatchNormAddReLUKernel is a BasicBlock's end, y = ReLU(BatchNorm(x) + s)
// (cpuops.BatchNorm with Add): Forward as BatchNormKernel's, the rows from n
// on getting ReLU(s); Backward, for the last training Forward, writes the
// shortcut's gradient ds (dy where y > 0, else 0) and BatchNorm's dx,
// dgamma, dbeta from it. On the CPU it gives the bits of BatchNorm, then
// ReLU(a + b), and their backward; it saves a pass over memory each way.
type BatchNormAddReLUKernel interface {
	Forward(x, gamma, beta, s, y, runMean, runVar G.Value, n int, training bool) error
	Backward(x, gamma, y, dy, dx, ds, dgamma, dbeta G.Value) error
}

// MaxPoolKernel is one max-pool's kernels: Backward routes dy to the
// argmax of the last Forward.
type MaxPoolKernel interface {
	Forward(x, y G.Value) error
	Backward(dy, dx G.Value) error
}

var (
	_ Values  = cpuEngine{}
	_ Layers  = cpuEngine{}
	_ Updater = cpuEngine{}
)

func (e cpuEngine) NewConv2d(B, Cin, H, W, Cout, K, stride, pad, groups int) (Conv2dKernel, error) {
	k, err := cpuops.NewConv2d(B, Cin, H, W, Cout, K, stride, pad, groups)
	if err != nil {
		return nil, err
	}
	k.SetPrecision(e.prec)
	k.SetWinograd(e.winograd)
	if e.conv != nil {
		k.Share(e.conv)
	}
	return cpuConv2d{k}, nil
}

type cpuConv2d struct{ k *cpuops.Conv2d }

func (c cpuConv2d) Forward(x, w, y G.Value) error {
	a, err := host(x, w, y)
	if err == nil {
		c.k.Forward(a[0], a[1], a[2])
	}
	return err
}

func (c cpuConv2d) BackwardData(w, dy, dx G.Value) error {
	a, err := host(w, dy, dx)
	if err == nil {
		c.k.BackwardData(a[0], a[1], a[2])
	}
	return err
}

func (c cpuConv2d) BackwardFilter(x, dy, dw G.Value) error {
	a, err := host(x, dy, dw)
	if err == nil {
		c.k.BackwardFilter(a[0], a[1], a[2])
	}
	return err
}

func (cpuEngine) NewBatchNorm(B, C, HW int, relu bool) (BatchNormKernel, error) {
	k, err := cpuops.NewBatchNorm(B, C, HW, relu)
	if err != nil {
		return nil, err
	}
	return cpuBatchNorm{k}, nil
}

type cpuBatchNorm struct{ k *cpuops.BatchNorm }

func (b cpuBatchNorm) Forward(x, gamma, beta, y, runMean, runVar G.Value, n int, training bool) error {
	a, err := host(x, gamma, beta, y, runMean)
	if err != nil {
		return err
	}
	rv, err := f32(runVar)
	if err != nil {
		return fmt.Errorf("argument 5: %w", err)
	}
	b.k.Forward(a[0], a[1], a[2], a[3], a[4], rv, n, training)
	return nil
}

func (b cpuBatchNorm) Backward(x, gamma, y, dy, dx, dgamma, dbeta G.Value) error {
	a, err := host(x, gamma, y, dy, dx)
	if err != nil {
		return err
	}
	g, err1 := f32(dgamma)
	bb, err2 := f32(dbeta)
	if err := cmpErr(err1, err2); err != nil {
		return fmt.Errorf("dgamma, dbeta: %w", err)
	}
	b.k.Backward(a[0], a[1], a[2], a[3], a[4], g, bb)
	return nil
}

func (cpuEngine) NewBatchNormAddReLU(B, C, HW int) (BatchNormAddReLUKernel, error) {
	k, err := cpuops.NewBatchNormAddReLU(B, C, HW)
	if err != nil {
		return nil, err
	}
	return cpuBatchNormAddReLU{k}, nil
}

type cpuBatchNormAddReLU struct{ k *cpuops.BatchNorm }

func (b cpuBatchNormAddReLU) Forward(x, gamma, beta, s, y, runMean, runVar G.Value, n int, training bool) error {
	a, err := host(x, gamma, beta, s, y)
	if err != nil {
		return err
	}
	rm, err1 := f32(runMean)
	rv, err2 := f32(runVar)
	if err := cmpErr(err1, err2); err != nil {
		return fmt.Errorf("running statistics: %w", err)
	}
	b.k.ForwardAdd(a[0], a[1], a[2], a[3], a[4], rm, rv, n, training)
	return nil
}

func (b cpuBatchNormAddReLU) Backward(x, gamma, y, dy, dx, ds, dgamma, dbeta G.Value) error {
	a, err := host(x, gamma, y, dy, dx)
	if err != nil {
		return err
	}
	s, err1 := f32(ds)
	g, err2 := f32(dgamma)
	bb, err3 := f32(dbeta)
	if err := cmpErr(cmpErr(err1, err2), err3); err != nil {
		return fmt.Errorf("ds, dgamma, dbeta: %w", err)
	}
	b.k.BackwardAdd(a[0], a[1], a[2], a[3], a[4], s, g, bb)
	return nil
}

func (cpuEngine) NewMaxPool(B, C, H, W, K, stride, pad int) (MaxPoolKernel, error) {
	k, err := cpuops.NewMaxPool(B, C, H, W, K, stride, pad)
	if err != nil {
		return nil, err
	}
	return cpuMaxPool{k}, nil
}

type cpuMaxPool struct{ k *cpuops.MaxPool }

func (p cpuMaxPool) Forward(x, y G.Value) error {
	a, err := host(x, y)
	if err == nil {
		p.k.Forward(a[0], a[1])
	}
	return err
}

func (p cpuMaxPool) Backward(dy, dx G.Value) error {
	a, err := host(dy, dx)
	if err == nil {
		p.k.Backward(a[0], a[1])
	}
	return err
}

func (cpuEngine) Copy(dst, src G.Value) error {
	v, err := host(dst, src)
	if err != nil {
		return err
	}
	if len(v[0]) != len(v[1]) {
		return fmt.Errorf("copy of %d floats into %d", len(v[1]), len(v[0]))
	}
	copy(v[0], v[1])
	return nil
}
