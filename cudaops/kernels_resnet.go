//go:build stokecuda

package cudaops

import (
	"fmt"

	"gorgonia.org/cu"

	"stoke/model"
)

// The layer kernels of every arch (kernels.cu, after normalize_u8: the
// convolution, which is also the cnn's conv block with the bias + ReLU
// epilogue, BatchNorm, max-pool, the residual join and the ReLU's
// gradient) and the optimizers' updates beyond SGD, with their launch
// wrappers on the GPU engine, with cpuops's semantics (conv2d.go, norm.go)
// and model/optim.go's updates. Each wrapper checks its buffers' sizes and
// only enqueues work on the engine's stream: the caller has made the
// context current (Device.do) and synchronizes when it needs a result on the
// host. Buffers are devBufs from alloc (sub-ranges from sub); every size is
// in float32 elements and every activation is NCHW. kernels_resnet_test.go
// checks each wrapper against the host functions, under the stand-in
// (scripts/gpu-sim.sh) or on a GPU.
//
// Determinism: everything here gives the same bits from run to run except
// the convolution's filter gradient when sgemm splits its long inner
// dimension (atomicAdd of the slices).

// needs checks that each buffer (devBuf) holds at least the elements a
// kernel will touch, so that a wrong shape is an error here rather than a
// fault on the device.
func needs(what string, pairs ...any) error {
	for k := 0; k+1 < len(pairs); k += 2 {
		b, n := pairs[k].(buffer), pairs[k+1].(int)
		if d := b.(devBuf); d.n < n {
			return fmt.Errorf("cudaops: %s: argument %d holds %d floats, needs %d", what, k/2, d.n, n)
		}
	}
	return nil
}

// sub is the n elements of b from off.
func sub(b buffer, off, n int) buffer {
	d := b.(devBuf)
	return devBuf{d.p + cu.DevicePtr(4*off), n}
}

// add is c = a + b over n floats: reads a[0:n) and b[0:n), writes c[0:n).
// c may be a or b (in place: a += b is add(a, b, a, n)); no other overlap.
// Used for gorgonia's fan-out Add (the residual's gradient).
func (e *gpuEngine) add(a, b, c buffer, n int) error {
	if err := needs("add", a, n, b, n, c, n); err != nil || n == 0 {
		return err
	}
	return e.launch1D("add_f32", n, p(a), p(b), p(c), i(n))
}

// copyD2D is dst[0:n) = src[0:n) on the device (the staged BatchNorm
// statistics); src and dst must not overlap.
func (e *gpuEngine) copyD2D(src, dst buffer, n int) error {
	if err := needs("copy", src, n, dst, n); err != nil || n == 0 {
		return err
	}
	return e.launch1D("copy_f32", n, p(src), p(dst), i(n))
}

// swap01 is y (d1, d0, hw) = x (d0, d1, hw): the first two axes swapped.
// x and y must not overlap.
func (e *gpuEngine) swap01(x, y buffer, d0, d1, hw int) error {
	n := d0 * d1 * hw
	if err := needs("swap01", x, n, y, n); err != nil || n == 0 {
		return err
	}
	return e.launch1D("swap01", n, p(x), p(y), i(d0), i(d1), i(hw))
}

// convShape is a Conv2d(Cin, Cout, K, Stride, Pad, groups=Groups,
// bias=False) on a (B, Cin, H, W) input, as cpuops.NewConv2d takes it:
// weights (Cout, Cin/Groups, K, K), output (B, Cout, Ho, Wo). Groups 0 is 1.
type convShape struct{ B, Cin, H, W, Cout, K, Stride, Pad, Groups int }

// groups is the channel groups (Groups, 0 read as 1); gkk a weight row's
// length, Cin/groups·K·K, and og a channel group's outputs, Cout/groups.
func (s convShape) groups() int { return max(1, s.Groups) }
func (s convShape) gkk() int    { return s.Cin / s.groups() * s.K * s.K }
func (s convShape) og() int     { return s.Cout / s.groups() }

// Out is the output's height and width.
func (s convShape) Out() (ho, wo int) {
	return (s.H+2*s.Pad-s.K)/s.Stride + 1, (s.W+2*s.Pad-s.K)/s.Stride + 1
}

// InLen, WLen and OutLen are the sizes of x, w and y.
func (s convShape) InLen() int { return s.B * s.Cin * s.H * s.W }
func (s convShape) WLen() int  { return s.Cout * s.gkk() }
func (s convShape) OutLen() int {
	ho, wo := s.Out()
	return s.B * s.Cout * ho * wo
}

// Workspace is the scratch every conv wrapper needs, in floats: the whole
// batch's im2col matrix (Cin·K·K, B·Ho·Wo) followed by the GEMM's output
// (Cout, B·Ho·Wo). One workspace of the largest size can serve every conv
// of a network, one call at a time (the stream orders them).
func (s convShape) Workspace() int {
	ho, wo := s.Out()
	return (s.Cin*s.K*s.K + s.Cout) * s.B * ho * wo
}

// ColLen is the size of the im2col matrix, in floats.
func (s convShape) ColLen() int {
	ho, wo := s.Out()
	return s.Cin * s.K * s.K * s.B * ho * wo
}

func (s convShape) validate() error {
	ho, wo := s.Out()
	if s.B < 1 || s.Cin < 1 || s.H < 1 || s.W < 1 || s.Cout < 1 || s.K < 1 || s.Stride < 1 || s.Pad < 0 || s.Pad >= s.K || ho < 1 || wo < 1 {
		return fmt.Errorf("cudaops: conv2d: bad shape %+v", s)
	}
	if g := s.groups(); s.Groups < 0 || s.Cin%g != 0 || s.Cout%g != 0 {
		return fmt.Errorf("cudaops: conv2d: groups=%d must be at least 1 and divide both Cin=%d and Cout=%d", s.Groups, s.Cin, s.Cout)
	}
	return nil
}

// parts splits the workspace into the im2col matrix and the GEMM output.
func (s convShape) parts(ws buffer) (col, z buffer) {
	ho, wo := s.Out()
	n := s.B * ho * wo
	ckk := s.Cin * s.K * s.K
	return sub(ws, 0, ckk*n), sub(ws, ckk*n, s.Cout*n)
}

// colLaunch runs im2col (a = x, b = col) or col2im (a = dcol, b = dx).
// groupGemms runs one sgemm per channel group: group g's blocks of a, b
// and c, each contiguous (aLen, bLen, cLen floats), for the rows of the
// im2col matrix (Cin·K·K, rows (ci, ky, kx)) of its input channels, its
// rows of w (Cout, Cin/groups·K·K) and of the GEMM output (Cout, B·Ho·Wo).
// With one group it is the one sgemm.
func (e *gpuEngine) groupGemms(s convShape, tA, tB bool, M, N, Kd int, a, b, c buffer, aLen, bLen, cLen int) error {
	if s.groups() == 1 {
		return e.sgemm(tA, tB, M, N, Kd, a, b, c)
	}
	for g := 0; g < s.groups(); g++ {
		if err := e.sgemm(tA, tB, M, N, Kd, sub(a, g*aLen, aLen), sub(b, g*bLen, bLen), sub(c, g*cLen, cLen)); err != nil {
			return err
		}
	}
	return nil
}

// colGridBlocks is about the most blocks an im2col or col2im grid has (as
// launch1D's): beyond it each thread steps through several elements. A
// variable so that a test can make the steps happen on small shapes.
var colGridBlocks = 1 << 16

func (e *gpuEngine) colLaunch(name string, total int, s convShape, a, b buffer) error {
	ho, wo := s.Out()
	args := []uint64{p(a), p(b), i(s.B), i(s.Cin), i(s.H), i(s.W), i(s.K), i(s.Stride), i(s.Pad), i(ho), i(wo)}
	if name != "im2col" {
		return e.launch(name, max(1, min((total+255)/256, colGridBlocks)), 1, 1, 256, args...)
	}
	// im2col: a row of the matrix per blockIdx.y, its columns over
	// blockIdx.x.
	rows := s.Cin * s.K * s.K
	if rows > 65535 {
		return fmt.Errorf("cudaops: conv2d: Cin·K·K = %d rows of im2col exceed the grid's 65535", rows)
	}
	gx := max(1, min((total/rows+255)/256, (colGridBlocks+rows-1)/rows))
	return e.launch(name, gx, rows, 1, 256, args...)
}

func (e *gpuEngine) convCheck(what string, s convShape, in, w, out, ws buffer, inLen, outLen int) error {
	if err := s.validate(); err != nil {
		return err
	}
	return needs("conv2d "+what, in, inLen, w, s.WLen(), out, outLen, ws, s.Workspace())
}

// conv2dForward is y = conv(x, w), cpuops.Conv2d.Forward: reads x
// (InLen) and w (WLen), writes y (OutLen), uses ws (Workspace). Every one
// of the B samples is computed (a padded batch's rows are whatever x holds
// there, as on the CPU). With a bias (Cout floats; nil for none) the
// epilogue is the cnn's y = ReLU(conv(x, w) + bias): bias_relu in place of
// the swap from the GEMM's layout to NCHW.
func (e *gpuEngine) conv2dForward(s convShape, x, w, y, ws, bias buffer) error {
	return e.conv2dForwardKeep(s, x, w, y, ws, bias, nil)
}

// conv2dForwardKeep is conv2dForward writing x's im2col matrix into keep
// (ColLen floats) instead of ws, for a conv2dBackwardFilterFrom on the same
// x; keep nil is conv2dForward.
func (e *gpuEngine) conv2dForwardKeep(s convShape, x, w, y, ws, bias, keep buffer) error {
	if err := e.convCheck("forward", s, x, w, y, ws, s.InLen(), s.OutLen()); err != nil {
		return err
	}
	ho, wo := s.Out()
	n, ckk := s.B*ho*wo, s.Cin*s.K*s.K
	col, z := s.parts(ws)
	if keep != nil {
		if err := needs("conv2d kept im2col", keep, s.ColLen()); err != nil {
			return err
		}
		col = keep
	}
	if err := e.colLaunch("im2col", ckk*n, s, x, col); err != nil {
		return err
	}
	gk, og := s.gkk(), s.og()
	if err := e.groupGemms(s, false, false, og, n, gk, w, col, z, og*gk, gk*n, og*n); err != nil {
		return err
	}
	if bias != nil {
		if err := needs("conv2d bias", bias, s.Cout); err != nil {
			return err
		}
		return e.biasReLU(z, bias, y, s.B, s.Cout, ho*wo)
	}
	return e.swap01(z, y, s.Cout, s.B, ho*wo)
}

// conv2dBackwardData is dx from w and the output gradient dy,
// cpuops.Conv2d.BackwardData: reads w and dy (OutLen), writes all of dx
// (InLen), uses ws.
func (e *gpuEngine) conv2dBackwardData(s convShape, w, dy, dx, ws buffer) error {
	if err := e.convCheck("backward data", s, dy, w, dx, ws, s.OutLen(), s.InLen()); err != nil {
		return err
	}
	ho, wo := s.Out()
	n := s.B * ho * wo
	col, z := s.parts(ws)
	if err := e.swap01(dy, z, s.B, s.Cout, ho*wo); err != nil {
		return err
	}
	gk, og := s.gkk(), s.og()
	if err := e.groupGemms(s, true, false, gk, n, og, w, z, col, og*gk, og*n, gk*n); err != nil {
		return err
	}
	return e.colLaunch("col2im", s.InLen(), s, col, dx)
}

// conv2dBackwardFilter is dw (WLen, overwritten), summed over the batch,
// from x and dy, cpuops.Conv2d.BackwardFilter; uses ws. Rows of a padded
// batch add their x·dy like any other (0 when dy is 0 there, as the
// BatchNorm backward leaves it). With db (Cout floats; nil for none) it
// also writes the bias gradient, dy summed over the batch and pixels.
func (e *gpuEngine) conv2dBackwardFilter(s convShape, x, dy, dw, ws, db buffer) error {
	return e.conv2dBackwardFilterFrom(s, x, dy, dw, ws, db, nil)
}

// conv2dBackwardFilterFrom is conv2dBackwardFilter with x's im2col matrix
// already in built (ColLen floats, from conv2dForwardKeep on this x, which
// nothing has written since): it skips the im2col. built nil builds it.
func (e *gpuEngine) conv2dBackwardFilterFrom(s convShape, x, dy, dw, ws, db, built buffer) error {
	if err := e.convCheck("backward filter", s, x, dw, dy, ws, s.InLen(), s.OutLen()); err != nil {
		return err
	}
	ho, wo := s.Out()
	n, ckk := s.B*ho*wo, s.Cin*s.K*s.K
	col, z := s.parts(ws)
	if err := e.swap01(dy, z, s.B, s.Cout, ho*wo); err != nil {
		return err
	}
	if db != nil {
		if err := needs("conv2d bias gradient", db, s.Cout); err != nil {
			return err
		}
		if err := e.rowSums(z, db, s.Cout, n); err != nil {
			return err
		}
	}
	if built != nil {
		if err := needs("conv2d kept im2col", built, s.ColLen()); err != nil {
			return err
		}
		col = built
	} else if err := e.colLaunch("im2col", ckk*n, s, x, col); err != nil {
		return err
	}
	gk, og := s.gkk(), s.og()
	return e.groupGemms(s, false, true, og, gk, n, z, col, dw, og*n, gk*n, og*gk)
}

// BatchNorm's two-level sums (kernels.cu, bn_stats): a channel's cnt = n·HW
// values go to nch blocks of L values each. A block takes at least
// bnChunkMin values (16 per thread), and at most bnMaxChunks blocks share a
// channel (a block_sum adds their partials). The split depends on the shape
// only, never on the device or the timing, so the sums are the same bits on
// every run and every GPU.
const (
	bnChunkMin  = 4096
	bnMaxChunks = 256
)

// bnChunks is the split of cnt values: nch blocks of L (the last one
// shorter).
func bnChunks(cnt int) (nch, L int) {
	nch = min(bnMaxChunks, max(1, (cnt+bnChunkMin-1)/bnChunkMin))
	return nch, (cnt + nch - 1) / nch
}

// bnSavedLen is the size in floats of a BatchNorm's device scratch for B
// samples of C channels of HW values: the per-channel statistics a training
// bnForward saves for bnBackward (C (mean, 1/sqrt(var+eps)) pairs of
// doubles), then two double partial sums per (channel, chunk) for the
// kernels' two-level sums.
func bnSavedLen(B, C, HW int) int {
	nch, _ := bnChunks(B * HW)
	return 4*C + 4*C*nch
}

func bnCheck(what string, B, C, HW, n int) error {
	if B < 1 || C < 1 || HW < 1 || n < 1 || n > B || C > 65535 {
		return fmt.Errorf("cudaops: %s: bad shape B=%d C=%d HW=%d n=%d (want 1 <= n <= B, C <= 65535)", what, B, C, HW, n)
	}
	return nil
}

// bnForward is cpuops.BatchNorm.Forward over x (B, C, HW), eps 1e-5,
// momentum 0.1, a ReLU fused when relu. Only the first n samples are real:
// the statistics are theirs and y's rows >= n are zeroed. It reads x, gamma
// (C) and beta (C) and writes y (all B·C·HW). Training (batch statistics,
// biased variance for normalizing) also updates rm and rv (C each) in place
// toward the batch mean and the unbiased variance, and writes saved
// (bnSavedLen(B, C, HW)) for bnBackward; evaluation normalizes with rm and
// rv and leaves them and saved alone. Pass the staged copies of the running
// statistics as rm, rv in training (copyD2D), as the model does on the CPU;
// it counts num_batches_tracked. Training is three launches over
// bnChunks(n·HW) blocks per channel (the sum, the squared deviations, the
// normalization), evaluation one; the sums are deterministic.
func (e *gpuEngine) bnForward(x, gamma, beta, y, rm, rv, saved buffer, B, C, HW, n int, training, relu bool) error {
	if err := bnCheck("bnForward", B, C, HW, n); err != nil {
		return err
	}
	N := B * C * HW
	if err := needs("bnForward", x, N, gamma, C, beta, C, y, N, rm, C, rv, C, saved, bnSavedLen(B, C, HW)); err != nil {
		return err
	}
	nch, L := bnChunks(n * HW)
	flags := 0
	if training {
		flags |= 1
		for pass := 0; pass < 2; pass++ {
			if err := e.launch("bn_stats", nch, C, 1, 256, p(x), p(saved), i(C), i(HW), i(n), i(L), i(pass)); err != nil {
				return err
			}
		}
	}
	if relu {
		flags |= 2
	}
	if err := e.launch("bn_apply", nch, C, 1, 256, p(x), p(gamma), p(beta), p(y), p(rm), p(rv), p(saved), i(C), i(HW), i(n), i(L), i(flags)); err != nil {
		return err
	}
	return e.zero(y, n*C*HW, N-n*C*HW)
}

// bnBackward is cpuops.BatchNorm.Backward for the last training bnForward
// (its saved statistics, the same n and relu): reads x, gamma, y (the
// forward's output: the ReLU's mask), dy and saved; writes dx (all B·C·HW,
// rows >= n zeroed), dgamma and dbeta (C each, overwritten). Two launches
// over bnChunks(n·HW) blocks per channel (the sums, then dx); it overwrites
// saved's partial sums, not the forward's statistics. dy may not be dx.
func (e *gpuEngine) bnBackward(x, gamma, y, dy, saved, dx, dgamma, dbeta buffer, B, C, HW, n int, relu bool) error {
	if err := bnCheck("bnBackward", B, C, HW, n); err != nil {
		return err
	}
	N := B * C * HW
	if err := needs("bnBackward", x, N, gamma, C, y, N, dy, N, saved, bnSavedLen(B, C, HW), dx, N, dgamma, C, dbeta, C); err != nil {
		return err
	}
	nch, L := bnChunks(n * HW)
	if err := e.launch("bn_grad_stats", nch, C, 1, 256, p(x), p(y), p(dy), p(saved), p(dx), i(C), i(HW), i(n), i(L), bl(relu)); err != nil {
		return err
	}
	g := dy // the masked gradient: dy, or dx where bn_grad_stats stored it
	if relu {
		g = dx
	}
	if err := e.launch("bn_grad_apply", nch, C, 1, 256, p(x), p(gamma), p(g), p(saved), p(dx), p(dgamma), p(dbeta), i(C), i(HW), i(n), i(L)); err != nil {
		return err
	}
	return e.zero(dx, n*C*HW, N-n*C*HW)
}

// poolShape is MaxPool2d(K, Stride, Pad) over (B·C = BC, H, W) planes, as
// cpuops.NewMaxPool takes it (pad at most K/2).
type poolShape struct{ BC, H, W, K, Stride, Pad int }

// Out is the output's height and width.
func (s poolShape) Out() (ho, wo int) {
	return (s.H+2*s.Pad-s.K)/s.Stride + 1, (s.W+2*s.Pad-s.K)/s.Stride + 1
}

func (s poolShape) InLen() int { return s.BC * s.H * s.W }
func (s poolShape) OutLen() int {
	ho, wo := s.Out()
	return s.BC * ho * wo
}

func (s poolShape) check(what string, in, out, arg buffer) error {
	ho, wo := s.Out()
	if s.BC < 1 || s.H < 1 || s.W < 1 || s.K < 1 || s.Stride < 1 || s.Pad < 0 || 2*s.Pad > s.K || ho < 1 || wo < 1 {
		return fmt.Errorf("cudaops: %s: bad shape %+v", what, s)
	}
	return needs(what, in, s.InLen(), out, s.OutLen(), arg, s.OutLen())
}

func (e *gpuEngine) poolLaunch(name string, total int, s poolShape, a, b, c buffer) error {
	ho, wo := s.Out()
	return e.launch1D(name, total, p(a), p(b), p(c), i(s.BC), i(s.H), i(s.W), i(s.K), i(s.Stride), i(s.Pad), i(ho), i(wo))
}

// maxPool is cpuops.MaxPool.Forward: reads x (InLen), writes y and arg
// (OutLen each; arg from allocInt32: each output's argmax in its H·W plane,
// the first maximum of its window, NaN winning). All B samples.
func (e *gpuEngine) maxPool(s poolShape, x, y, arg buffer) error {
	if err := s.check("maxPool", x, y, arg); err != nil {
		return err
	}
	return e.poolLaunch("max_pool", s.OutLen(), s, x, y, arg)
}

// maxPoolBackward is cpuops.MaxPool.Backward: reads dy (OutLen) and the
// forward's arg, writes all of dx (InLen; overlapping windows' gradients
// summed in the CPU's order, no atomics).
func (e *gpuEngine) maxPoolBackward(s poolShape, dy, arg, dx buffer) error {
	if err := s.check("maxPoolBackward", dx, dy, arg); err != nil {
		return err
	}
	return e.poolLaunch("max_pool_backward", s.InLen(), s, dy, arg, dx)
}

// addReLU is the residual join y = max(a + b, 0), cpuops.AddReLU, over n
// floats: reads a and b, writes y (which may be a or b).
func (e *gpuEngine) addReLU(a, b, y buffer, n int) error {
	if err := needs("addReLU", a, n, b, n, y, n); err != nil || n == 0 {
		return err
	}
	return e.launch1D("add_relu", n, p(a), p(b), p(y), i(n))
}

// reluGrad is d = dy where the ReLU output y is not 0, cpuops.ReLUBackward,
// over n floats: the gradient of both of addReLU's inputs (d may be dy).
func (e *gpuEngine) reluGrad(y, dy, d buffer, n int) error {
	if err := needs("reluGrad", y, n, dy, n, d, n); err != nil || n == 0 {
		return err
	}
	return e.launch1D("relu_grad", n, p(y), p(dy), p(d), i(n))
}

// sgdNesterov is model.SGDNesterovUpdate on n elements: updates w and v in
// place from grad.
func (e *gpuEngine) sgdNesterov(w, grad, v buffer, n int, lr, mom, wd float32, first bool) error {
	if err := needs("sgdNesterov", w, n, grad, n, v, n); err != nil || n == 0 {
		return err
	}
	if err := e.want(argLR, stepArgs{lr: lr}); err != nil {
		return err
	}
	return e.launch1D("sgd_nesterov", n, p(w), p(grad), p(v), i(n), uint64(e.sargs), fl(mom), fl(wd), bl(first), uint64(e.flag))
}

// adamW is model.AdamWUpdate at step t (1 on the first) on n elements:
// updates w, m (exp_avg) and v (exp_avg_sq) in place from grad. The bias
// corrections are model.AdamWScalars's, in the step's arguments.
func (e *gpuEngine) adamW(w, grad, m, v buffer, n int, lr, b1, b2, eps, wd float32, t int64) error {
	if t < 1 {
		return fmt.Errorf("cudaops: adamW: step %d, want >= 1", t)
	}
	if err := needs("adamW", w, n, grad, n, m, n, v, n); err != nil || n == 0 {
		return err
	}
	step, sq := model.AdamWScalars(lr, b1, b2, t)
	if err := e.want(argLR|argAdam, stepArgs{lr: lr, adamStep: step, adamSq: sq}); err != nil {
		return err
	}
	return e.launch1D("adamw", n, p(w), p(grad), p(m), p(v), i(n), fl(b1), fl(b2), fl(eps), fl(wd), uint64(e.sargs), uint64(e.flag))
}
