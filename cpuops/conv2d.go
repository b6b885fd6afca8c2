package cpuops

import (
	"fmt"

	"stoke/gemm"
)

// Conv2d is PyTorch's Conv2d(Cin, Cout, K, stride, padding, bias=False) for
// a fixed input shape: the convolution of the ResNets, where a BatchNorm
// follows and no bias or ReLU is fused. Each sample's im2col matrix
// (Cin·K·K, Ho·Wo) is built in a worker's scratch and multiplied as in
// Conv; the stride-1, pad-K/2 case (every 3x3 conv of a block but a
// stage's first, and 1x1 stride 1) runs on Conv's own kernels, whose im2col
// is packed straight into the GEMM's panels. The filter gradient is summed
// in fixed groups of samples, so results do not depend on the core count.
type Conv2d struct {
	B, Cin, H, W, Cout, K, Stride, Pad int
	Ho, Wo                             int

	fwd, bwdData, bwdFilter job
	cols                    [][]float32 // one im2col buffer per worker
	groupDW                 []float32
	groups, perGroup        int

	x, w, y, dy, dx []float32 // the running job's arguments

	// same is the stride-1, pad-K/2 case, run by Conv's kernels (its im2col
	// is packed straight into the GEMM panels, never stored); db is the
	// bias gradient it sums alongside, unused.
	same *Conv
	db   []float32
}

// NewConv2d returns the kernels for a convolution of this shape.
func NewConv2d(b, cin, h, w, cout, k, stride, pad int) (*Conv2d, error) {
	if b < 1 || cin < 1 || h < 1 || w < 1 || cout < 1 || k < 1 || stride < 1 || pad < 0 || pad >= k {
		return nil, fmt.Errorf("cpuops.NewConv2d: bad shape B=%d Cin=%d H=%d W=%d Cout=%d K=%d stride=%d pad=%d", b, cin, h, w, cout, k, stride, pad)
	}
	c := &Conv2d{B: b, Cin: cin, H: h, W: w, Cout: cout, K: k, Stride: stride, Pad: pad}
	c.Ho = (h+2*pad-k)/stride + 1
	c.Wo = (w+2*pad-k)/stride + 1
	if c.Ho < 1 || c.Wo < 1 {
		return nil, fmt.Errorf("cpuops.NewConv2d: a %dx%d input is smaller than the %dx%d kernel with padding %d", h, w, k, k, pad)
	}
	c.fwd.fn, c.fwd.n = c.forwardSample, b
	c.bwdData.fn, c.bwdData.n = c.backwardDataSample, b
	c.groups = min(b, filterGroups)
	c.perGroup = (b + c.groups - 1) / c.groups
	c.groups = (b + c.perGroup - 1) / c.perGroup
	c.bwdFilter.fn, c.bwdFilter.n = c.backwardFilterGroup, c.groups
	if stride == 1 && k%2 == 1 && pad == k/2 {
		var err error
		if c.same, err = newLinearConv(b, cin, h, w, cout, k); err != nil {
			return nil, err
		}
		c.db = make([]float32, cout)
	}
	return c, nil
}

// InLen and OutLen are the sizes of x (B·Cin·H·W) and y (B·Cout·Ho·Wo).
func (c *Conv2d) InLen() int  { return c.B * c.Cin * c.H * c.W }
func (c *Conv2d) OutLen() int { return c.B * c.Cout * c.Ho * c.Wo }

func (c *Conv2d) ckk() int { return c.Cin * c.K * c.K }

// start sizes the per-worker scratch before a job of n items runs (the
// workers then touch only their own slot) and returns the worker count.
func (c *Conv2d) start(n int) int {
	nw := workers(n)
	for len(c.cols) < nw {
		c.cols = append(c.cols, nil)
	}
	return nw
}

func (c *Conv2d) col(worker int) []float32 {
	c.cols[worker] = grow(c.cols[worker], c.ckk()*c.Ho*c.Wo)
	return c.cols[worker]
}

// span is the range [lo, hi) of output columns ox whose input column
// ox·S − P + k lies inside a row of width W.
func span(Wo, W, S, P, k int) (lo, hi int) {
	lo = max(0, (P-k+S-1)/S)
	hi = min(Wo, (W-1+P-k)/S+1)
	if (W - 1 + P - k) < 0 {
		hi = 0
	}
	return lo, max(lo, hi)
}

// im2col writes the (Cin·K·K, Ho·Wo) matrix of one sample x into col.
func (c *Conv2d) im2col(x, col []float32) {
	H, W, Ho, Wo, K, S, P := c.H, c.W, c.Ho, c.Wo, c.K, c.Stride, c.Pad
	r := 0
	for ci := 0; ci < c.Cin; ci++ {
		plane := x[ci*H*W : (ci+1)*H*W]
		for ky := 0; ky < K; ky++ {
			for kx := 0; kx < K; kx++ {
				dst := col[r*Ho*Wo : (r+1)*Ho*Wo]
				r++
				lo, hi := span(Wo, W, S, P, kx)
				for oy := 0; oy < Ho; oy++ {
					iy := oy*S - P + ky
					row := dst[oy*Wo : (oy+1)*Wo]
					if iy < 0 || iy >= H || lo >= hi {
						clear(row)
						continue
					}
					clear(row[:lo])
					clear(row[hi:])
					src := plane[iy*W : (iy+1)*W]
					ix := lo*S - P + kx
					if S == 1 {
						copy(row[lo:hi], src[ix:ix+hi-lo])
						continue
					}
					for ox := lo; ox < hi; ox++ {
						row[ox] = src[ix]
						ix += S
					}
				}
			}
		}
	}
}

// col2im is im2col's adjoint: dx (Cin,H,W) = Σ of col's rows, each added
// back where it was read from.
func (c *Conv2d) col2im(col, dx []float32) {
	H, W, Ho, Wo, K, S, P := c.H, c.W, c.Ho, c.Wo, c.K, c.Stride, c.Pad
	clear(dx)
	r := 0
	for ci := 0; ci < c.Cin; ci++ {
		plane := dx[ci*H*W : (ci+1)*H*W]
		for ky := 0; ky < K; ky++ {
			for kx := 0; kx < K; kx++ {
				src := col[r*Ho*Wo : (r+1)*Ho*Wo]
				r++
				lo, hi := span(Wo, W, S, P, kx)
				if lo >= hi {
					continue
				}
				for oy := 0; oy < Ho; oy++ {
					iy := oy*S - P + ky
					if iy < 0 || iy >= H {
						continue
					}
					dst := plane[iy*W : (iy+1)*W]
					ix := lo*S - P + kx
					if S == 1 {
						addTo(dst[ix:ix+hi-lo], src[oy*Wo+lo:oy*Wo+hi])
						continue
					}
					for _, v := range src[oy*Wo+lo : oy*Wo+hi] {
						dst[ix] += v
						ix += S
					}
				}
			}
		}
	}
}

// Forward computes y = conv(x, w), w (Cout,Cin,K,K).
func (c *Conv2d) Forward(x, w, y []float32) {
	c.check("Forward", x, w, y)
	if c.same != nil {
		c.same.Forward(x, w, nil, y)
		return
	}
	c.x, c.w, c.y = x, w, y
	c.fwd.run(c.start(c.B))
	c.x, c.w, c.y = nil, nil, nil
}

func (c *Conv2d) forwardSample(worker, i int) {
	hw, ohw, ckk := c.H*c.W, c.Ho*c.Wo, c.ckk()
	x := c.x[i*c.Cin*hw : (i+1)*c.Cin*hw]
	y := c.y[i*c.Cout*ohw : (i+1)*c.Cout*ohw]
	col := c.col(worker)
	c.im2col(x, col)
	gemm.Sgemm(false, false, c.Cout, ohw, ckk, 1, c.w, ckk, col, ohw, 0, y, ohw)
}

// BackwardData computes dx from the weights and the output gradient dy.
func (c *Conv2d) BackwardData(w, dy, dx []float32) {
	c.check("BackwardData", dx, w, dy)
	if c.same != nil {
		c.same.BackwardData(w, dy, dy, dx)
		return
	}
	c.w, c.dy, c.dx = w, dy, dx
	c.bwdData.run(c.start(c.B))
	c.w, c.dy, c.dx = nil, nil, nil
}

func (c *Conv2d) backwardDataSample(worker, i int) {
	hw, ohw, ckk := c.H*c.W, c.Ho*c.Wo, c.ckk()
	dy := c.dy[i*c.Cout*ohw : (i+1)*c.Cout*ohw]
	dx := c.dx[i*c.Cin*hw : (i+1)*c.Cin*hw]
	col := c.col(worker)
	gemm.Sgemm(true, false, ckk, ohw, c.Cout, 1, c.w, ckk, dy, ohw, 0, col, ohw)
	c.col2im(col, dx)
}

// BackwardFilter computes dw, summed over the batch, from x and dy.
func (c *Conv2d) BackwardFilter(x, dy, dw []float32) {
	c.check("BackwardFilter", x, dw, dy)
	if c.same != nil {
		c.same.BackwardFilter(x, dy, dy, dw, c.db)
		return
	}
	c.x, c.dy = x, dy
	n := c.Cout * c.ckk()
	c.groupDW = grow(c.groupDW, c.groups*n)
	c.bwdFilter.run(c.start(c.groups))
	copy(dw, c.groupDW[:n])
	for g := 1; g < c.groups; g++ {
		addTo(dw, c.groupDW[g*n:(g+1)*n])
	}
	c.x, c.dy = nil, nil
}

func (c *Conv2d) backwardFilterGroup(worker, g int) {
	hw, ohw, ckk := c.H*c.W, c.Ho*c.Wo, c.ckk()
	dw := c.groupDW[g*c.Cout*ckk : (g+1)*c.Cout*ckk]
	for i := g * c.perGroup; i < min(c.B, (g+1)*c.perGroup); i++ {
		x := c.x[i*c.Cin*hw : (i+1)*c.Cin*hw]
		dy := c.dy[i*c.Cout*ohw : (i+1)*c.Cout*ohw]
		col := c.col(worker)
		c.im2col(x, col)
		var beta float32
		if i > g*c.perGroup {
			beta = 1
		}
		gemm.Sgemm(false, true, c.Cout, ckk, ohw, 1, dy, ohw, col, ohw, beta, dw, ckk)
	}
}

func (c *Conv2d) check(what string, in, w, out []float32) {
	if len(in) != c.InLen() || len(w) != c.Cout*c.ckk() || len(out) != c.OutLen() {
		panic(fmt.Sprintf("cpuops.Conv2d.%s: got in %d, w %d, out %d values; want %d, %d, %d",
			what, len(in), len(w), len(out), c.InLen(), c.Cout*c.ckk(), c.OutLen()))
	}
}
