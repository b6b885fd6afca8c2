//go:build stokecuda

package cudaops

import (
	"fmt"
	"runtime"
	"sync"
	"weak"

	"gorgonia.org/cu"
	G "gorgonia.org/gorgonia"

	"stoke/model"
)

// GraphEngine's ResNet layers (model.Layers) and its Nesterov and
// AdamW updates (model.Updater, with SGD), on the device, over
// kernels_resnet.go.
// Each layer is a small struct of its shape and device scratch; every call
// makes the context current and enqueues on the engine's stream (run).
//
// The convolutions (these and the cnn's conv blocks, engine_graph.go)
// share one workspace (im2col matrix and GEMM output),
// as large as the largest conv built on the engine needs: the stream runs
// one conv call at a time and no call keeps anything in it for another.
// A ResNet conv also keeps its own im2col matrix from its forward for its
// filter gradient (which then does not rebuild it), while the engine's
// kept matrices fit in keepIm2colBytes; past that, convs rebuild theirs.

var _ model.Layers = (*GraphEngine)(nil)

// workspace returns the shared conv workspace, (re)allocated to the largest
// size asked for so far. The old one stays allocated until Close (the
// engine frees every allocation then): it only grows while models are built.
func (g *GraphEngine) workspace() (buffer, error) {
	if g.ws != nil && g.ws.(devBuf).n >= g.wsNeed {
		return g.ws, nil
	}
	var err error
	g.ws, err = g.e.alloc(g.wsNeed)
	return g.ws, err
}

type gpuConv2d struct {
	g *GraphEngine
	s convShape
	// col is the conv's own im2col matrix (nil: none kept), holding that
	// of the input at colOf when colOf is not 0 (the last forward's x;
	// within a step nothing writes a conv's input between its forward and
	// its filter gradient, which is when the kept matrix is used).
	col   buffer
	colOf cu.DevicePtr
}

// keepIm2colBytes bounds the im2col matrices an engine's convs keep from
// forward to filter gradient (resnet18 at 224 px, batch 256, needs about
// 15 GB for all of them), and so does a quarter of the device's memory
// (6 GB on a 24 GB card; 4 GiB under the stand-in's 16). The first convs
// built keep theirs until the next would pass the bound.
var keepIm2colBytes = 16 << 30

// kept is the bytes of im2col matrices each engine's convs keep (an engine
// field's stand-in: GraphEngine is engine_graph.go's). Weak keys, dropped
// when the engine is collected, so that the map keeps no engine alive.
var (
	keptMu sync.Mutex
	kept   = map[weak.Pointer[GraphEngine]]int{}
)

// keepIm2col reports whether g's next conv may keep n more bytes, and
// counts them when it may.
func (g *GraphEngine) keepIm2col(n int) bool {
	keptMu.Lock()
	defer keptMu.Unlock()
	k := weak.Make(g)
	total, seen := kept[k]
	mem, err := g.d.dev.TotalMem()
	if err != nil || total+n > min(keepIm2colBytes, int(mem/4)) {
		return false
	}
	if !seen {
		runtime.AddCleanup(g, func(k weak.Pointer[GraphEngine]) {
			keptMu.Lock()
			delete(kept, k)
			keptMu.Unlock()
		}, k)
	}
	kept[k] = total + n
	return true
}

func (g *GraphEngine) NewConv2d(B, Cin, H, W, Cout, K, stride, pad, groups int) (model.Conv2dKernel, error) {
	if groups < 1 {
		return nil, fmt.Errorf("cudaops: conv2d: groups=%d, want at least 1", groups)
	}
	s := convShape{B: B, Cin: Cin, H: H, W: W, Cout: Cout, K: K, Stride: stride, Pad: pad, Groups: groups}
	if err := s.validate(); err != nil {
		return nil, err
	}
	g.wsNeed = max(g.wsNeed, s.Workspace())
	c := &gpuConv2d{g: g, s: s}
	if g.keepIm2col(4 * s.ColLen()) {
		if err := g.do(func() error {
			var err error
			c.col, err = g.e.alloc(s.ColLen())
			return err
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// runConv runs f on vals with the shared conv workspace.
func (g *GraphEngine) runConv(f func(a [5]buffer, ws buffer) error, vals ...G.Value) error {
	return g.run(func(a [5]buffer) error {
		ws, err := g.workspace()
		if err != nil {
			return err
		}
		return f(a, ws)
	}, vals...)
}

func (c *gpuConv2d) Forward(x, w, y G.Value) error {
	return c.g.runConv(func(a [5]buffer, ws buffer) error {
		c.colOf = 0
		if err := c.g.e.conv2dForwardKeep(c.s, a[0], a[1], a[2], ws, nil, c.col); err != nil || c.col == nil {
			return err
		}
		c.colOf = a[0].(devBuf).p
		return nil
	}, x, w, y)
}

func (c *gpuConv2d) BackwardData(w, dy, dx G.Value) error {
	return c.g.runConv(func(a [5]buffer, ws buffer) error { return c.g.e.conv2dBackwardData(c.s, a[0], a[1], a[2], ws) }, w, dy, dx)
}

func (c *gpuConv2d) BackwardFilter(x, dy, dw G.Value) error {
	return c.g.runConv(func(a [5]buffer, ws buffer) error {
		var built buffer
		if c.col != nil && c.colOf != 0 && c.colOf == a[0].(devBuf).p {
			built = c.col
		}
		return c.g.e.conv2dBackwardFilterFrom(c.s, a[0], a[1], a[2], ws, nil, built)
	}, x, dy, dw)
}

// gpuBatchNorm keeps what its backward needs of the last training forward:
// the per-channel statistics (saved, on the device) and n.
type gpuBatchNorm struct {
	g        *GraphEngine
	B, C, HW int
	relu     bool
	saved    buffer
	n        int
}

func (g *GraphEngine) NewBatchNorm(B, C, HW int, relu bool) (model.BatchNormKernel, error) {
	if err := bnCheck("NewBatchNorm", B, C, HW, B); err != nil {
		return nil, err
	}
	b := &gpuBatchNorm{g: g, B: B, C: C, HW: HW, relu: relu}
	err := g.do(func() error {
		var err error
		b.saved, err = g.e.alloc(bnSavedLen(B, C, HW))
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (b *gpuBatchNorm) Forward(x, gamma, beta, y, runMean, runVar G.Value, n int, training bool) error {
	if err := b.g.run(func(a [5]buffer) error {
		rv, err := buf(runVar)
		if err != nil {
			return fmt.Errorf("argument 5: %w", err)
		}
		return b.g.e.bnForward(a[0], a[1], a[2], a[3], a[4], rv, b.saved, b.B, b.C, b.HW, n, training, b.relu)
	}, x, gamma, beta, y, runMean); err != nil {
		return err
	}
	if training {
		b.n = n
	}
	return nil
}

func (b *gpuBatchNorm) Backward(x, gamma, y, dy, dx, dgamma, dbeta G.Value) error {
	if b.n == 0 {
		return fmt.Errorf("cudaops: BatchNorm backward before a training forward")
	}
	return b.g.run(func(a [5]buffer) error {
		dg, err1 := buf(dgamma)
		db, err2 := buf(dbeta)
		if err := first(err1, err2); err != nil {
			return fmt.Errorf("dgamma, dbeta: %w", err)
		}
		return b.g.e.bnBackward(a[0], a[1], a[2], a[3], b.saved, a[4], dg, db, b.B, b.C, b.HW, b.n, b.relu)
	}, x, gamma, y, dy, dx)
}

// gpuBatchNormAddReLU is a BasicBlock's end, ReLU(BatchNorm(x) + s),
// composed of the existing kernels: bn_forward without its ReLU into the
// layer's own scratch, then add_relu; backward, relu_grad (the shortcut's
// gradient ds) then bn_backward from ds. The kernels are the unfused ops',
// so the results are theirs; the fusion only saves memory passes on the CPU.
type gpuBatchNormAddReLU struct {
	bn  *gpuBatchNorm // relu false
	tmp buffer        // BatchNorm's output, B·C·HW
}

func (g *GraphEngine) NewBatchNormAddReLU(B, C, HW int) (model.BatchNormAddReLUKernel, error) {
	k, err := g.NewBatchNorm(B, C, HW, false)
	if err != nil {
		return nil, err
	}
	b := &gpuBatchNormAddReLU{bn: k.(*gpuBatchNorm)}
	err = g.do(func() error {
		var err error
		b.tmp, err = g.e.alloc(B * C * HW)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (b *gpuBatchNormAddReLU) Forward(x, gamma, beta, s, y, runMean, runVar G.Value, n int, training bool) error {
	bn := b.bn
	if err := bn.g.run(func(a [5]buffer) error {
		rm, err1 := buf(runMean)
		rv, err2 := buf(runVar)
		if err := first(err1, err2); err != nil {
			return fmt.Errorf("running statistics: %w", err)
		}
		N := bn.B * bn.C * bn.HW
		if err := bn.g.e.bnForward(a[0], a[1], a[2], b.tmp, rm, rv, bn.saved, bn.B, bn.C, bn.HW, n, training, false); err != nil {
			return err
		}
		return bn.g.e.addReLU(b.tmp, a[3], a[4], N)
	}, x, gamma, beta, s, y); err != nil {
		return err
	}
	if training {
		bn.n = n
	}
	return nil
}

func (b *gpuBatchNormAddReLU) Backward(x, gamma, y, dy, dx, ds, dgamma, dbeta G.Value) error {
	bn := b.bn
	if bn.n == 0 {
		return fmt.Errorf("cudaops: BatchNorm backward before a training forward")
	}
	return bn.g.run(func(a [5]buffer) error {
		d, err1 := buf(ds)
		dg, err2 := buf(dgamma)
		db, err3 := buf(dbeta)
		if err := first(err1, err2, err3); err != nil {
			return fmt.Errorf("ds, dgamma, dbeta: %w", err)
		}
		if err := bn.g.e.reluGrad(a[2], a[3], d, bn.B*bn.C*bn.HW); err != nil {
			return err
		}
		return bn.g.e.bnBackward(a[0], a[1], a[2], d, bn.saved, a[4], dg, db, bn.B, bn.C, bn.HW, bn.n, false)
	}, x, gamma, y, dy, dx)
}

type gpuMaxPool struct {
	g   *GraphEngine
	s   poolShape
	arg buffer
}

func (g *GraphEngine) NewMaxPool(B, C, H, W, K, stride, pad int) (model.MaxPoolKernel, error) {
	if B < 1 || C < 1 {
		return nil, fmt.Errorf("cudaops: NewMaxPool: bad shape B=%d C=%d", B, C)
	}
	pk := &gpuMaxPool{g: g, s: poolShape{BC: B * C, H: H, W: W, K: K, Stride: stride, Pad: pad}}
	ho, wo := pk.s.Out()
	if H < 1 || W < 1 || K < 1 || stride < 1 || pad < 0 || 2*pad > K || ho < 1 || wo < 1 {
		return nil, fmt.Errorf("cudaops: NewMaxPool: bad shape %+v", pk.s)
	}
	err := g.do(func() error {
		var err error
		pk.arg, err = g.e.allocInt32(pk.s.OutLen())
		return err
	})
	if err != nil {
		return nil, err
	}
	return pk, nil
}

func (pk *gpuMaxPool) Forward(x, y G.Value) error {
	return pk.g.run(func(a [5]buffer) error { return pk.g.e.maxPool(pk.s, a[0], a[1], pk.arg) }, x, y)
}

func (pk *gpuMaxPool) Backward(dy, dx G.Value) error {
	return pk.g.run(func(a [5]buffer) error { return pk.g.e.maxPoolBackward(pk.s, a[0], pk.arg, a[1]) }, dy, dx)
}

// size is a value's element count.
func size(v G.Value) int { return v.Shape().TotalSize() }

func (g *GraphEngine) Copy(dst, src G.Value) error {
	if size(dst) != size(src) {
		return fmt.Errorf("cudaops: copy of %d floats into %d", size(src), size(dst))
	}
	return g.run(func(v [5]buffer) error { return g.e.copyD2D(v[1], v[0], size(dst)) }, dst, src)
}

func (g *GraphEngine) SGDNesterov(w, grad, v G.Value, n int, lr, momentum, wd float32, firstStep bool) error {
	return g.run(func(a [5]buffer) error { return g.e.sgdNesterov(a[0], a[1], a[2], n, lr, momentum, wd, firstStep) }, w, grad, v)
}

func (g *GraphEngine) AdamW(w, grad, m, v G.Value, n int, lr, b1, b2, eps, wd float32, t int64) error {
	return g.run(func(a [5]buffer) error { return g.e.adamW(a[0], a[1], a[2], a[3], n, lr, b1, b2, eps, wd, t) }, w, grad, m, v)
}
