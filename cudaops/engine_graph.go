//go:build stokecuda

package cudaops

import (
	"errors"
	"fmt"

	"gorgonia.org/cu"
	G "gorgonia.org/gorgonia"
	gtensor "gorgonia.org/tensor"

	"stoke/cpuops"
	"stoke/model"
)

// GraphEngine is a model.Engine on a GPU (Engine), all three roles: the gorgonia graph's ops launch
// kernels.cu's kernels, in order, on one stream, on values that are device
// memory (float32 *gtensor.Dense over a cuMemAlloc pointer, which gorgonia
// only reads the shape of). Every call makes the device's context current on
// the calling thread first (Device.do): the tape machine runs ops on a
// goroutine of its own, which moves between OS threads from run to run.
//
// The loss (B·K logits against the weighted target): inside a Backend, on
// the device (score: the kernels xent_loss and xent_grad build the target
// from the step's labels, write the loss and hits into the Backend's step
// ring and flag a non-finite loss; the engine is then a model.StepScorer);
// on an engine of its own, on the host from downloaded logits, as the CPU
// engine does, and its gradient uploaded. Uploads wait for their copy, so
// the caller may reuse its slice at once.
type GraphEngine struct {
	d      *Device
	e      *gpuEngine
	s      cu.Stream
	closed bool
	shared bool      // e and s belong to a Backend, which frees them
	z, t   []float32 // the loss's host scratch
	dz     []float32
	te     *tensorEngine // TensorEngine: gorgonia's Add on the device
	ws     buffer        // the convs' shared workspace (engine_resnet.go)
	wsNeed int           // its size: the largest conv's Workspace
	score  *stepScore    // set by a Backend: the loss stays on the device
}

// stepScore is where the step being run keeps its loss on the device: its
// labels (n valid rows, on the device), the label smoothing, and its slot
// in the Backend's result ring. The Backend sets it before each step's
// graph runs.
type stepScore struct {
	on     bool // false: the loss goes through the host (a GradSync, or testHostLoss)
	labels devBuf
	n      int
	eps    float32
	ring   devBuf
	slot   int
	step   int // the Backend's step count, for the non-finite flag
}

var _ model.StepScorer = (*GraphEngine)(nil)

// ScoresSteps reports whether the loss of the steps stays on the device.
func (g *GraphEngine) ScoresSteps() bool { return g.score != nil && g.score.on }

// CommitCopy is Copy unless a step's loss has been non-finite (the flag
// that xent_loss sets).
func (g *GraphEngine) CommitCopy(dst, src G.Value) error {
	if size(dst) != size(src) {
		return fmt.Errorf("cudaops: copy of %d floats into %d", size(src), size(dst))
	}
	return g.run(func(v [5]buffer) error { return g.e.copyUnless(v[1], v[0], size(dst)) }, dst, src)
}

var (
	_ model.Values  = (*GraphEngine)(nil)
	_ model.Layers  = (*GraphEngine)(nil)
	_ model.Updater = (*GraphEngine)(nil)
)

// NewGraphEngine loads the kernels on d and makes the engine's stream.
// Close it after the models built on it.
func NewGraphEngine(d *Device) (*GraphEngine, error) {
	g := &GraphEngine{d: d}
	err := d.do(func() error {
		var err error
		if g.s, err = cu.MakeStream(cu.NonBlocking); err != nil {
			return err
		}
		g.e, err = newGPUEngine(g.s)
		return err
	})
	if err != nil {
		g.Close()
		return nil, fmt.Errorf("cudaops: %w", err)
	}
	return g, nil
}

// Close frees every value the engine made, its kernels and its stream.
func (g *GraphEngine) Close() {
	if g.closed {
		return
	}
	g.closed = true
	if g.shared {
		return
	}
	g.d.do(func() error {
		if g.e != nil {
			g.s.Synchronize()
			g.e.free()
		}
		g.s.Destroy()
		return nil
	})
}

func (g *GraphEngine) do(f func() error) error {
	if g.closed {
		return errors.New("cudaops: the engine is closed")
	}
	return g.d.do(f)
}

// buf is a value's device memory.
func buf(v G.Value) (devBuf, error) {
	d, ok := v.(*gtensor.Dense)
	if !ok || d.Dtype() != gtensor.Float32 {
		return devBuf{}, fmt.Errorf("cudaops: want a float32 device tensor, got %T", v)
	}
	return devBuf{cu.DevicePtr(d.Uintptr()), d.Shape().TotalSize()}, nil
}

// bufs unpacks up to 5 values.
func bufs(vals ...G.Value) (out [5]buffer, err error) {
	for i, v := range vals {
		b, err := buf(v)
		if err != nil {
			return out, fmt.Errorf("argument %d: %w", i, err)
		}
		out[i] = b
	}
	return out, nil
}

// run unpacks vals and runs f on them with the context current.
func (g *GraphEngine) run(f func(b [5]buffer) error, vals ...G.Value) error {
	b, err := bufs(vals...)
	if err != nil {
		return err
	}
	return g.do(func() error { return f(b) })
}

func (g *GraphEngine) NewValue(shape gtensor.Shape) (*gtensor.Dense, error) {
	n := shape.TotalSize()
	var b buffer
	err := g.do(func() error {
		var err error
		if b, err = g.e.alloc(n); err != nil {
			return err
		}
		return g.s.Synchronize() // the zeroing
	})
	if err != nil {
		return nil, err
	}
	p := b.(devBuf).p
	return gtensor.New(gtensor.Of(gtensor.Float32), gtensor.WithShape(shape...), gtensor.FromMemory(uintptr(p), uintptr(4*max(n, 1)))), nil
}

func (g *GraphEngine) Upload(dst G.Value, src []float32) error {
	return g.run(func(b [5]buffer) error {
		if err := g.e.upload(b[0], src); err != nil {
			return err
		}
		return g.s.Synchronize()
	}, dst)
}

func (g *GraphEngine) Download(dst []float32, src G.Value) error {
	return g.run(func(b [5]buffer) error {
		if n := b[0].(devBuf).n; len(dst) != n {
			return fmt.Errorf("cudaops: download of %d floats into %d", n, len(dst))
		}
		return g.e.download(dst, b[0])
	}, src)
}

// gpuConv is one conv block of the cnn: the Conv2d kernels (stride 1, pad
// K/2; kernels_resnet.go) with the bias + ReLU epilogue, and with pool the
// 2x2 max-pool (max_pool with K = S = 2). The im2col matrix and the GEMM
// output live in the engine's shared conv workspace; the layer keeps the
// gradient before the ReLU (dpre, NCHW), with pool the full-size
// activations, and the argmax.
type gpuConv struct {
	g      *GraphEngine
	s      convShape
	ps     poolShape // with pool
	pool   bool
	dpre   buffer // with pool, the full-size output's gradient, masked in place
	yFull  buffer // with pool
	arg    buffer // with pool
	dReady bool   // dpre holds this run's gradient before the ReLU
}

func (g *GraphEngine) NewConv(B, Cin, H, W, Cout, K int, pool bool) (model.ConvKernel, error) {
	if _, err := cpuops.NewConvBlock(B, Cin, H, W, Cout, K, pool); err != nil { // the shape check
		return nil, err
	}
	s := convShape{B: B, Cin: Cin, H: H, W: W, Cout: Cout, K: K, Stride: 1, Pad: K / 2}
	if err := s.validate(); err != nil {
		return nil, err
	}
	g.wsNeed = max(g.wsNeed, s.Workspace())
	c := &gpuConv{g: g, s: s, pool: pool, ps: poolShape{BC: B * Cout, H: H, W: W, K: 2, Stride: 2}}
	err := g.do(func() error {
		var errs [3]error
		c.dpre, errs[0] = g.e.alloc(s.OutLen())
		if pool {
			c.yFull, errs[1] = g.e.alloc(s.OutLen())
			c.arg, errs[2] = g.e.allocInt32(c.ps.OutLen())
		}
		if err := first(errs[:]...); err != nil {
			return err
		}
		return g.s.Synchronize()
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *gpuConv) Forward(x, w, b, y G.Value) error {
	e := c.g.e
	return c.g.runConv(func(a [5]buffer, ws buffer) error {
		c.dReady = false
		if !c.pool {
			return e.conv2dForward(c.s, a[0], a[1], a[3], ws, a[2])
		}
		if err := e.conv2dForward(c.s, a[0], a[1], c.yFull, ws, a[2]); err != nil {
			return err
		}
		return e.maxPool(c.ps, c.yFull, a[3], c.arg)
	}, x, w, b, y)
}

// grad fills dpre from the block's output y and its gradient dy, once per
// run (BackwardData and BackwardFilter both start from it, in either
// order): through the pool's argmax first with pool, then relu_grad.
func (c *gpuConv) grad(y, dy buffer) error {
	if c.dReady {
		return nil
	}
	e := c.g.e
	if c.pool {
		if err := e.maxPoolBackward(c.ps, dy, c.arg, c.dpre); err != nil {
			return err
		}
		y, dy = c.yFull, c.dpre
	}
	if err := e.reluGrad(y, dy, c.dpre, c.s.OutLen()); err != nil {
		return err
	}
	c.dReady = true
	return nil
}

func (c *gpuConv) BackwardData(w, y, dy, dx G.Value) error {
	return c.g.runConv(func(a [5]buffer, ws buffer) error {
		if err := c.grad(a[1], a[2]); err != nil {
			return err
		}
		return c.g.e.conv2dBackwardData(c.s, a[0], c.dpre, a[3], ws)
	}, w, y, dy, dx)
}

func (c *gpuConv) BackwardFilter(x, y, dy, dw, db G.Value) error {
	return c.g.runConv(func(a [5]buffer, ws buffer) error {
		if err := c.grad(a[1], a[2]); err != nil {
			return err
		}
		return c.g.e.conv2dBackwardFilter(c.s, a[0], c.dpre, a[3], ws, a[4])
	}, x, y, dy, dw, db)
}

func (g *GraphEngine) NewAvgPool(BC, HW int) (model.AvgPoolKernel, error) {
	return gpuAvgPool{g, BC, HW}, nil
}

type gpuAvgPool struct {
	g      *GraphEngine
	BC, HW int
}

func (p gpuAvgPool) Forward(x, y G.Value) error {
	return p.g.run(func(a [5]buffer) error { return p.g.e.avgPool(a[0], a[1], p.BC, p.HW) }, x, y)
}

func (p gpuAvgPool) Backward(dy, dx G.Value) error {
	return p.g.run(func(a [5]buffer) error { return p.g.e.avgPoolBackward(a[0], a[1], p.BC, p.HW) }, dy, dx)
}

func (g *GraphEngine) NewLinear(B, C, N int) (model.LinearKernel, error) {
	return gpuLinear{g, B, C, N}, nil
}

type gpuLinear struct {
	g       *GraphEngine
	B, C, N int
}

// Forward: w is the graph's (C, N), so z = h·w needs no transpose.
func (l gpuLinear) Forward(h, w, b, z G.Value) error {
	e := l.g.e
	return l.g.run(func(a [5]buffer) error {
		return first(e.sgemm(false, false, l.B, l.N, l.C, a[0], a[1], a[3]), e.addRows(a[3], a[2], l.B, l.N))
	}, h, w, b, z)
}

func (l gpuLinear) BackwardData(w, dz, dh G.Value) error {
	return l.g.run(func(a [5]buffer) error { return l.g.e.sgemm(false, true, l.B, l.C, l.N, a[1], a[0], a[2]) }, w, dz, dh)
}

func (l gpuLinear) BackwardWeight(h, dz, dw G.Value) error {
	return l.g.run(func(a [5]buffer) error { return l.g.e.sgemm(true, false, l.C, l.N, l.B, a[0], a[1], a[2]) }, h, dz, dw)
}

func (l gpuLinear) BackwardBias(dz, db G.Value) error {
	return l.g.run(func(a [5]buffer) error { return l.g.e.colSums(a[0], a[1], l.B, l.N) }, dz, db)
}

func (g *GraphEngine) NewXent(B, N int) (model.XentKernel, error) { return gpuXent{g, B, N}, nil }

// gpuXent computes the loss on the device when the engine scores steps
// (Forward then returns 0: the loss is in the ring), else on the host,
// from downloaded logits and target.
type gpuXent struct {
	g    *GraphEngine
	B, N int
}

// fetchLoss downloads the logits and the target into the host scratch.
func (g *GraphEngine) fetchLoss(B, N int, z, t G.Value) error {
	if len(g.z) != B*N {
		g.z, g.t, g.dz = make([]float32, B*N), make([]float32, B*N), make([]float32, B*N)
	}
	return first(g.Download(g.z, z), g.Download(g.t, t))
}

func (x gpuXent) Forward(z, t G.Value) (float64, error) {
	g := x.g
	if sc := g.score; g.ScoresSteps() {
		return 0, g.run(func(a [5]buffer) error {
			return g.e.xentLoss(a[0], sc.labels, sc.ring, x.B, x.N, sc.n, sc.eps, sc.slot, sc.step)
		}, z)
	}
	if err := g.fetchLoss(x.B, x.N, z, t); err != nil {
		return 0, err
	}
	return cpuops.XentForward(x.B, x.N, g.z, g.t), nil
}

func (x gpuXent) Backward(z, t G.Value, grad float32, dz G.Value) error {
	g := x.g
	if sc := g.score; g.ScoresSteps() {
		return g.run(func(a [5]buffer) error {
			return g.e.xentGrad(a[0], sc.labels, a[1], x.B, x.N, sc.n, sc.eps, grad)
		}, z, dz)
	}
	if err := g.fetchLoss(x.B, x.N, z, t); err != nil {
		return err
	}
	cpuops.XentBackward(x.B, x.N, g.z, g.t, grad, g.dz)
	return g.Upload(dz, g.dz)
}

func (g *GraphEngine) SGD(w, grad, v G.Value, n int, lr, momentum, wd float32, firstStep bool) error {
	return g.run(func(a [5]buffer) error { return g.e.sgd(a[0], a[1], a[2], n, lr, momentum, wd, firstStep) }, w, grad, v)
}
