package cpuops

import (
	"fmt"
	"math"
	"runtime"
)

// BatchNorm is PyTorch's BatchNorm2d(C) (eps 1e-5, momentum 0.1, affine,
// track_running_stats) over (B,C,H,W), with an optional ReLU fused after
// it. In training it normalizes with the statistics of the batch (the
// biased variance) and updates the running mean and variance, the latter
// with the unbiased variance, as PyTorch does; in evaluation it uses the
// running statistics. Only the first n samples of a batch are valid: the
// statistics are theirs, and padded rows get 0 out and 0 gradient.
// Statistics are summed in float64.
//
// Each pass walks the planes (sample i, channel c) in memory order, split
// into runs of whole planes over the cores; a plane's sums are kept, and
// each channel's are added in sample order between the passes, so results
// do not depend on the core count. Walking a channel's planes instead (one
// plane every C·HW floats) was measured 1.3-2.4x slower forward and up to
// 1.6x backward on resnet20/resnet18 shapes at batch 64-128 (4 KiB planes:
// each is a new page for the prefetcher), and no faster at batch 4.
//
// With Add (NewBatchNormAddReLU) it is a BasicBlock's end, y = ReLU(BN(x) +
// s), in one op: ForwardAdd writes y in the pass that normalizes x, and
// BackwardAdd applies the ReLU mask once, in BatchNorm's first backward
// pass, keeping the masked gradient as the shortcut's (ds). Each saves a
// pass over memory against BatchNorm then AddReLU (forward) and
// ReLUBackward then BatchNorm's backward, and gives the same bits.
type BatchNorm struct {
	B, C, HW int
	ReLU     bool
	Add      bool // the residual join: ForwardAdd and BackwardAdd

	mean, invstd []float64 // of the last training Forward, per channel

	// The running pass's per-plane sums (plane p = i·C + c at part 2p and
	// 2p+1) and per-channel coefficients of its second pass (forward:
	// scale, shift; backward: a, b, d of dx = a·g + b·x + d).
	sums       []float64
	k1, k2, k3 []float32
	per        int // planes per item of the running job

	fwdSums, fwdNorm, bwdSums, bwdDx, mask job
	// the running job's arguments
	x, y, dy, dx, gamma, beta, rm, rv, dgamma, dbeta []float32
	s, ds                                            []float32 // Add: the shortcut and its gradient
	n                                                int
	training                                         bool
}

// BatchNorm2d's constants, PyTorch's defaults.
const (
	BNEps      = 1e-5
	BNMomentum = 0.1
)

// NewBatchNorm returns the kernels for a BatchNorm over (B,C,H·W = hw).
func NewBatchNorm(b, c, hw int, relu bool) (*BatchNorm, error) {
	if b < 1 || c < 1 || hw < 1 {
		return nil, fmt.Errorf("cpuops.NewBatchNorm: bad shape B=%d C=%d HW=%d", b, c, hw)
	}
	bn := &BatchNorm{B: b, C: c, HW: hw, ReLU: relu, mean: make([]float64, c), invstd: make([]float64, c),
		sums: make([]float64, 2*b*c), k1: make([]float32, c), k2: make([]float32, c), k3: make([]float32, c)}
	bn.fwdSums.fn, bn.fwdNorm.fn = bn.sumPlanes, bn.normPlanes
	bn.bwdSums.fn, bn.bwdDx.fn, bn.mask.fn = bn.gradPlanes, bn.dxPlanes, bn.maskPlanes
	return bn, nil
}

// NewBatchNormAddReLU returns the kernels for y = ReLU(BatchNorm(x) + s)
// over (B,C,H·W = hw): ForwardAdd and BackwardAdd.
func NewBatchNormAddReLU(b, c, hw int) (*BatchNorm, error) {
	bn, err := NewBatchNorm(b, c, hw, true)
	if err != nil {
		return nil, fmt.Errorf("cpuops.NewBatchNormAddReLU: %w", err)
	}
	bn.Add = true
	return bn, nil
}

// Len is B·C·HW.
func (bn *BatchNorm) Len() int { return bn.B * bn.C * bn.HW }

// Forward computes y from x for the first n samples (the rest of y is 0).
// In training it also updates runMean and runVar (C each) in place; the
// caller counts num_batches_tracked.
func (bn *BatchNorm) Forward(x, gamma, beta, y, runMean, runVar []float32, n int, training bool) {
	if bn.Add {
		panic("cpuops.BatchNorm.Forward: a BatchNorm with Add runs ForwardAdd")
	}
	bn.forward(x, gamma, beta, y, runMean, runVar, n, training)
	clear(y[n*bn.C*bn.HW:])
}

// ForwardAdd is Forward for y = ReLU(BatchNorm(x) + s): the rows from n on,
// whose BatchNorm output is 0, get ReLU(s).
func (bn *BatchNorm) ForwardAdd(x, gamma, beta, s, y, runMean, runVar []float32, n int, training bool) {
	if !bn.Add || len(s) != bn.Len() {
		panic(fmt.Sprintf("cpuops.BatchNorm.ForwardAdd: Add %v, s %d values; want a BatchNorm with Add, %d", bn.Add, len(s), bn.Len()))
	}
	bn.s = s
	bn.forward(x, gamma, beta, y, runMean, runVar, n, training)
	bn.s = nil
	o := n * bn.C * bn.HW
	for j, v := range s[o:] {
		y[o+j] = max(v, 0)
	}
}

func (bn *BatchNorm) forward(x, gamma, beta, y, runMean, runVar []float32, n int, training bool) {
	if len(x) != bn.Len() || len(y) != bn.Len() || len(gamma) != bn.C || len(beta) != bn.C || len(runMean) != bn.C || len(runVar) != bn.C || n < 1 || n > bn.B {
		panic(fmt.Sprintf("cpuops.BatchNorm.Forward: x %d, y %d, gamma %d, beta %d, running %d/%d values, n %d; want %d, C=%d, 1..%d",
			len(x), len(y), len(gamma), len(beta), len(runMean), len(runVar), n, bn.Len(), bn.C, bn.B))
	}
	bn.x, bn.y, bn.gamma, bn.beta, bn.rm, bn.rv, bn.n, bn.training = x, y, gamma, beta, runMean, runVar, n, training
	if training {
		bn.runPlanes(&bn.fwdSums)
	}
	for c := range bn.C {
		bn.normCoeffs(c)
	}
	bn.runPlanes(&bn.fwdNorm)
	bn.x, bn.y, bn.gamma, bn.beta, bn.rm, bn.rv = nil, nil, nil, nil, nil, nil
}

// runPlanes runs j over the first n samples' planes, in runs of about a
// quarter of a core's share.
func (bn *BatchNorm) runPlanes(j *job) {
	np := bn.n * bn.C
	w := 4 * runtime.GOMAXPROCS(0)
	bn.per = (np + w - 1) / w
	j.n = (np + bn.per - 1) / bn.per
	j.run(workers(j.n))
}

// planes is the run of planes [p0, p1) of item.
func (bn *BatchNorm) planes(item int) (p0, p1 int) {
	p0 = item * bn.per
	return p0, min(p0+bn.per, bn.n*bn.C)
}

// plane p of s: sample p/C, channel p%C.
func (bn *BatchNorm) plane(s []float32, p int) []float32 {
	o := p * bn.HW
	return s[o : o+bn.HW]
}

// sumPlanes: Σx and Σx² of each plane, in float64 (vectorized).
func (bn *BatchNorm) sumPlanes(_, item int) {
	p0, p1 := bn.planes(item)
	for p := p0; p < p1; p++ {
		bn.sums[2*p], bn.sums[2*p+1] = sumSq(bn.plane(bn.x, p))
	}
}

// normCoeffs sets channel c's scale and shift: from its planes' sums in
// training (and updates its running statistics), else from the running
// statistics.
func (bn *BatchNorm) normCoeffs(c int) {
	var mean, invstd float64
	if bn.training {
		cnt := float64(bn.n * bn.HW)
		var s, ss float64
		for i := 0; i < bn.n; i++ {
			p := i*bn.C + c
			s += bn.sums[2*p]
			ss += bn.sums[2*p+1]
		}
		mean = s / cnt
		// Σ(x − mean)² = Σx² − mean·Σx: float64 keeps the cancellation
		// harmless for activations, whose mean is not 10⁴ times their spread.
		dev := max(ss-mean*s, 0)
		v := dev / cnt
		invstd = 1 / math.Sqrt(v+BNEps)
		bn.mean[c], bn.invstd[c] = mean, invstd
		unbiased := v
		if cnt > 1 {
			unbiased = dev / (cnt - 1)
		}
		bn.rm[c] = float32((1-BNMomentum)*float64(bn.rm[c]) + BNMomentum*mean)
		bn.rv[c] = float32((1-BNMomentum)*float64(bn.rv[c]) + BNMomentum*unbiased)
	} else {
		mean = float64(bn.rm[c])
		invstd = 1 / math.Sqrt(float64(bn.rv[c])+BNEps)
	}
	bn.k1[c] = float32(float64(bn.gamma[c]) * invstd)
	bn.k2[c] = float32(float64(bn.beta[c]) - mean*float64(bn.gamma[c])*invstd)
}

// normPlanes writes y = x·scale + shift with the ReLU fused (and, with
// Add, the shortcut added before it).
func (bn *BatchNorm) normPlanes(_, item int) {
	p0, p1 := bn.planes(item)
	for p, c := p0, p0%bn.C; p < p1; p, c = p+1, c+1 {
		if c == bn.C {
			c = 0
		}
		if bn.Add {
			scaleShiftAddReLU(bn.plane(bn.x, p), bn.plane(bn.s, p), bn.plane(bn.y, p), bn.k1[c], bn.k2[c])
			continue
		}
		scaleShift(bn.plane(bn.x, p), bn.plane(bn.y, p), bn.k1[c], bn.k2[c], bn.ReLU)
	}
}

// Backward computes dx, dgamma and dbeta for the last training Forward,
// from its input x, its output y (for the fused ReLU's mask) and dy.
func (bn *BatchNorm) Backward(x, gamma, y, dy, dx, dgamma, dbeta []float32) {
	if bn.Add {
		panic("cpuops.BatchNorm.Backward: a BatchNorm with Add runs BackwardAdd")
	}
	bn.backward(x, gamma, y, dy, dx, dgamma, dbeta)
}

// BackwardAdd is Backward for ForwardAdd: ds = dy where y > 0, else 0 (the
// shortcut's gradient, and the gradient BatchNorm's backward starts from),
// and dx, dgamma, dbeta.
func (bn *BatchNorm) BackwardAdd(x, gamma, y, dy, dx, ds, dgamma, dbeta []float32) {
	if !bn.Add || len(ds) != bn.Len() || len(y) != bn.Len() || len(dy) != bn.Len() {
		panic(fmt.Sprintf("cpuops.BatchNorm.BackwardAdd: Add %v, y %d, dy %d, ds %d values; want a BatchNorm with Add, %d", bn.Add, len(y), len(dy), len(ds), bn.Len()))
	}
	if bn.HW < fusedPlane {
		// The mask in a pass of its own over runs of planes, then
		// BatchNorm's backward from it.
		bn.y, bn.dy, bn.ds = y, dy, ds
		bn.runPlanes(&bn.mask)
		bn.y, bn.dy, bn.ds = nil, nil, nil
		bn.backward(x, gamma, y, ds, dx, dgamma, dbeta)
	} else {
		bn.ds = ds
		bn.backward(x, gamma, y, dy, dx, dgamma, dbeta)
		bn.ds = nil
	}
	o := bn.n * bn.C * bn.HW
	reluMask(ds[o:], y[o:], dy[o:])
}

// maskPlanes is BackwardAdd's mask on small planes: ds = dy where y > 0
// over a run of planes.
func (bn *BatchNorm) maskPlanes(_, item int) {
	p0, p1 := bn.planes(item)
	o0, o1 := p0*bn.HW, p1*bn.HW
	reluMask(bn.ds[o0:o1], bn.y[o0:o1], bn.dy[o0:o1])
}

// fusedPlane is the smallest plane (H·W) on which BackwardAdd masks dy in
// BatchNorm's first backward pass. On smaller planes that pass, walking a
// channel's short planes sample by sample with a store to ds in each, was
// measured slower than the mask's own contiguous pass plus BatchNorm's
// (BenchmarkBasicBlockEnd, one core: 1.2x at 16x16, 2x at 8x8, 3-4x at 4x4;
// 10-20% faster at 32x32). The bits are the same either way.
const fusedPlane = 1024

func (bn *BatchNorm) backward(x, gamma, y, dy, dx, dgamma, dbeta []float32) {
	if len(x) != bn.Len() || len(y) != bn.Len() || len(dy) != bn.Len() || len(dx) != bn.Len() || len(gamma) != bn.C || len(dgamma) != bn.C || len(dbeta) != bn.C {
		panic(fmt.Sprintf("cpuops.BatchNorm.Backward: x %d, y %d, dy %d, dx %d, gamma %d, dgamma %d, dbeta %d values; want %d and C=%d",
			len(x), len(y), len(dy), len(dx), len(gamma), len(dgamma), len(dbeta), bn.Len(), bn.C))
	}
	bn.x, bn.gamma, bn.y, bn.dy, bn.dx, bn.dgamma, bn.dbeta = x, gamma, y, dy, dx, dgamma, dbeta
	bn.runPlanes(&bn.bwdSums)
	for c := range bn.C {
		bn.dxCoeffs(c)
	}
	bn.runPlanes(&bn.bwdDx)
	clear(dx[bn.n*bn.C*bn.HW:])
	bn.x, bn.gamma, bn.y, bn.dy, bn.dx, bn.dgamma, bn.dbeta = nil, nil, nil, nil, nil, nil, nil
}

// gradPlanes: Σ g and Σ g·x of each plane, with g the gradient after the
// ReLU mask, summed in float32 lanes. With ds (BackwardAdd on large
// planes), g is also written to ds, and the second pass reads it
// unmasked. Otherwise, with Add, dy is ds already masked.
func (bn *BatchNorm) gradPlanes(_, item int) {
	fused, relu := bn.ds != nil, bn.ReLU && !bn.Add
	p0, p1 := bn.planes(item)
	for p := p0; p < p1; p++ {
		var pg, pgx float32
		if fused {
			pg, pgx = gradSumsMask(bn.plane(bn.x, p), bn.plane(bn.y, p), bn.plane(bn.dy, p), bn.plane(bn.ds, p))
		} else {
			pg, pgx = gradSums(bn.plane(bn.x, p), bn.plane(bn.y, p), bn.plane(bn.dy, p), relu)
		}
		bn.sums[2*p], bn.sums[2*p+1] = float64(pg), float64(pgx)
	}
}

// dxCoeffs sets channel c's dγ, dβ and its coefficients of dx from its
// planes' sums, added in float64 in sample order. With x̂ the normalized
// input,
//
//	dβ = Σ g,  dγ = Σ g·x̂,  dx = γ·invstd/N · (N·g − dβ − x̂·dγ)
//
// and x̂ = (x − mean)·invstd, so Σ g·x̂ = (Σ g·x − mean·Σ g)·invstd.
func (bn *BatchNorm) dxCoeffs(c int) {
	mean, invstd := bn.mean[c], bn.invstd[c]
	var sg, sgx float64
	for i := 0; i < bn.n; i++ {
		p := i*bn.C + c
		sg += bn.sums[2*p]
		sgx += bn.sums[2*p+1]
	}
	sgx = (sgx - mean*sg) * invstd
	bn.dbeta[c], bn.dgamma[c] = float32(sg), float32(sgx)
	cnt := float64(bn.n * bn.HW)
	// dx = k·(N·g − Σg − x̂·Σgx̂) = a·g + b·x + d
	k := float64(bn.gamma[c]) * invstd / cnt
	bn.k1[c] = float32(k * cnt)
	bn.k2[c] = float32(-k * sgx * invstd)
	bn.k3[c] = float32(-k*sg + k*sgx*invstd*mean)
}

// dxPlanes writes dx = a·g + b·x + d.
func (bn *BatchNorm) dxPlanes(_, item int) {
	fused, relu := bn.ds != nil, bn.ReLU && !bn.Add
	p0, p1 := bn.planes(item)
	for p, c := p0, p0%bn.C; p < p1; p, c = p+1, c+1 {
		if c == bn.C {
			c = 0
		}
		if fused {
			bnDx(bn.plane(bn.x, p), bn.plane(bn.y, p), bn.plane(bn.ds, p), bn.plane(bn.dx, p), false, bn.k1[c], bn.k2[c], bn.k3[c])
			continue
		}
		bnDx(bn.plane(bn.x, p), bn.plane(bn.y, p), bn.plane(bn.dy, p), bn.plane(bn.dx, p), relu, bn.k1[c], bn.k2[c], bn.k3[c])
	}
}

// reluGrad is dy where the ReLU output y > 0, else 0, without a branch
// (a branch on activations mispredicts about half the time): y is a ReLU
// output, so y ≥ 0 (or NaN) and y > 0 exactly when its bits are not zero.
func reluGrad(y, dy float32) float32 {
	b := math.Float32bits(y)
	return math.Float32frombits(math.Float32bits(dy) & uint32(int32(b|-b)>>31))
}

// AddReLU is the residual join y = ReLU(a + b).
func AddReLU(a, b, y []float32) {
	if len(a) != len(y) || len(b) != len(y) {
		panic(fmt.Sprintf("cpuops.AddReLU: %d, %d and %d values", len(a), len(b), len(y)))
	}
	for i := range y {
		y[i] = max(a[i]+b[i], 0)
	}
}

// ReLUBackward computes d = dy where the ReLU output y > 0, else 0: the
// gradient of both of AddReLU's inputs.
func ReLUBackward(y, dy, d []float32) {
	if len(dy) != len(y) || len(d) != len(y) {
		panic(fmt.Sprintf("cpuops.ReLUBackward: %d, %d and %d values", len(y), len(dy), len(d)))
	}
	reluMask(d, y, dy)
}

// MaxPool is PyTorch's MaxPool2d(K, stride, padding) over (B,C,H,W):
// padding never wins (it is −∞), the first maximum in a window is kept,
// and Backward adds dy to it (windows overlap when stride < K).
type MaxPool struct {
	B, C, H, W, K, Stride, Pad int
	Ho, Wo                     int

	arg      []int32 // per output: index of the maximum in its plane
	fwd, bwd job
	x, y     []float32
}

// NewMaxPool returns the kernels for a max-pool of this shape.
func NewMaxPool(b, c, h, w, k, stride, pad int) (*MaxPool, error) {
	if b < 1 || c < 1 || h < 1 || w < 1 || k < 1 || stride < 1 || pad < 0 || 2*pad > k {
		return nil, fmt.Errorf("cpuops.NewMaxPool: bad shape B=%d C=%d H=%d W=%d K=%d stride=%d pad=%d (pad at most K/2)", b, c, h, w, k, stride, pad)
	}
	p := &MaxPool{B: b, C: c, H: h, W: w, K: k, Stride: stride, Pad: pad}
	p.Ho, p.Wo = (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	if p.Ho < 1 || p.Wo < 1 {
		return nil, fmt.Errorf("cpuops.NewMaxPool: a %dx%d input is smaller than the %dx%d window", h, w, k, k)
	}
	p.arg = make([]int32, b*c*p.Ho*p.Wo)
	p.fwd.fn, p.fwd.n = p.forwardSample, b
	p.bwd.fn, p.bwd.n = p.backwardSample, b
	return p, nil
}

// InLen and OutLen are the sizes of x and y.
func (p *MaxPool) InLen() int  { return p.B * p.C * p.H * p.W }
func (p *MaxPool) OutLen() int { return len(p.arg) }

// Forward computes y from x and records the argmax.
func (p *MaxPool) Forward(x, y []float32) {
	if len(x) != p.InLen() || len(y) != p.OutLen() {
		panic(fmt.Sprintf("cpuops.MaxPool.Forward: %d inputs, %d outputs; want %d, %d", len(x), len(y), p.InLen(), p.OutLen()))
	}
	p.x, p.y = x, y
	p.fwd.run(workers(p.B))
	p.x, p.y = nil, nil
}

func (p *MaxPool) forwardSample(_, i int) {
	hw, ohw := p.H*p.W, p.Ho*p.Wo
	// Output columns [lo, hi) have every tap of a window row inside the
	// plane (ox·S − P ≥ 0 and ox·S − P + K ≤ W): they skip the column
	// checks. The rows' range is found once per output row.
	lo := min(p.Wo, (p.Pad+p.Stride-1)/p.Stride)
	hi := max(lo, min(p.Wo, (p.W+p.Pad-p.K)/p.Stride+1))
	for c := 0; c < p.C; c++ {
		plane := p.x[(i*p.C+c)*hw : (i*p.C+c+1)*hw]
		o := (i*p.C + c) * ohw
		arg, y := p.arg[o:o+ohw], p.y[o:o+ohw]
		for oy := 0; oy < p.Ho; oy++ {
			iy0 := oy*p.Stride - p.Pad
			ky0, ky1 := max(0, -iy0), min(p.K, p.H-iy0)
			for ox := 0; ox < p.Wo; ox++ {
				if ox == lo && ox < hi {
					p.interior(plane, arg[oy*p.Wo:], y[oy*p.Wo:], iy0+ky0, iy0+ky1, lo, hi)
					ox = hi - 1
					continue
				}
				best, bk := int32(-1), int32(0)
				for iy := iy0 + ky0; iy < iy0+ky1; iy++ {
					for kx := 0; kx < p.K; kx++ {
						ix := ox*p.Stride - p.Pad + kx
						if ix < 0 || ix >= p.W {
							continue
						}
						j := int32(iy*p.W + ix)
						if k := orderKey(plane[j]); best < 0 || k > bk {
							best, bk = j, k
						}
					}
				}
				arg[oy*p.Wo+ox] = best
				y[oy*p.Wo+ox] = plane[best]
			}
		}
	}
}

// interior is forwardSample for output columns [lo, hi) of one output row,
// whose windows span input rows [r0, r1) and never leave the plane's
// columns: the first maximum in (row, column) order, as forwardSample's,
// with selects the compiler makes branch-free (a max over activations is a
// coin toss for a branch predictor).
func (p *MaxPool) interior(plane []float32, arg []int32, y []float32, r0, r1, lo, hi int) {
	K, S, W := p.K, p.Stride, p.W
	if K == 3 { // the ResNets' stem: each window row's first maximum, then the rows'
		if S == 2 {
			lo = maxPool3s2Row(plane, W, p.Pad, r0, r1, lo, hi, arg, y)
		}
		for ox := lo; ox < hi; ox++ {
			b := r0*W + ox*S - p.Pad
			best, bk := max3(plane[b:b+3:b+3], b)
			for iy := r0 + 1; iy < r1; iy++ {
				b += W
				j, k := max3(plane[b:b+3:b+3], b)
				m := -gt(k, bk)
				best, bk = best&^m|j&m, max(bk, k)
			}
			arg[ox] = int32(best)
			y[ox] = plane[best]
		}
		return
	}
	for ox := lo; ox < hi; ox++ {
		ix := ox*S - p.Pad
		best := int32(r0*W + ix)
		bk := orderKey(plane[best])
		for iy := r0; iy < r1; iy++ {
			row := plane[iy*W+ix : iy*W+ix+K]
			for kx, v := range row {
				j, k := int32(iy*W+ix+kx), orderKey(v)
				if k > bk {
					best = j
				}
				bk = max(bk, k)
			}
		}
		arg[ox] = best
		y[ox] = plane[best]
	}
}

// max3 is the first maximum of row (3 values, by orderKey) and its index
// b + column, without a branch.
func max3(row []float32, b int) (int, int32) {
	k0, k1, k2 := orderKey(row[0]), orderKey(row[1]), orderKey(row[2])
	k01 := max(k0, k1)
	j := b + gt(k1, k0)
	m := -gt(k2, k01)
	return j&^m | (b+2)&m, max(k01, k2)
}

// gt is 1 when a > b, else 0, without a branch.
func gt(a, b int32) int { return int(uint64(int64(b)-int64(a)) >> 63) }

// Backward computes dx from dy and the argmax of the last Forward.
func (p *MaxPool) Backward(dy, dx []float32) {
	if len(dx) != p.InLen() || len(dy) != p.OutLen() {
		panic(fmt.Sprintf("cpuops.MaxPool.Backward: %d outputs, %d inputs; want %d, %d", len(dy), len(dx), p.OutLen(), p.InLen()))
	}
	p.x, p.y = dx, dy
	p.bwd.run(workers(p.B))
	p.x, p.y = nil, nil
}

func (p *MaxPool) backwardSample(_, i int) {
	hw, ohw := p.H*p.W, p.Ho*p.Wo
	for c := 0; c < p.C; c++ {
		dx := p.x[(i*p.C+c)*hw : (i*p.C+c+1)*hw]
		clear(dx)
		o := (i*p.C + c) * ohw
		for j, g := range p.y[o : o+ohw] {
			dx[p.arg[o+j]] += g
		}
	}
}
