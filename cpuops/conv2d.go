package cpuops

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"unsafe"

	"stoke/gemm"
)

// Conv2d is PyTorch's Conv2d(Cin, Cout, K, stride, padding, groups,
// bias=False) for a fixed input shape: the convolution of the ResNets,
// where a BatchNorm follows and no bias or ReLU is fused.
//
// Every pass is one GEMM per group of samples, on the im2col matrix
// (Cin·K·K rows, one column per output pixel) of the group's samples side
// by side, never stored: its panels are gathered straight from a
// zero-padded copy of the input (gatherPanels), so that no gather checks a
// border, and a run of 16 output pixels in one row at stride 1 is one
// 64-byte copy per row of the matrix. The weights are packed for the GEMM
// once per call (gemm.PackA), not once per sample. Groups are large enough
// that the GEMM has at least a few hundred columns even on the 8x8 and 4x4
// stages, where one sample alone would stream the whole packed weight
// matrix for 64 or 16 columns.
//
//	Forward        y = w·col                       per group, w packed once
//	BackwardData   dcol = wᵀ·dy, then col2im        per group, wᵀ packed once;
//	               at stride 1, dx = conv(dy, w turned 180°), as Forward
//	BackwardFilter dw = Σ dy·colᵀ                   in fixed groups of samples
//
// Forward and BackwardData give, element for element, the sums one sample
// alone gives; the filter gradient is summed over several samples
// per GEMM and then over groups in order, so no result depends on the core
// count.
//
// With Groups > 1 the weights are (Cout, Cin/Groups, K, K) and every pass
// is, per group of samples, one GEMM per channel group over that group's
// rows of the same im2col matrix (its taps) and of w, dy or dw: the same
// gathers, the same workers; with Groups = 1 the one GEMM is the one above.
type Conv2d struct {
	B, Cin, H, W, Cout, K, Stride, Pad int
	Groups                             int // channel groups: nn.Conv2d's groups
	Ho, Wo                             int

	hp, wp int // the padded input plane, (H+2·Pad)×(W+2·Pad)

	prec gemm.Precision // what every GEMM's inputs are rounded to (SetPrecision)

	fwd, bwdData, bwdFilter job
	reduce                  job // the filter gradient's sum of its groups' partial sums, by blocks of dw
	packJob, flipJob        job // the weights' packing for a pass (k blocks of each group's), and BackwardData's flip
	packing                 []gemm.PackedA
	packBlocks              int
	per, perF               int // samples per GEMM: Forward and BackwardData, BackwardFilter
	groups, perGroup        int // the filter gradient's fixed groups of samples
	tiles, tile             int // BackwardFilter's items per group: tiles of dw, tile rows or columns each
	tileRows                bool
	fwdTiles, fwdTile       int // Forward's items per group: tiles of fwdTile output pixels (columns), or with fwdRows of fwdTile output channels (rows)
	fwdRows                 bool
	bwdTiles, bwdTile       int       // BackwardData's items per group (its im2col GEMM's): tiles of bwdTile input channels
	fwdOut, ownOut          []float32 // with fwdTiles > 1 and groups of several samples: each group's output, shared by its tiles (ownOut, or shared's)

	wA, wT   []gemm.PackedA // per channel group, its w (Cout/Groups × Cin/Groups·K·K) and wᵀ, packed by the running call (in packed())
	ownPack  []gemm.PackedA // packed()'s, unshared
	taps     []int          // row r = (ci, ky, kx) of im2col: its offset in a padded sample
	pixels   []int          // column j of a group: sample j/(Ho·Wo)'s output pixel, as an offset in the padded samples
	pixelsF  []int          // the same for BackwardFilter's groups of perF samples
	dyRows   []int          // row co of a group's dy: offset co·Ho·Wo
	dyCols   []int          // column j of a group's dy: offset of sample j/(Ho·Wo)'s pixel
	kindFwd  []uint8        // per 16-column panel of pixels: how to gather it (panelKind)
	kindDy   []uint8
	scratch  []conv2dScratch // one per worker, the running call's (start): ownScratch, or shared's
	ownScr   []conv2dScratch
	groupDW  []float32 // the running BackwardFilter's partial sums: ownDW, or shared's
	ownDW    []float32
	shared   *Conv2dShared
	x, y, dy []float32 // the running job's arguments
	dx, dw   []float32
	w, wflip []float32 // BackwardData's weights and where flipJob turns them, while it runs

	// The cnn's conv block (NewConvBlock): the bias + ReLU epilogue, and
	// with pool the 2x2 max-pool after it; y is then the block's output.
	block  bool
	pool   bool
	arg    []uint8   // with pool: the argmax of each output (pool2x2's)
	bias   []float32 // the running ForwardBlock's b
	yBlock []float32 // the running backward's y (the block's output)
	ownDB  []float32 // BackwardFilterBlock's per-group bias-gradient sums

	// back is, at stride 1, BackwardData as a forward convolution: dx =
	// conv(dy, wflip) with padding K−1−Pad, wflip (Cin,Cout,K,K) the
	// weights with in and out swapped and the kernel turned by 180°. Its
	// GEMM is as deep as the forward's (Cout·K·K, not Cout) and needs no
	// col2im scatter. A 1x1 kernel's wflip is wᵀ (per channel group), so it
	// is packed from w as a transpose and never written.
	back    *Conv2d
	ownFlip []float32

	// Winograd's F(2x2, 3x3) (SetWinograd, winograd.go): the plan, and
	// the running Forward's transformed weights and their packing.
	wino            *winograd
	winoV, ownWinoV []float32
	winoA, ownWinoA []gemm.PackedA
	// and the running filter gradient's (winograd_filter.go): a chunk's
	// transformed input and dy, its samples [winoC0, winoC1), and whether
	// its products add to the chunks' before (winoBeta 1).
	winoU, ownWinoU   []float32
	winoDY, ownWinoDY []float32
	winoC0, winoC1    int
	winoBeta          float32
	winoFlip          bool // the running Forward is BackwardData's back conv on the unflipped w (winoWeights)
}

// Conv2dShared is the scratch that several Conv2d share (Share), each part
// as large as the largest of them needs: the filter gradient's per-group
// partial sums, the packed weights of the running pass, BackwardData's
// flipped weights, Forward's tile outputs and the workers' im2col, padding
// and col2im buffers. Each conv keeping its own, a model held 8 times its
// weights in the partial sums (357 MiB of resnet18's 1.4 GiB), and resnet50
// at batch 4 its weights twice over packed (182 MiB) and 179 MiB of worker
// buffers; shared, the largest conv's. Convs sharing one must never run at
// the same time (a model's ops run one at a time).
type Conv2dShared struct {
	groupDW []float32
	packed  []gemm.PackedA
	wflip   []float32
	fwdOut  []float32
	scratch []conv2dScratch
	winoV   []float32
	winoA   []gemm.PackedA
	winoU   []float32
	winoDY  []float32
}

// SetPrecision makes every pass's GEMM round its inputs to p (gemm.PackAPrec,
// SgemmPanelsPrec): Forward x and w, BackwardData dy and w, BackwardFilter
// x and dy, each exactly as if rounded beforehand; the sums, the outputs
// and a conv block's bias, ReLU, pool and bias gradient stay float32. The
// zero Conv2d is FP32.
func (c *Conv2d) SetPrecision(p gemm.Precision) {
	c.prec = p
	if c.back != nil {
		c.back.prec = p
	}
}

// Precision is what SetPrecision set.
func (c *Conv2d) Precision() gemm.Precision { return c.prec }

// Share makes c keep its filter-gradient partial sums in s, between calls
// free for the other convs sharing s.
func (c *Conv2d) Share(s *Conv2dShared) {
	c.shared = s
	if c.back != nil {
		c.back.shared = s
	}
}

// packed returns the running pass's packed weights, one per channel group:
// shared's, or c's own.
func (c *Conv2d) packed() []gemm.PackedA {
	p := &c.ownPack
	if c.shared != nil {
		p = &c.shared.packed
	}
	for len(*p) < c.Groups {
		*p = append(*p, gemm.PackedA{})
	}
	return (*p)[:c.Groups]
}

// sharedBuf returns the buffer of n values that own or, when c shares, s
// names, grown to n.
func (c *Conv2d) sharedBuf(own *[]float32, s func(*Conv2dShared) *[]float32, n int) []float32 {
	if c.shared != nil {
		own = s(c.shared)
	}
	*own = grow(*own, n)
	return *own
}

type conv2dScratch struct {
	pad, out, col, dxpad, dyT []float32
	dpre                      []float32 // a conv block's gradient before its ReLU, for a group
	dyP, dwT                  []float32 // filterDirectGroup's dyᵀ panels and its tile of dwᵀ
	xb, dyB                   []uint32  // at bf16 (filterBF16Group): the padded input in bf16, dyᵀ's panels in pairs
	segs                      []int     // and its runs of pixels
	panels                    gatherPanels
	panelsT                   gatherTPanels
	wU, wM                    []float32 // winoGroup's transformed input and products
	wPanels                   winoPanels
	wDY                       winoDYPanels
	wA                        gemm.PackedA // winoFilterGemm's U[ξ]
}

// filterGroups is how many partial sums the filter gradient is split into
// at most: a number fixed by the shape, so that the summation order, and
// the result to the last bit, do not depend on the number of cores. A
// group holds at least filterColumns pixels of the batch (one group when
// the whole batch has fewer): on small planes, groups of a sample or two
// made GEMMs of depth 49-98 (resnet50's and resnet18's stage 4 at 224 px)
// whose partial sums, each the size of dw, then had to be written,
// read and added (resnet18's stage 4 at batch 16: 8 of 2.4M floats).
//
// Fewer groups than cores leave cores idle, so each group's dw is then
// cut into tiles, whole rows (output channels) or whole columns (taps),
// each a work item of its own that computes its part of the group's GEMM
// (tileFilter): every element of dw gets the same sum in the same order
// whichever item computes it (the GEMM gives each element of C the same
// bits whatever the block of C around it), so the tiles may follow the
// core count while the groups follow the shape.
const (
	filterGroups    = 8
	filterTileLines = 128 // the narrowest tile of dw: rows, or columns
)

// Samples per GEMM: enough for this many columns (output pixels).
const (
	convColumns   = 256  // Forward, BackwardData
	filterColumns = 1024 // BackwardFilter (its GEMM's depth)
)

// minForwardTile is the fewest columns (output pixels) a tile of a
// Forward group has.
const minForwardTile = 64

// minRowTile is the fewest rows (output channels) a row tile of a
// Forward group has.
const minRowTile = 48

// NewConv2d returns the kernels for a convolution of this shape.
// Cin and Cout must be multiples of groups.
func NewConv2d(b, cin, h, w, cout, k, stride, pad, groups int) (*Conv2d, error) {
	c, err := newConv2d(b, cin, h, w, cout, k, stride, pad, groups)
	if err == nil && stride == 1 {
		if c.back, err = newConv2d(b, cout, c.Ho, c.Wo, cin, k, 1, k-1-pad, groups); err != nil {
			return nil, err
		}
	}
	return c, err
}

// NewConvBlock returns the kernels of the cnn's conv block: a KxK Conv2d
// (K odd) with stride 1 and padding K/2, then the epilogue: a per-channel
// bias and ReLU, and with pool a 2x2 stride-2 max-pool (floor; the first
// maximum of a window, a NaN winning, as MaxPool), all fused. Its output
// y is (B,Cout,H,W), or (B,Cout,H/2,W/2) with pool; ForwardBlock,
// BackwardDataBlock and BackwardFilterBlock are its passes.
//
// With pool the full-size activations are never stored: each group's conv
// output lives in a worker's scratch until it is pooled, and its gradient
// is rebuilt there from the pooled gradient and the argmax (the ReLU's
// derivative folded in: a pooled 0 passes nothing). Its backward sums as
// the unfused layers would in order: dx through col2im, never the
// flipped-kernel convolution, and the filter gradient one sample per GEMM
// (bit for bit the kernels the block had before it was a Conv2d).
func NewConvBlock(b, cin, h, w, cout, k int, pool bool) (*Conv2d, error) {
	if b < 1 || cin < 1 || h < 1 || w < 1 || cout < 1 || k < 1 || k%2 == 0 || (pool && (h < 2 || w < 2)) {
		return nil, fmt.Errorf("cpuops.NewConvBlock: bad shape B=%d Cin=%d H=%d W=%d Cout=%d K=%d pool=%v (K odd; H, W >= 2 to pool)", b, cin, h, w, cout, k, pool)
	}
	c, err := newConv2d(b, cin, h, w, cout, k, 1, k/2, 1)
	if err != nil {
		return nil, err
	}
	c.block, c.pool = true, pool
	c.perF = 1
	if pool {
		c.arg = make([]uint8, b*cout*(h/2)*(w/2))
	}
	return c, nil
}

func newConv2d(b, cin, h, w, cout, k, stride, pad, groups int) (*Conv2d, error) {
	if b < 1 || cin < 1 || h < 1 || w < 1 || cout < 1 || k < 1 || stride < 1 || pad < 0 || pad >= k {
		return nil, fmt.Errorf("cpuops.NewConv2d: bad shape B=%d Cin=%d H=%d W=%d Cout=%d K=%d stride=%d pad=%d", b, cin, h, w, cout, k, stride, pad)
	}
	if groups < 1 || cin%groups != 0 || cout%groups != 0 {
		return nil, fmt.Errorf("cpuops.NewConv2d: groups=%d must be at least 1 and divide both Cin=%d and Cout=%d", groups, cin, cout)
	}
	c := &Conv2d{B: b, Cin: cin, H: h, W: w, Cout: cout, K: k, Stride: stride, Pad: pad, Groups: groups}
	c.Ho = (h+2*pad-k)/stride + 1
	c.Wo = (w+2*pad-k)/stride + 1
	if c.Ho < 1 || c.Wo < 1 {
		return nil, fmt.Errorf("cpuops.NewConv2d: a %dx%d input is smaller than the %dx%d kernel with padding %d", h, w, k, k, pad)
	}
	c.hp, c.wp = h+2*pad, w+2*pad
	ohw := c.Ho * c.Wo
	c.per = min(b, (convColumns+ohw-1)/ohw)
	items := (b + c.per - 1) / c.per
	c.fwd.fn, c.fwd.n = c.forwardGroup, items
	c.fwdTiles, c.fwdTile = 1, c.per*ohw
	c.bwdData.fn, c.bwdData.n = c.backwardDataGroup, items
	c.groups = max(1, min(b, filterGroups, b*ohw/filterColumns))
	c.perGroup = (b + c.groups - 1) / c.groups
	c.groups = (b + c.perGroup - 1) / c.perGroup
	c.perF = min(c.perGroup, (filterColumns+ohw-1)/ohw)
	c.tiles, c.tile = 1, c.gkk()
	c.bwdFilter.fn, c.bwdFilter.n = c.backwardFilterGroup, c.groups
	c.reduce.fn = c.reduceBlock
	c.packJob.fn = c.packItem
	c.flipJob.fn, c.flipJob.n = c.flipChannel, cout

	plane, sample := c.hp*c.wp, cin*c.hp*c.wp
	for ci := 0; ci < cin; ci++ {
		for ky := 0; ky < k; ky++ {
			for kx := 0; kx < k; kx++ {
				c.taps = append(c.taps, ci*plane+ky*c.wp+kx)
			}
		}
	}
	pixels := func(samples, stride int) []int {
		p := make([]int, 0, samples*ohw)
		for t := 0; t < samples; t++ {
			for oy := 0; oy < c.Ho; oy++ {
				for ox := 0; ox < c.Wo; ox++ {
					p = append(p, t*stride+oy*c.Stride*c.wp+ox*c.Stride)
				}
			}
		}
		return p
	}
	c.pixels, c.pixelsF = pixels(c.per, sample), pixels(c.perF, sample)
	c.kindFwd = panelKinds(c.pixels)
	for co := 0; co < cout; co++ {
		c.dyRows = append(c.dyRows, co*ohw)
	}
	for j := 0; j < c.per*ohw; j++ {
		c.dyCols = append(c.dyCols, j/ohw*cout*ohw+j%ohw)
	}
	c.kindDy = panelKinds(c.dyCols)
	return c, nil
}

// tileFilter cuts each group's dw (og × gkk per channel group) into tiles
// when there are fewer groups than the nw workers: along its larger side,
// so that each item repeats the smaller operand (dy for column tiles, the
// im2col panels for row tiles), into up to nw/groups tiles of at least
// filterTileLines lines, whole micro-kernel tiles each. The tiles change
// which item computes an element of dw, never its bits.
func (c *Conv2d) tileFilter(nw int) {
	og, gk := c.og(), c.gkk()
	c.tileRows = og > gk
	lines, unit := gk, 32 // the AVX-512 kernel's columns
	if c.tileRows {
		lines, unit = og, 12 // and its rows
	}
	if c.filterDirect() { // whole tiles of the direct kernels: 18 taps, 32 channels
		unit = 18
		if c.tileRows {
			unit = 32
		}
	}
	c.tiles = max(1, min(tilesFor(c.groups, nw), lines/filterTileLines))
	c.tile = ((lines+c.tiles-1)/c.tiles + unit - 1) / unit * unit
	c.tiles = (lines + c.tile - 1) / c.tile
	c.bwdFilter.n = c.groups * c.tiles
}

// tileForward cuts each Forward group into tiles, each an item, when
// the groups alone would leave some of the nw workers idle (a small
// batch of small planes; tilesFor): up to tilesFor's count of tiles of
// the group's columns (output pixels, whole 32-column panels, at least
// minForwardTile each), or, with one channel group, of its rows (output
// channels, whole RowBlocks, at least minRowTile each), whichever gives
// the largest tile the smaller share. Rows split evenly where the
// columns of a 7x7 plane do not (196 of a batch of 4: 128 and 68), and
// each row tile reads its part of the weights alone. Every output gets
// the bits it gets untiled. A conv block is never tiled.
func (c *Conv2d) tileForward(nw int) {
	items := (c.B + c.per - 1) / c.per
	cols := c.per * c.Ho * c.Wo
	c.fwdTiles, c.fwdTile, c.fwdRows = 1, cols, false
	if want := tilesFor(items, nw); want > 1 && !c.block {
		c.fwdTiles = max(1, min(want, cols/minForwardTile))
		c.fwdTile = ((cols+c.fwdTiles-1)/c.fwdTiles + 31) / 32 * 32
		c.fwdTiles = (cols + c.fwdTile - 1) / c.fwdTile
		if rt := max(1, min(want, c.Cout/minRowTile)); c.Groups == 1 && rt > 1 {
			tile := ((c.Cout+rt-1)/rt + gemm.RowBlock - 1) / gemm.RowBlock * gemm.RowBlock
			if tile*cols < c.fwdTile*c.Cout { // tile/Cout < fwdTile/cols
				c.fwdTiles, c.fwdTile, c.fwdRows = (c.Cout+tile-1)/tile, tile, true
			}
		}
	}
	c.fwd.n = items * c.fwdTiles
}

// InLen and OutLen are the sizes of x (B·Cin·H·W) and y (B·Cout·Ho·Wo;
// a pooling conv block's, B·Cout·(H/2)·(W/2)).
func (c *Conv2d) InLen() int  { return c.B * c.Cin * c.H * c.W }
func (c *Conv2d) OutLen() int { return c.B * c.Cout * c.outHW() }

// outHW is the pixels of one output plane.
func (c *Conv2d) outHW() int {
	if c.pool {
		return (c.H / 2) * (c.W / 2)
	}
	return c.Ho * c.Wo
}

// ckk is the im2col matrix's rows, Cin·K·K; gkk a weight row's length,
// Cin/Groups·K·K (one channel group's rows of the matrix); og a channel
// group's outputs, Cout/Groups.
func (c *Conv2d) ckk() int { return c.Cin * c.K * c.K }
func (c *Conv2d) gkk() int { return c.Cin / c.Groups * c.K * c.K }
func (c *Conv2d) og() int  { return c.Cout / c.Groups }

// pack packs each channel group's w (og × gkk, row-major) into p[g], or
// its transpose with trans: PackAPrec's packing, its k blocks shared by
// the workers (a model's weights are packed twice a step, and on one core
// that pass would leave the others idle).
func (c *Conv2d) pack(p []gemm.PackedA, trans bool, w []float32) {
	gk, og := c.gkk(), c.og()
	for g := range p {
		wg := w[g*og*gk : (g+1)*og*gk]
		if trans {
			c.packBlocks = gemm.PackABlocks(&p[g], c.prec, true, gk, og, wg, gk)
		} else {
			c.packBlocks = gemm.PackABlocks(&p[g], c.prec, false, og, gk, wg, gk)
		}
	}
	c.packAll(p)
}

// packT is pack for w given as each channel group's transpose, gkk × og
// (row-major, one group after another): the same packed A, to the bit.
func (c *Conv2d) packT(p []gemm.PackedA, w []float32) {
	gk, og := c.gkk(), c.og()
	for g := range p {
		c.packBlocks = gemm.PackABlocks(&p[g], c.prec, true, og, gk, w[g*og*gk:(g+1)*og*gk], og)
	}
	c.packAll(p)
}

// packAll runs the packing that p's PackABlocks began, on the workers.
func (c *Conv2d) packAll(p []gemm.PackedA) {
	c.packing = p
	c.packJob.n = len(p) * c.packBlocks
	c.packJob.run(workers(c.packJob.n))
	c.packing = nil
}

func (c *Conv2d) packItem(_, i int) { gemm.PackABlock(&c.packing[i/c.packBlocks], i%c.packBlocks) }

// start sizes the per-worker scratch before a job of n items runs (the
// workers then touch only their own slot) and returns the worker count.
func (c *Conv2d) start(n int) int {
	nw := workers(n)
	slots := &c.ownScr
	if c.shared != nil {
		slots = &c.shared.scratch
	}
	for len(*slots) < nw {
		*slots = append(*slots, conv2dScratch{})
	}
	c.scratch = *slots
	return nw
}

// padded returns samples [i0, i1) of x with Pad zeros around every plane,
// in the worker's scratch (x itself when Pad is 0), and the precision its
// values are rounded to: at TF32 or BF16 on the fp32 kernels the copy is
// rounded once, as the GEMM would round each of the K·K panels gathered
// from it (the same bits, and then a panel of 16 pixels in a row is read
// where it lies: gemm.RunPanels).
func (c *Conv2d) padded(s *conv2dScratch, i0, i1 int) ([]float32, gemm.Precision) {
	n := c.Cin * c.H * c.W
	if c.Pad == 0 {
		return c.x[i0*n : i1*n], gemm.FP32
	}
	planes := (i1 - i0) * c.Cin
	s.pad = grow(s.pad, planes*c.hp*c.wp)
	padPlanes(s.pad, c.x[i0*n:i1*n], planes, c.H, c.W, c.Pad)
	if c.prec == gemm.FP32 || c.prec == gemm.BF16 && gemm.FastBF16() {
		return s.pad, gemm.FP32
	}
	gemm.RoundSlice(c.prec, s.pad)
	return s.pad, c.prec
}

// padPlanes writes planes H×W planes of x, each with P zeros around it,
// into dst ((H+2P)×(W+2P) floats a plane): the inner rows by
// padRowsAVX512 where it runs (P <= 8), and by copy and clear otherwise.
func padPlanes(dst, x []float32, planes, H, W, P int) {
	hp, wp := H+2*P, W+2*P
	_, _ = dst[:planes*hp*wp], x[:planes*H*W]
	vec := useAVX512 && P <= 8 && H > 0 && W > 0
	for p := 0; p < planes; p++ {
		d := dst[p*hp*wp : (p+1)*hp*wp]
		clear(d[:P*wp+P])
		src := x[p*H*W : (p+1)*H*W]
		if vec {
			// The last row's gap ends at (H+P)·wp + P, within d.
			padRowsAVX512(&d[P*wp+P], &src[0], H, W, wp, uint16(1)<<(W%16)-1, uint16(1)<<(2*P)-1)
		} else {
			for iy := 0; iy < H; iy++ {
				row := d[(iy+P)*wp+P:]
				copy(row[:W], src[iy*W:(iy+1)*W])
				clear(row[W : W+2*P]) // the right pad of this row, the left of the next
			}
		}
		clear(d[(H+P)*wp+P:])
	}
}

// Forward computes y = conv(x, w), w (Cout,Cin/Groups,K,K).
func (c *Conv2d) Forward(x, w, y []float32) {
	c.plain("Forward")
	c.forward(x, w, false, nil, y)
}

// ForwardBlock is a conv block's forward (NewConvBlock): y = ReLU(conv(x,
// w) + b), max-pooled with pool, the argmax kept.
func (c *Conv2d) ForwardBlock(x, w, b, y []float32) {
	c.isBlock("ForwardBlock")
	if len(b) != c.Cout {
		panic(fmt.Sprintf("cpuops.Conv2d.ForwardBlock: bias has %d values, want %d", len(b), c.Cout))
	}
	c.forward(x, w, false, b, y)
}

// forward is Forward and ForwardBlock; with wT, w holds each channel
// group's weights transposed (Cin/Groups·K·K × Cout/Groups), as a 1x1
// conv's are for its BackwardData's back conv.
func (c *Conv2d) forward(x, w []float32, wT bool, b, y []float32) {
	c.check("Forward", x, w, y)
	if c.wino != nil && !wT && b == nil && c.prec == gemm.FP32 {
		c.forwardWinograd(x, w, y)
		return
	}
	c.wA = c.packed()
	if wT {
		c.packT(c.wA, w)
	} else {
		c.pack(c.wA, false, w)
	}
	c.x, c.y, c.bias = x, y, b
	c.tileForward(runtime.GOMAXPROCS(0))
	if c.fwdTiles > 1 && c.per > 1 {
		c.fwdOut = c.sharedBuf(&c.ownOut, func(s *Conv2dShared) *[]float32 { return &s.fwdOut }, len(y))
	}
	c.fwd.run(c.start(c.fwd.n))
	c.x, c.y, c.bias, c.wA, c.fwdOut = nil, nil, nil, nil, nil
}

// plain and isBlock check that a pass matches the kind of conv.
func (c *Conv2d) plain(what string) {
	if c.block {
		panic("cpuops.Conv2d." + what + " on a conv block: call " + what + "Block")
	}
}

func (c *Conv2d) isBlock(what string) {
	if !c.block {
		panic("cpuops.Conv2d." + what + " on a Conv2d that is not a conv block (NewConvBlock)")
	}
}

// forwardGroup is Forward's item: a tile of a group (forwardTile), or for
// a conv block, whose epilogue and pool take whole planes, a whole group.
func (c *Conv2d) forwardGroup(worker, item int) {
	if !c.block {
		c.forwardTile(worker, item/c.fwdTiles, item%c.fwdTiles)
		return
	}
	g := item
	i0, i1 := g*c.per, min(c.B, (g+1)*c.per)
	ohw, n := c.Ho*c.Wo, (i1-i0)*c.Ho*c.Wo
	s := &c.scratch[worker]
	gk, og := c.gkk(), c.og()
	src, rounded := c.padded(s, i0, i1)
	s.panels = gatherPanels{src: src, cols: c.pixels[:n], kind: c.kindFwd, rounded: rounded}
	if i1-i0 == 1 && !c.pool {
		y := c.y[i0*c.Cout*ohw : i1*c.Cout*ohw]
		for g := range c.wA {
			s.panels.rows = c.taps[g*gk : (g+1)*gk]
			gemm.SgemmPackedPanels(&c.wA[g], n, 1, &s.panels, 0, y[g*og*ohw:], ohw)
		}
		for o, b := range c.bias {
			biasReLU(y[o*ohw:(o+1)*ohw], b)
		}
	} else {
		s.out = grow(s.out, c.Cout*n)
		for g := range c.wA {
			s.panels.rows = c.taps[g*gk : (g+1)*gk]
			gemm.SgemmPackedPanels(&c.wA[g], n, 1, &s.panels, 0, s.out[g*og*n:], n)
		}
		o1 := c.outHW()
		for t := 0; t < i1-i0; t++ {
			for o := 0; o < c.Cout; o++ {
				plane := s.out[o*n+t*ohw : o*n+(t+1)*ohw]
				if c.bias != nil {
					biasReLU(plane, c.bias[o])
				}
				at := ((i0+t)*c.Cout + o) * o1
				if c.pool {
					pool2x2(plane, 1, c.H, c.W, c.y[at:at+o1], c.arg[at:at+o1])
				} else {
					copy(c.y[at:at+o1], plane)
				}
			}
		}
	}
	s.panels = gatherPanels{}
}

// forwardTile is Forward's tile t of group g (the whole group when
// untiled): output pixels (columns) [j0, j1) of the group's samples side
// by side, or with fwdRows its output channels (rows) [o0, o1), gathered
// from the group's padded samples (which each tile pads for itself, in
// its worker's scratch) and written straight into y for one sample; for
// several, into the worker's scratch (untiled) or the group's part of
// fwdOut (shared by its tiles), and then its part of each plane copied
// into y.
func (c *Conv2d) forwardTile(worker, g, t int) {
	i0, i1 := g*c.per, min(c.B, (g+1)*c.per)
	ohw, n := c.Ho*c.Wo, (i1-i0)*c.Ho*c.Wo
	j0, j1, o0, o1 := t*c.fwdTile, min(n, (t+1)*c.fwdTile), 0, c.Cout
	if c.fwdRows {
		j0, j1, o0, o1 = 0, n, t*c.fwdTile, min(c.Cout, (t+1)*c.fwdTile)
	}
	if j0 >= j1 { // the last group's samples are fewer
		return
	}
	s := &c.scratch[worker]
	gk, og := c.gkk(), c.og()
	src, rounded := c.padded(s, i0, i1)
	s.panels = gatherPanels{src: src, cols: c.pixels[j0:j1], kind: c.kindFwd[j0/gemm.NR:], rounded: rounded}
	out, ld := c.y[i0*c.Cout*ohw:i1*c.Cout*ohw], ohw
	switch {
	case i1-i0 > 1 && c.fwdTiles == 1:
		s.out = grow(s.out, c.Cout*n)
		out, ld = s.out, n
	case i1-i0 > 1:
		out, ld = c.fwdOut[g*c.Cout*c.per*ohw:], n
	}
	for cg := range c.wA { // with fwdRows, the one channel group
		s.panels.rows = c.taps[cg*gk : (cg+1)*gk]
		r0, r1 := max(0, o0-cg*og), min(og, o1-cg*og)
		gemm.SgemmPackedPanelsRows(&c.wA[cg], r0, r1, j1-j0, 1, &s.panels, 0, out[(cg*og+r0)*ld+j0:], ld)
	}
	s.panels = gatherPanels{}
	if i1-i0 == 1 {
		return
	}
	for o := o0; o < o1; o++ {
		row := out[o*n : (o+1)*n]
		for j := j0; j < j1; {
			tt := j / ohw
			e := min(j1, (tt+1)*ohw)
			at := ((i0+tt)*c.Cout+o)*ohw + j - tt*ohw
			copy(c.y[at:at+e-j], row[j:e])
			j = e
		}
	}
}

// preReLU returns the gradient before a conv block's ReLU (and pool) for
// samples [i0, i1), side by side as dy's samples are, in the worker's
// scratch: dy where the block's output y is not 0; with pool, dy routed
// back through the argmax first (unpool2x2, the mask folded in).
func (c *Conv2d) preReLU(s *conv2dScratch, i0, i1 int) []float32 {
	n, o := c.Cout*c.Ho*c.Wo, c.Cout*c.outHW()
	s.dpre = grow(s.dpre, (i1-i0)*n)
	for i := i0; i < i1; i++ {
		d := s.dpre[(i-i0)*n : (i-i0+1)*n]
		y, dy := c.yBlock[i*o:(i+1)*o], c.dy[i*o:(i+1)*o]
		if c.pool {
			unpool2x2(dy, y, c.arg[i*o:(i+1)*o], c.Cout, c.H, c.W, d)
		} else {
			reluMask(d, y, dy)
		}
	}
	return s.dpre
}

// BackwardData computes dx from the weights and the output gradient dy.
func (c *Conv2d) BackwardData(w, dy, dx []float32) {
	c.plain("BackwardData")
	c.check("BackwardData", dx, w, dy)
	switch {
	case c.back != nil && c.K == 1: // wflip is each channel group's wᵀ
		c.back.forward(dy, w, true, nil, dx)
	case c.back != nil && c.back.wino != nil && c.back.prec == gemm.FP32 && c.K == 3:
		// F(2x2, 3x3) reads the flipped weights from w where they lie.
		c.back.winoFlip = true
		c.back.forward(dy, w, false, nil, dx)
		c.back.winoFlip = false
	case c.back != nil:
		c.w = w
		c.wflip = c.sharedBuf(&c.ownFlip, func(s *Conv2dShared) *[]float32 { return &s.wflip }, len(w))
		c.flipJob.run(workers(c.flipJob.n))
		c.back.forward(dy, c.wflip, false, nil, dx)
		c.w, c.wflip = nil, nil
	default:
		c.wT = c.packed()
		c.pack(c.wT, true, w)
		c.dy, c.dx = dy, dx
		c.tileBackward(runtime.GOMAXPROCS(0))
		c.bwdData.run(c.start(c.bwdData.n))
		c.dy, c.dx, c.wT = nil, nil, nil
	}
}

// BackwardDataBlock is a conv block's dx from the weights, the block's
// output y (the ReLU's mask; with pool, the pooled values) and its
// gradient dy, both as ForwardBlock's y.
func (c *Conv2d) BackwardDataBlock(w, y, dy, dx []float32) {
	c.isBlock("BackwardData")
	c.check("BackwardDataBlock", dx, w, y)
	if len(dy) != len(y) {
		panic(fmt.Sprintf("cpuops.Conv2d.BackwardDataBlock: dy has %d values, want %d", len(dy), len(y)))
	}
	c.wT = c.packed()
	c.pack(c.wT, true, w)
	c.yBlock, c.dy, c.dx = y, dy, dx
	c.bwdTiles, c.bwdTile, c.bwdData.n = 1, c.Cin, (c.B+c.per-1)/c.per
	c.bwdData.run(c.start(c.bwdData.n))
	c.yBlock, c.dy, c.dx, c.wT = nil, nil, nil, nil
}

// tileBackward cuts each group of BackwardData's im2col GEMM (a strided
// conv's, or one with channel groups) into tiles of its rows, input
// channels [c0, c1) each, when the groups alone would leave some of the
// nw workers idle (resnet50's stage-4 downsampling at batch 4: one
// group; tilesFor): up to tilesFor's count of tiles of whole RowBlocks
// of rows and at least minRowTile rows each. A tile's rows are all that
// its channels of dx are added from, so each tile finishes its channels'
// col2im alone; every value of dx gets the bits it gets untiled. With
// channel groups the GEMM is one per channel group and is not tiled.
func (c *Conv2d) tileBackward(nw int) {
	items := (c.B + c.per - 1) / c.per
	c.bwdTiles, c.bwdTile = 1, c.Cin
	kk := c.K * c.K
	unit := gemm.RowBlock / gcd(gemm.RowBlock, kk) // channels whose rows start on a RowBlock
	if want := tilesFor(items, nw); want > 1 && c.Groups == 1 {
		tiles := max(1, min(want, c.Cin*kk/minRowTile, c.Cin/unit))
		c.bwdTile = ((c.Cin+tiles-1)/tiles + unit - 1) / unit * unit
		c.bwdTiles = (c.Cin + c.bwdTile - 1) / c.bwdTile
	}
	c.bwdData.n = items * c.bwdTiles
}

// tilesFor is how many tiles to cut each of a pass's items groups into
// for nw workers: 1 when the groups alone hand the workers shares within
// 1/8 of equal, else the fewest that do. Three groups on 2 cores (resnet18's
// stage 4 at batch 16: 6, 6 and 4 samples of 49 pixels) leave one core
// idle a third of the pass; cut in two, they make six items, three each.
func tilesFor(items, nw int) int {
	t := 1
	for k := items; k < nw || (k+nw-1)/nw*nw*8 > k*9; k += items {
		t++
	}
	return t
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// backwardDataGroup is BackwardData's item: tile t of group g, the rows
// of input channels [c0, c1) of the group's im2col GEMM (all of them
// untiled), into the worker's scratch, then those channels of each of the
// group's samples of dx (col2im).
func (c *Conv2d) backwardDataGroup(worker, item int) {
	g, t := item/c.bwdTiles, item%c.bwdTiles
	i0, i1 := g*c.per, min(c.B, (g+1)*c.per)
	kk := c.K * c.K
	c0, c1 := t*c.bwdTile, min(c.Cin, (t+1)*c.bwdTile)
	ohw, n := c.Ho*c.Wo, (i1-i0)*c.Ho*c.Wo
	s := &c.scratch[worker]
	var dy []float32
	if c.block {
		dy = c.preReLU(s, i0, i1)
	} else {
		dy = c.dy[i0*c.Cout*ohw : i1*c.Cout*ohw]
	}
	s.panels = gatherPanels{src: dy, cols: c.dyCols[:n], kind: c.kindDy}
	s.col = grow(s.col, (c1-c0)*kk*n)
	gk, og := c.gkk(), c.og()
	if c.bwdTiles > 1 { // one channel group
		s.panels.rows = c.dyRows
		gemm.SgemmPackedPanelsRows(&c.wT[0], c0*kk, c1*kk, n, 1, &s.panels, 0, s.col, n)
	} else {
		for g := range c.wT { // channel group g's rows of the im2col matrix
			s.panels.rows = c.dyRows[g*og : (g+1)*og]
			gemm.SgemmPackedPanels(&c.wT[g], n, 1, &s.panels, 0, s.col[g*gk*n:], n)
		}
	}
	s.panels = gatherPanels{}
	for t := 0; t < i1-i0; t++ {
		c.col2im(s, s.col[t*ohw:], n, c.dx[(i0+t)*c.Cin*c.H*c.W:(i0+t+1)*c.Cin*c.H*c.W], c0, c1)
	}
}

// col2im is im2col's adjoint for input channels [c0, c1): their planes
// of dx (Cin,H,W) = Σ over their rows of col (one sample's Ho·Wo columns,
// row stride ld, row 0 channel c0's first tap), each added back where it
// was read from, row by row in order. It adds into a padded plane, so
// that no add checks a border, and crops it into dx; at stride 2,
// col2imStride2 adds the same values in the same order straight into dx.
func (c *Conv2d) col2im(s *conv2dScratch, col []float32, ld int, dx []float32, c0, c1 int) {
	if c.Stride == 2 {
		c.col2imStride2(col, ld, dx, c0, c1)
		return
	}
	H, W, Wo, S, P := c.H, c.W, c.Wo, c.Stride, c.Pad
	plane, kk := c.hp*c.wp, c.K*c.K
	acc := dx
	if P > 0 {
		s.dxpad = grow(s.dxpad, c.Cin*plane)
		acc = s.dxpad
	}
	clear(acc[c0*plane : c1*plane])
	for r, off := range c.taps[c0*kk : c1*kk] {
		src := col[r*ld:]
		for oy := 0; oy < c.Ho; oy++ {
			dst := acc[off+oy*S*c.wp:]
			row := src[oy*Wo : (oy+1)*Wo]
			if S == 1 {
				addTo(dst[:Wo], row)
				continue
			}
			for ox, v := range row {
				dst[ox*S] += v
			}
		}
	}
	if P == 0 {
		return
	}
	for ci := c0; ci < c1; ci++ {
		plane := acc[ci*plane:]
		for iy := 0; iy < H; iy++ {
			copy(dx[(ci*H+iy)*W:(ci*H+iy+1)*W], plane[(iy+P)*c.wp+P:])
		}
	}
}

// addStride2Rows sets dst[r·ld+2i] += src[r·srcLd+i] for r < rows,
// i < w: by addStride2RowsAVX512 where it runs, here otherwise.
func addStride2Rows(dst, src []float32, w, rows, ld, srcLd int) {
	if rows <= 0 || w <= 0 {
		return
	}
	_, _ = dst[(rows-1)*ld+2*w-2], src[(rows-1)*srcLd+w-1]
	if useAVX512 {
		addStride2RowsAVX512(&dst[0], &src[0], w, rows, ld, srcLd, uint8(1)<<(w%8)-1)
		return
	}
	for r := 0; r < rows; r++ {
		d, s := dst[r*ld:], src[r*srcLd:r*srcLd+w]
		for i, v := range s {
			d[2*i] += v
		}
	}
}

// span2 is the outputs [o0, o1) of n at stride 2 whose input 2·o + t
// lies in [0, size).
func span2(t, size, n int) (o0, o1 int) {
	if t < 0 {
		o0 = (1 - t) / 2
	}
	if size-1-t < 0 {
		return 0, 0
	}
	return o0, max(o0, min(n, (size-1-t)/2+1))
}

// col2imStride2 is col2im at stride 2, added straight into dx: each
// tap's rows and columns clipped to the outputs whose input lies inside
// the plane (col2im's padded plane takes the others and drops them), tap
// by tap in the same order, so every value of dx gets the same adds in
// the same order, without the padded plane, its clearing or the crop.
func (c *Conv2d) col2imStride2(col []float32, ld int, dx []float32, c0, c1 int) {
	H, W, Ho, Wo, K, P := c.H, c.W, c.Ho, c.Wo, c.K, c.Pad
	clear(dx[c0*H*W : c1*H*W])
	for ci := c0; ci < c1; ci++ {
		plane := dx[ci*H*W : (ci+1)*H*W]
		for ky := 0; ky < K; ky++ {
			oy0, oy1 := span2(ky-P, H, Ho)
			for kx := 0; kx < K; kx++ {
				ox0, ox1 := span2(kx-P, W, Wo)
				if oy0 == oy1 || ox0 == ox1 {
					continue
				}
				r := ((ci-c0)*K+ky)*K + kx // col's row: channel ci's tap (ky, kx)
				addStride2Rows(plane[(2*oy0+ky-P)*W+2*ox0+kx-P:], col[r*ld+oy0*Wo+ox0:], ox1-ox0, oy1-oy0, 2*W, Wo)
			}
		}
	}
}

// BackwardFilter computes dw, summed over the batch, from x and dy.
func (c *Conv2d) BackwardFilter(x, dy, dw []float32) {
	c.plain("BackwardFilter")
	c.backwardFilter(x, dy, dw)
}

// BackwardFilterBlock is a conv block's weight and bias gradients, summed
// over the batch, from the input x, the block's output y and its gradient
// dy (as ForwardBlock's y).
func (c *Conv2d) BackwardFilterBlock(x, y, dy, dw, db []float32) {
	c.isBlock("BackwardFilter")
	if len(dy) != len(y) || len(db) != c.Cout {
		panic(fmt.Sprintf("cpuops.Conv2d.BackwardFilterBlock: dy has %d values (want %d), db %d (want %d)", len(dy), len(y), len(db), c.Cout))
	}
	c.ownDB = grow(c.ownDB, c.groups*c.Cout)
	c.yBlock = y
	c.backwardFilter(x, dy, dw)
	copy(db, c.ownDB[:c.Cout])
	for g := 1; g < c.groups; g++ {
		addTo(db, c.ownDB[g*c.Cout:(g+1)*c.Cout])
	}
	c.yBlock = nil
}

func (c *Conv2d) backwardFilter(x, dy, dw []float32) {
	c.check("BackwardFilter", x, dw, dy)
	if c.wino != nil && c.prec == gemm.FP32 {
		c.backwardFilterWinograd(x, dy, dw)
		return
	}
	c.x, c.dy = x, dy
	n := c.Cout * c.gkk()
	c.tileFilter(runtime.GOMAXPROCS(0))
	if c.groups == 1 { // the one group's sum is dw
		c.groupDW = dw
		c.bwdFilter.run(c.start(c.bwdFilter.n))
		c.x, c.dy, c.groupDW = nil, nil, nil
		return
	}
	sums := &c.ownDW
	if c.shared != nil {
		sums = &c.shared.groupDW
	}
	*sums = grow(*sums, c.groups*n)
	c.groupDW = *sums
	c.bwdFilter.run(c.start(c.bwdFilter.n))
	// dw = the groups' sums added in group order, element by element, in
	// blocks the workers share.
	c.dw = dw
	c.reduce.n = (n + reduceBlock - 1) / reduceBlock
	c.reduce.run(workers(c.reduce.n))
	c.x, c.dy, c.groupDW, c.dw = nil, nil, nil, nil
}

// reduceBlock is the values of dw one item of the groups' sum adds.
const reduceBlock = 16384

func (c *Conv2d) reduceBlock(_, b int) {
	n := len(c.dw)
	lo, hi := b*reduceBlock, min(n, (b+1)*reduceBlock)
	dw := c.dw[lo:hi]
	copy(dw, c.groupDW[lo:hi])
	for g := 1; g < c.groups; g++ {
		addTo(dw, c.groupDW[g*n+lo:g*n+hi])
	}
}

// backwardFilterGroup sums group g's dw = Σ dy·colᵀ, perF samples per GEMM:
// their dy side by side (Cout × perF·Ho·Wo) times their im2col matrices
// stacked (perF·Ho·Wo × Cin·K·K); with channel groups, one GEMM per group
// over its rows of dy and its columns of colᵀ.
func (c *Conv2d) backwardFilterGroup(worker, item int) {
	g, t := item/c.tiles, item%c.tiles
	ohw, gk, og := c.Ho*c.Wo, c.gkk(), c.og()
	dw := c.groupDW[g*c.Cout*gk : (g+1)*c.Cout*gk]
	// This item's tile of each channel group's og × gk block of dw: rows
	// [r0, r1) and columns [c0, c1).
	r0, r1, c0, c1 := 0, og, 0, gk
	if c.tileRows {
		r0, r1 = t*c.tile, min(og, (t+1)*c.tile)
	} else {
		c0, c1 = t*c.tile, min(gk, (t+1)*c.tile)
	}
	s := &c.scratch[worker]
	end := min(c.B, (g+1)*c.perGroup)
	var db []float32 // a conv block's: the group's bias-gradient sums, in its first tile
	if c.block && t == 0 {
		db = c.ownDB[g*c.Cout : (g+1)*c.Cout]
		clear(db)
	}
	direct := c.filterDirect()
	if direct {
		s.dwT = grow(s.dwT, (r1-r0)*(c1-c0))
	}
	for i0 := g * c.perGroup; i0 < end; i0 += c.perF {
		i1 := min(end, i0+c.perF)
		k := (i1 - i0) * ohw
		var a []float32
		if c.block { // perF is 1
			a = c.preReLU(s, i0, i1)
			for o := range db {
				var sum float32
				for _, v := range a[o*ohw : (o+1)*ohw] {
					sum += v
				}
				db[o] += sum
			}
		} else {
			a = c.dy[i0*c.Cout*ohw : i1*c.Cout*ohw]
		}
		if i1-i0 > 1 && !direct { // the samples' dy side by side (the direct kernels read it as it lies)
			s.dyT = grow(s.dyT, c.Cout*k)
			for t := 0; t < i1-i0; t++ {
				for o := 0; o < c.Cout; o++ {
					copy(s.dyT[o*k+t*ohw:o*k+(t+1)*ohw], a[(t*c.Cout+o)*ohw:])
				}
			}
			a = s.dyT
		}
		src, rounded := c.padded(s, i0, i1)
		if direct {
			c.filterDirectGroup(s, a, k, src, r0, r1, c0, c1, i0 == g*c.perGroup)
			continue
		}
		s.panelsT = gatherTPanels{src: src, cols: c.pixelsF[:k], rounded: rounded}
		var beta float32
		if i0 > g*c.perGroup {
			beta = 1
		}
		for cg := 0; cg < c.Groups; cg++ {
			s.panelsT.rows = c.taps[cg*gk+c0 : cg*gk+c1]
			gemm.SgemmPanelsPrec(c.prec, false, r1-r0, c1-c0, k, 1, a[(cg*og+r0)*k:], k, &s.panelsT, beta, dw[(cg*og+r0)*gk+c0:], gk)
		}
		s.panelsT = gatherTPanels{}
	}
	if direct {
		transposeInto(dw, gk, r0, c0, s.dwT, c1-c0, r1-r0)
	}
}

// flipChannel writes output channel co's part of wflip (Cin, Cout/Groups,
// K, K): input channel ci = g·cg + j of group g gets, from each of the
// group's outputs co = g·og + o, w[co][j] turned by 180°.
func (c *Conv2d) flipChannel(_, co int) {
	K, cg, og := c.K, c.Cin/c.Groups, c.og()
	g, o := co/og, co%og
	for j := 0; j < cg; j++ {
		ci := g*cg + j
		src := c.w[(co*cg+j)*K*K : (co*cg+j+1)*K*K]
		dst := c.wflip[(ci*og+o)*K*K : (ci*og+o+1)*K*K]
		if K == 3 { // the common kernel, unrolled: one bounds check each way
			s, d := (*[9]float32)(src), (*[9]float32)(dst)
			d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8] = s[8], s[7], s[6], s[5], s[4], s[3], s[2], s[1], s[0]
			continue
		}
		for i, v := range src {
			dst[K*K-1-i] = v
		}
	}
}

func (c *Conv2d) check(what string, in, w, out []float32) {
	if len(in) != c.InLen() || len(w) != c.Cout*c.gkk() || len(out) != c.OutLen() {
		panic(fmt.Sprintf("cpuops.Conv2d.%s: got in %d, w %d, out %d values; want %d, %d, %d",
			what, len(in), len(w), len(out), c.InLen(), c.Cout*c.gkk(), c.OutLen()))
	}
}

// How a panel of 16 columns is gathered: one contiguous run of 16, two of
// 8 (an 8-wide output at stride 1), or value by value (one AVX-512 gather
// a row where the CPU has it: gatherPanel).
const (
	panelGather uint8 = iota
	panelRun16
	panelRun8
	panelStride2 // two runs of 8 at stride 2 (or one of 16): copyRows16s2AVX512, where it runs
)

// evenLanes is copyRows16s2AVX512's VPERMT2PS index: the even floats of
// its two loads.
var evenLanes = [16]int32{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}

func panelKinds(cols []int) []uint8 {
	const nr = gemm.NR
	run := func(j, n int) bool { return stepRun(cols[j:j+n], 1) }
	kinds := make([]uint8, (len(cols)+nr-1)/nr)
	for p := range kinds {
		switch j := p * nr; {
		case j+nr > len(cols):
		case run(j, nr):
			kinds[p] = panelRun16
		case run(j, nr/2) && run(j+nr/2, nr/2):
			kinds[p] = panelRun8
		case stepRun(cols[j:j+nr/2], 2) && stepRun(cols[j+nr/2:j+nr], 2):
			kinds[p] = panelStride2
		}
	}
	return kinds
}

// stepRun says whether cols[i] = cols[0] + step·i for every i.
func stepRun(cols []int, step int) bool {
	for i := 1; i < len(cols); i++ {
		if cols[i] != cols[0]+step*i {
			return false
		}
	}
	return true
}

// gatherPanels is op(B)[q][j] = src[rows[q] + cols[j]]: an im2col matrix
// of padded inputs (rows are taps, columns output pixels), or a group's
// output gradients side by side (rows channels, columns pixels). Every
// index is in src by construction.
type gatherPanels struct {
	src        []float32
	rows, cols []int
	kind       []uint8
	rounded    gemm.Precision // what src's values are rounded to already
}

// RoundedTo makes gatherPanels a gemm.RoundedPanels: a GEMM at that
// precision does not round its panels again.
func (g *gatherPanels) RoundedTo() gemm.Precision { return g.rounded }

func (g *gatherPanels) PackB(dst []float32, pc, jc, kb, nb int) {
	const nr = gemm.NR
	src, rows := g.src, g.rows[pc:pc+kb]
	r0, r1 := 0, -1 // the rows' least and greatest offsets, once a gather needs them
	for jr := 0; jr < nb; jr += nr {
		nn := min(nr, nb-jr)
		panel := dst[jr*kb : jr*kb+kb*nr]
		j0 := jc + jr
		kind := panelGather
		if nn == nr {
			kind = g.kind[j0/nr]
		}
		if kind == panelStride2 && !useAVX512 {
			kind = panelGather
		}
		switch kind {
		case panelRun16, panelRun8, panelStride2:
			// Both offset lists increase: the last row's run ends
			// furthest into src. The copies read unchecked.
			c0, c1 := g.cols[j0], g.cols[j0+nr/2]
			if end := rows[kb-1] + g.cols[j0+nr-1]; end >= len(src) {
				panic(fmt.Sprintf("cpuops: im2col panel at %d past %d inputs", end, len(src)))
			}
			switch kind {
			case panelRun16:
				copyRows16(panel, src, rows, c0)
			case panelRun8:
				copyRows8x2(panel, src, rows, c0, c1)
			default: // the last float read is the last one used, at c1+14
				_ = panel[16*kb-1]
				copyRows16s2AVX512(&panel[0], &src[0], &rows[0], kb, c0, c1, &evenLanes[0])
			}
		default:
			cols := g.cols[j0 : j0+nn]
			if useAVX512 {
				if r1 < 0 {
					r0, r1 = slices.Min(rows), slices.Max(rows)
				}
				if gatherPanel(panel, src, rows, r0, r1, cols) {
					continue
				}
			}
			for q, r := range rows {
				d := panel[q*nr : q*nr+nr]
				s := src[r:]
				for j, c := range cols {
					d[j] = s[c]
				}
				clear(d[nn:])
			}
		}
	}
}

// RunSource and Run make gatherPanels a gemm.RunPanels: a panel of one
// run of 16 pixels is read where it lies in src, not copied.
func (g *gatherPanels) RunSource() ([]float32, []int) { return g.src, g.rows }

func (g *gatherPanels) Run(j int) int {
	if j+gemm.NR > len(g.cols) || g.kind[j/gemm.NR] != panelRun16 {
		return -1
	}
	return g.cols[j]
}

// PackPairs writes a panel whose 16 pixels are one run of the input as
// bf16 pairs in one pass (gemm.PairPanels), the rows read as PackB's
// copyRows16 reads them; other panels it leaves to PackB.
func (g *gatherPanels) PackPairs(w *gemm.PairWriter, pc, j, kb int) bool {
	const nr = gemm.NR
	if j+nr > len(g.cols) || g.kind[j/nr] != panelRun16 {
		return false
	}
	w.Rows(g.src, g.rows[pc:pc+kb], g.cols[j])
	return true
}

// gatherPanel sets panel[16q+j] = src[rows[q]+cols[j]] (0 past len(cols))
// with one AVX-512 gather a row, when every index lies in src and the
// columns' spread fits an int32 (r0 and r1 are the least and greatest of
// rows); it reports whether it did.
func gatherPanel(panel, src []float32, rows []int, r0, r1 int, cols []int) bool {
	const nr = gemm.NR
	if len(rows) == 0 || len(cols) == 0 || len(cols) > nr {
		return false
	}
	c0, c1 := slices.Min(cols), slices.Max(cols)
	if c1-c0 > math.MaxInt32 || r0+c0 < 0 || r1+c1 >= len(src) {
		return false
	}
	var idx [nr]int32
	for j, c := range cols {
		idx[j] = int32(c - c0)
	}
	_ = panel[nr*len(rows)-1]
	gatherRows16AVX512(&panel[0], &src[c0], &rows[0], len(rows), &idx[0], uint16(1<<len(cols)-1))
	return true
}

// gatherTPanels is op(B)[q][j] = src[rows[j] + cols[q]], the transpose of
// gatherPanels' matrix: an im2col matrix's transpose (the filter gradient's
// dy·colᵀ), k running over pixels, n over taps.
type gatherTPanels struct {
	src        []float32
	rows, cols []int
	rounded    gemm.Precision // as gatherPanels'
}

func (g *gatherTPanels) RoundedTo() gemm.Precision { return g.rounded }

func (g *gatherTPanels) PackB(dst []float32, pc, jc, kb, nb int) {
	const nr = gemm.NR
	cols := g.cols[pc : pc+kb]
	// Both offset lists increase, so the last pair is the largest index:
	// checked once here, the gathers below read unchecked.
	if last := g.rows[jc+nb-1] + cols[kb-1]; last >= len(g.src) {
		panic(fmt.Sprintf("cpuops: im2col gather at %d past %d inputs", last, len(g.src)))
	}
	base := unsafe.Pointer(unsafe.SliceData(g.src))
	for jr := 0; jr < nb; jr += nr {
		nn := min(nr, nb-jr)
		panel := dst[jr*kb : jr*kb+kb*nr]
		taps := g.rows[jc+jr : jc+jr+nn]
		var idx [nr]int32
		gather := useAVX512 && taps[nn-1]-taps[0] <= math.MaxInt32
		if gather {
			for j, r := range taps {
				idx[j] = int32(r - taps[0])
			}
		}
		// gatherRows sets the panel's rows q0..q1-1, one AVX-512 gather each.
		gatherRows := func(q0, q1 int) {
			gatherRows16AVX512(&panel[q0*nr], &g.src[taps[0]], &cols[q0], q1-q0, &idx[0], uint16(1<<nn-1))
		}
		if nn < nr {
			if gather {
				gatherRows(0, kb)
				continue
			}
			for q, c := range cols {
				d := panel[q*nr : q*nr+nr]
				for j, r := range taps {
					d[j] = *(*float32)(unsafe.Add(base, 4*(c+r)))
				}
				clear(d[nn:])
			}
			continue
		}
		offs := (*[nr]int)(g.rows[jc+jr:])
		// inRow: pixels q..q+7 lie in a row at stride 1.
		inRow := func(q int) bool { return q+8 <= kb && cols[q+7] == cols[q]+7 }
		for q := 0; q < kb; {
			// Eight pixels in a row at stride 1: a 16x8 transpose of
			// contiguous loads, not 128 gathers.
			if c := cols[q]; inRow(q) && transpose16x8(panel[q*nr:], g.src[c:], offs) {
				q += 8
				continue
			}
			if gather {
				// up to the next eight pixels in a row, if any
				q1 := q + 1
				for q1 < kb && !inRow(q1) {
					q1++
				}
				gatherRows(q, q1)
				q = q1
				continue
			}
			d := (*[nr]float32)(panel[q*nr:])
			p := unsafe.Add(base, 4*cols[q])
			for j, r := range offs {
				d[j] = *(*float32)(unsafe.Add(p, 4*r))
			}
			q++
		}
	}
}
