package cpuops

import (
	"fmt"

	"stoke/gemm"
)

// Conv is one conv block on the CPU, for a fixed shape: a KxK convolution
// with stride 1 and padding K/2, a per-channel bias and ReLU, and, with
// Pool, a 2x2 stride-2 max-pool (floor), all fused. Its output y is
// (B,Cout,H,W), or (B,Cout,H/2,W/2) with Pool. It owns its scratch;
// methods are not safe for concurrent use.
//
// With Pool the full-size activations are never stored: each sample's
// conv output lives in a worker's scratch until it is pooled, and its
// gradient is rebuilt there from the pooled gradient and the argmax (the
// ReLU's derivative folded in: a pooled 0 passes nothing). That saves the
// largest tensors of the step and two passes over them.
type Conv struct {
	B, Cin, H, W, Cout, K int
	Pool                  bool

	fwd, bwdData, bwdFilter job
	scratch                 []convScratch // one per worker
	groupDW, groupDB        []float32     // per-group filter-gradient partial sums
	groups, perGroup        int

	x, w, b, y, dy, dx []float32 // the running job's arguments
	taps               []tap     // rows of the im2col matrix of x
	arg                []uint8   // with Pool: the argmax of each output (see MaxPool)
}

type convScratch struct {
	col, dpre, full []float32
	cols            colPanels
	colsT           colTPanels
}

// filterGroups is how many partial sums the filter gradient is split into:
// a fixed number, so that the summation order, and the result to the last
// bit, do not depend on the number of cores.
const filterGroups = 8

// NewConv returns the kernels for a conv block of this shape, with a fused
// max-pool when pool is set.
func NewConv(b, cin, h, w, cout, k int, pool bool) (*Conv, error) {
	if b < 1 || cin < 1 || h < 1 || w < 1 || cout < 1 || k < 1 || k%2 == 0 || (pool && (h < 2 || w < 2)) {
		return nil, fmt.Errorf("cpuops.NewConv: bad shape B=%d Cin=%d H=%d W=%d Cout=%d K=%d pool=%v (K odd; H, W >= 2 to pool)", b, cin, h, w, cout, k, pool)
	}
	c := &Conv{B: b, Cin: cin, H: h, W: w, Cout: cout, K: k, Pool: pool}
	if pool {
		c.arg = make([]uint8, b*cout*(h/2)*(w/2))
	}
	c.taps = makeTaps(cin, h, w, k)
	c.fwd.fn, c.fwd.n = c.forwardSample, b
	c.bwdData.fn, c.bwdData.n = c.backwardDataSample, b
	c.groups = min(b, filterGroups)
	c.perGroup = (b + c.groups - 1) / c.groups
	c.groups = (b + c.perGroup - 1) / c.perGroup
	c.bwdFilter.fn, c.bwdFilter.n = c.backwardFilterGroup, c.groups
	return c, nil
}

func (c *Conv) hw() int { return c.H * c.W }

// OutLen is the number of outputs: B·Cout·H·W, or B·Cout·(H/2)·(W/2) with Pool.
func (c *Conv) OutLen() int { return c.B * c.Cout * c.outHW() }

func (c *Conv) outHW() int {
	if c.Pool {
		return (c.H / 2) * (c.W / 2)
	}
	return c.H * c.W
}
func (c *Conv) ckk() int { return c.Cin * c.K * c.K }

func (c *Conv) scratchFor(nw int) {
	for len(c.scratch) < nw {
		c.scratch = append(c.scratch, convScratch{})
	}
}

// Forward computes y = ReLU(conv(x, w) + b), max-pooled with Pool.
func (c *Conv) Forward(x, w, b, y []float32) {
	c.check("Forward", x, w, y)
	if len(b) != c.Cout {
		panic(fmt.Sprintf("cpuops.Conv.Forward: bias has %d values, want %d", len(b), c.Cout))
	}
	c.x, c.w, c.b, c.y = x, w, b, y
	nw := workers(c.B)
	c.scratchFor(nw)
	c.fwd.run(nw)
	c.x, c.w, c.b, c.y = nil, nil, nil, nil
}

func (c *Conv) forwardSample(worker, i int) {
	hw, ckk := c.hw(), c.ckk()
	x := c.x[i*c.Cin*hw : (i+1)*c.Cin*hw]
	var y []float32
	if c.Pool {
		s := &c.scratch[worker]
		s.full = grow(s.full, c.Cout*hw)
		y = s.full
	} else {
		y = c.y[i*c.Cout*hw : (i+1)*c.Cout*hw]
	}
	if c.K == 1 {
		gemm.Sgemm(false, false, c.Cout, hw, ckk, 1, c.w, ckk, x, hw, 0, y, hw)
	} else {
		cols := &c.scratch[worker].cols
		*cols = colPanels{c.taps, c.H, c.W, x}
		gemm.SgemmPanels(false, c.Cout, hw, ckk, 1, c.w, ckk, cols, 0, y, hw)
		cols.x = nil
	}
	for o, bias := range c.b {
		biasReLU(y[o*hw:(o+1)*hw], bias)
	}
	if c.Pool {
		o := c.Cout * c.outHW()
		pool2x2(y, c.Cout, c.H, c.W, c.y[i*o:(i+1)*o], c.arg[i*o:(i+1)*o])
	}
}

// BackwardData computes dx, the gradient with respect to the block's input,
// from the output y (where it is 0, the ReLU passes no gradient) and the
// output gradient dy, both as Forward's output.
func (c *Conv) BackwardData(w, y, dy, dx []float32) {
	c.check("BackwardData", dx, w, y)
	if len(dy) != len(y) {
		panic(fmt.Sprintf("cpuops.Conv.BackwardData: dy has %d values, want %d", len(dy), len(y)))
	}
	c.w, c.y, c.dy, c.dx = w, y, dy, dx
	nw := workers(c.B)
	c.scratchFor(nw)
	c.bwdData.run(nw)
	c.w, c.y, c.dy, c.dx = nil, nil, nil, nil
}

// backwardDataSample computes sample i's dcol = wᵀ·dpre and scatters it
// back with col2im. (Computing dx instead as a convolution of dpre with
// the flipped kernel needs no scatter, but its im2col matrix has Cout·K·K
// rows, not Cin·K·K: measured slower here, where Cout = 2·Cin.)
func (c *Conv) backwardDataSample(worker, i int) {
	hw, ckk := c.hw(), c.ckk()
	dpre := c.mask(worker, i)
	dx := c.dx[i*c.Cin*hw : (i+1)*c.Cin*hw]
	if c.K == 1 { // the im2col matrix is x itself
		gemm.Sgemm(true, false, c.Cin, hw, c.Cout, 1, c.w, ckk, dpre, hw, 0, dx, hw)
		return
	}
	s := &c.scratch[worker]
	s.col = grow(s.col, ckk*hw)
	gemm.Sgemm(true, false, ckk, hw, c.Cout, 1, c.w, ckk, dpre, hw, 0, s.col, hw)
	c.col2im(s.col, dx)
}

// col2im is im2col's adjoint: dx (Cin,H,W) = Σ over the rows of col, each
// shifted back.
func (c *Conv) col2im(col, dx []float32) {
	H, W := c.H, c.W
	hw := H * W
	clear(dx)
	for r, t := range c.taps {
		plane := dx[t.plane : t.plane+hw]
		x0, x1 := max(0, -t.dx), min(W, W-t.dx)
		if x0 >= x1 {
			continue
		}
		for oy := max(0, -t.dy); oy < min(H, H-t.dy); oy++ {
			iy := oy + t.dy
			src := col[r*hw+oy*W+x0 : r*hw+oy*W+x1]
			addTo(plane[iy*W+x0+t.dx:iy*W+x1+t.dx], src)
		}
	}
}

// BackwardFilter computes the weight and bias gradients, summed over the
// batch, from the input x, the output y and the output gradient dy.
func (c *Conv) BackwardFilter(x, y, dy, dw, db []float32) {
	c.check("BackwardFilter", x, dw, y)
	if len(dy) != len(y) || len(db) != c.Cout {
		panic(fmt.Sprintf("cpuops.Conv.BackwardFilter: dy has %d values (want %d), db %d (want %d)", len(dy), len(y), len(db), c.Cout))
	}
	c.x, c.y, c.dy = x, y, dy
	nw := workers(c.groups)
	c.scratchFor(nw)
	n := c.Cout * c.ckk()
	c.groupDW = grow(c.groupDW, c.groups*n)
	c.groupDB = grow(c.groupDB, c.groups*c.Cout)
	c.bwdFilter.run(nw)
	copy(dw, c.groupDW[:n])
	copy(db, c.groupDB[:c.Cout])
	for g := 1; g < c.groups; g++ {
		addTo(dw, c.groupDW[g*n:(g+1)*n])
		addTo(db, c.groupDB[g*c.Cout:(g+1)*c.Cout])
	}
	c.x, c.y, c.dy = nil, nil, nil
}

func (c *Conv) backwardFilterGroup(worker, g int) {
	hw, ckk := c.hw(), c.ckk()
	dw := c.groupDW[g*c.Cout*ckk : (g+1)*c.Cout*ckk]
	db := c.groupDB[g*c.Cout : (g+1)*c.Cout]
	clear(db)
	for i := g * c.perGroup; i < min(c.B, (g+1)*c.perGroup); i++ {
		dpre := c.mask(worker, i)
		x := c.x[i*c.Cin*hw : (i+1)*c.Cin*hw]
		var beta float32
		if i > g*c.perGroup {
			beta = 1
		}
		if c.K == 1 {
			gemm.Sgemm(false, true, c.Cout, ckk, hw, 1, dpre, hw, x, hw, beta, dw, ckk)
		} else {
			cols := &c.scratch[worker].colsT
			*cols = colTPanels{c, x}
			gemm.SgemmPanels(false, c.Cout, ckk, hw, 1, dpre, hw, cols, beta, dw, ckk)
			cols.x = nil
		}
		for o := range db {
			var s float32
			for _, v := range dpre[o*hw : (o+1)*hw] {
				s += v
			}
			db[o] += s
		}
	}
}

// mask returns sample i's gradient before the ReLU, (Cout, H·W): dy where
// y > 0, else 0; with Pool, dy routed back through the argmax first.
func (c *Conv) mask(worker, i int) []float32 {
	n := c.Cout * c.hw()
	o := c.Cout * c.outHW()
	s := &c.scratch[worker]
	s.dpre = grow(s.dpre, n)
	y, dy := c.y[i*o:(i+1)*o], c.dy[i*o:(i+1)*o]
	if c.Pool {
		unpool2x2(dy, y, c.arg[i*o:(i+1)*o], c.Cout, c.H, c.W, s.dpre)
	} else {
		reluMask(s.dpre, y, dy)
	}
	return s.dpre
}

func (c *Conv) check(what string, in, w, out []float32) {
	hw := c.hw()
	if len(in) != c.B*c.Cin*hw || len(w) != c.Cout*c.ckk() || len(out) != c.OutLen() {
		panic(fmt.Sprintf("cpuops.Conv.%s: got in %d, w %d, out %d values; want %d, %d, %d",
			what, len(in), len(w), len(out), c.B*c.Cin*hw, c.Cout*c.ckk(), c.OutLen()))
	}
}
