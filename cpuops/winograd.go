package cpuops

import (
	"fmt"
	"math"

	"stoke/gemm"
)

// Winograd's minimal filtering, F(2x2, 3x3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2015): a 3x3 conv at
// stride 1 computes each 2x2 tile of an output plane from the 4x4 tile
// of its padded input under it as
//
//	Y = Aᵀ [ Σ_ci (G g Gᵀ) ⊙ (Bᵀ d B) ] A
//
// so that, per tile, output channel and input channel, 16 products take
// the place of 36: the products are 16 GEMMs, one per position ξ of the
// 4x4 transform, V[ξ] (Cout×Cin, the transformed weights) times U[ξ]
// (Cin × tiles, the transformed input), 2.25 times fewer multiply-adds
// than the im2col GEMM's. SetWinograd turns it on for Forward, for
// BackwardData through the back conv, and for BackwardFilter
// (winograd_filter.go).
//
// It changes the rounding, not the sums: the transforms add and subtract
// (and G halves), so each output is the exact convolution up to float32
// rounding of a longer chain of sums, within a bound that
// TestWinogradWithinBound derives and checks; it is not the im2col GEMM's
// bits, which is why it is a choice (train.winograd) and not the default.
// Its own bits do not depend on the core count or the kernel path: the
// transforms (winoInGo, winoOutGo, and the same adds in the same order in
// winograd_amd64.s) are float32 adds in a fixed order, and the GEMMs are
// the gemm package's, whose AVX2 and AVX-512 kernels give the same bits
// (its pure-Go kernel, without fused multiply-adds, does not).
//
// Each item is a group of samples: its input is padded (padded), transformed
// into U (16·Cin rows of ld tiles, in the worker's scratch), multiplied
// by the 16 packed V[ξ] into M (16·Cout rows), and M transformed back into
// the group's output planes; a group's U is sized (winoBytes) for U and M
// to stay near L2. Planes narrower than 32 gather and scatter their tiles
// (winoInG, winoOutS) so that the transforms' 16 lanes are full.

// winograd is a conv's plan for F(2x2, 3x3) (SetWinograd).
type winograd struct {
	per   int     // samples per item
	tiles int     // 2x2 output tiles of a sample: (H/2)·(W/2)
	ld    int     // a full group's tiles rounded up to whole NR-column panels: the length of U's and M's rows
	rows  []int   // row q of U (ξ·Cin + ci): its offset q·ld
	outs  []int32 // where W <= 8: tile t of a group's samples, its 2x2 output's origin in channel 0 of the group's y (winoOutS)
	offs  []int32 // where W < 32: tile t of a group's samples, its 4x4 input's origin in channel 0 of the padded samples (winoInG)
	job   job     // the items
	wjob  job     // the weights' transform, an output channel an item

	// The filter gradient's (winograd_filter.go): samples per chunk,
	// Cout rounded up to whole DY panels, and its jobs: a chunk's
	// transforms (fper samples an item), its 16 GEMMs, dw by 16 output
	// channels.
	chunk, cp, fper  int   // fper: samples per transform item (at least 64 tiles where W < 32)
	dyRows           []int // winoDYPanels' rows: t·NR
	fjob, gjob, ojob job
}

// winoAsm: the transforms take winograd_amd64.s's kernels (where the
// AVX-512 loops run), else winoInGo, winoWeightsGo and winoOutGo.
var winoAsm = useAVX512

// winoBytes bounds a group's U (16·Cin·ld floats): with M it stays in L2.
const winoBytes = 1 << 20

// winoColumns is the most tiles a group takes (where U allows more).
const winoColumns = 256

// winoLanes are winograd_amd64.s's VPERMT2PS indices: the even floats of
// two registers, their odd floats, and the interleave of their low and of
// their high halves; and 0 … 15.
var winoLanes = [80]int32{
	0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
	1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
	0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
	8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
}

// WinogradApplies says whether SetWinograd(true) takes effect on a conv
// of this shape: 3x3, stride 1, padding 1, one channel group, an even
// output plane, not a conv block.
func (c *Conv2d) WinogradApplies() bool {
	return c.K == 3 && c.Stride == 1 && c.Pad == 1 && c.Groups == 1 && !c.block && c.H%2 == 0 && c.W%2 == 0
}

// winogradPays says where F(2x2, 3x3) measured faster than the im2col
// GEMM and the direct filter kernels (BenchmarkConv2d fwd, dx, dw against
// fwd-wino, dx-wino, dw-wino, one core, this project's Intel Xeon): its
// transforms cost in proportion to Cin + Cout per tile, and its GEMMs are
// as deep as Cin (Forward) or Cout (BackwardData), while the products it
// saves grow with Cin·Cout. At 32 channels and more it won every pass of
// resnet18's and resnet20's 3x3 convs or tied (resnet20's 32 at 16x16:
// fwd 5.35 -> 3.37 ms, dx 4.93 -> 4.13, dw 5.65 -> 5.53); at 16 it lost
// (resnet20's 16 at 32x32: fwd 4.31 -> 4.96, dw 4.41 -> 11.1).
func (c *Conv2d) winogradPays() bool {
	return c.Cin*c.Cout >= 16*(c.Cin+c.Cout)
}

// SetWinograd makes Forward, BackwardData (through the back conv) and
// BackwardFilter compute F(2x2, 3x3) where WinogradApplies and
// winogradPays, at FP32 (a conv set to TF32
// or BF16 keeps its GEMMs: their rounding is of the im2col inputs);
// off, the im2col GEMMs again. It returns whether it applies.
func (c *Conv2d) SetWinograd(on bool) bool { return c.setWinograd(on, false) }

// setWinograd is SetWinograd, where it pays or, with always, wherever it
// applies (the tests' small shapes).
func (c *Conv2d) setWinograd(on, always bool) bool {
	c.wino = nil
	if c.back != nil {
		c.back.setWinograd(on, always)
	}
	if !on || !c.WinogradApplies() || !always && !c.winogradPays() {
		return false
	}
	p := &winograd{tiles: c.H / 2 * (c.W / 2)}
	// Samples per group: as many as winoColumns tiles and winoBytes of U
	// allow, one at least.
	most := max(gemm.NR, min(winoColumns, winoBytes/(4*16*c.Cin)))
	p.per = max(1, min(c.B, most/p.tiles))
	p.ld = (p.per*p.tiles + gemm.NR - 1) / gemm.NR * gemm.NR
	p.rows = make([]int, 16*c.Cin)
	for q := range p.rows {
		p.rows[q] = q * p.ld
	}
	p.job.fn, p.job.n = c.winoGroup, (c.B+p.per-1)/p.per
	p.wjob.fn, p.wjob.n = c.winoWeights, c.Cout
	p.chunk = max(1, min(c.B, winoFilterTiles/p.tiles))
	p.cp = (c.Cout + gemm.NR - 1) / gemm.NR * gemm.NR
	p.dyRows = make([]int, p.chunk*p.tiles)
	for t := range p.dyRows {
		p.dyRows[t] = t * gemm.NR
	}
	// Planes narrower than 32 take winoInG, on all of an item's tiles of
	// a channel at once: the filter gradient's items then hold fper
	// samples, at least 64 tiles.
	p.fper = 1
	if n := max(p.per, p.chunk); c.W < 32 && n*max(c.Cin*c.hp*c.wp, c.Cout*c.H*c.W) <= math.MaxInt32 {
		p.fper = max(1, min(p.chunk, 64/p.tiles))
		for i := 0; i < max(p.per, p.fper); i++ {
			for s := 0; s < c.H/2; s++ {
				for u := 0; u < c.W/2; u++ {
					p.offs = append(p.offs, int32((i*c.Cin*c.hp+2*s)*c.wp+2*u))
					if c.W <= 8 {
						p.outs = append(p.outs, int32((i*c.Cout*c.H+2*s)*c.W+2*u))
					}
				}
			}
		}
	}
	p.fjob.fn = c.winoFilterIn
	p.gjob.fn, p.gjob.n = c.winoFilterGemm, 16
	p.ojob.fn, p.ojob.n = c.winoFilterOut, (c.Cout+15)/16
	c.wino = p
	return true
}

// Winograd says whether Forward takes F(2x2, 3x3) (SetWinograd).
func (c *Conv2d) Winograd() bool { return c.wino != nil }

// forwardWinograd is Forward by F(2x2, 3x3): the weights transformed
// (winoWeights) and packed, then the groups (winoGroup).
func (c *Conv2d) forwardWinograd(x, w, y []float32) {
	p := c.wino
	n := c.Cout * c.Cin
	c.w = w
	c.winoV = c.sharedBuf(&c.ownWinoV, func(s *Conv2dShared) *[]float32 { return &s.winoV }, 16*n)
	p.wjob.run(workers(p.wjob.n))
	a := c.winoPacked()
	for xi := range a {
		c.packBlocks = gemm.PackABlocks(&a[xi], gemm.FP32, false, c.Cout, c.Cin, c.winoV[xi*n:(xi+1)*n], c.Cin)
	}
	c.packAll(a)
	c.x, c.y, c.winoA = x, y, a
	p.job.run(c.start(p.job.n))
	c.x, c.y, c.w, c.winoA, c.winoV = nil, nil, nil, nil, nil
}

// winoPacked is the 16 packed V[ξ]: shared's, or c's own.
func (c *Conv2d) winoPacked() []gemm.PackedA {
	p := &c.ownWinoA
	if c.shared != nil {
		p = &c.shared.winoA
	}
	for len(*p) < 16 {
		*p = append(*p, gemm.PackedA{})
	}
	return (*p)[:16]
}

// winoWeights is the weights' transform for output channel co: V[ξ][co][ci]
// = (G g Gᵀ)[ξ/4][ξ%4] for each input channel's 3x3 g, with
//
//	G = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1];
//
// with winoFlip (BackwardData's back conv) g is read from the forward
// conv's weights where they lie, turned by 180° (what flipChannel would
// write, the same values), so that they need not be flipped first.
func (c *Conv2d) winoWeights(_, co int) {
	n := c.Cout * c.Cin
	v := c.winoV[co*c.Cin:]
	g, ls := c.w[co*c.Cin*9:], 9
	if c.winoFlip { // w (Cin, Cout, 3, 3) of the forward conv: g of (co, ci) at (ci·Cout + co)·9
		g, ls = c.w[co*9:], c.Cout*9
	}
	if len(v) < 15*n+c.Cin || len(g) < (c.Cin-1)*ls+9 {
		panic("cpuops.winoWeights: short V or w")
	}
	if winoAsm {
		flip := 0
		if c.winoFlip {
			flip = 1
		}
		winoWeightsAVX512(&v[0], n, &g[0], c.Cin, ls, flip, &winoLanes[0])
		return
	}
	winoWeightsGo(v, n, g, c.Cin, ls, c.winoFlip)
}

// winoWeightsGo transforms the 3x3 kernels g[ci·ls:][:9], ci < cnt
// (turned by 180° with flip), into v[ξ·stride+ci]: the AVX-512 kernel's
// operations in its order.
func winoWeightsGo(v []float32, stride int, g []float32, cnt, ls int, flip bool) {
	for ci := 0; ci < cnt; ci++ {
		k := *(*[9]float32)(g[ci*ls : ci*ls+9])
		if flip {
			k = [9]float32{k[8], k[7], k[6], k[5], k[4], k[3], k[2], k[1], k[0]}
		}
		var t [4][3]float32 // G g
		for j := 0; j < 3; j++ {
			t[0][j], t[1][j], t[2][j], t[3][j] = winoG(k[j], k[3+j], k[6+j])
		}
		for r := 0; r < 4; r++ {
			v0, v1, v2, v3 := winoG(t[r][0], t[r][1], t[r][2])
			v[(4*r)*stride+ci], v[(4*r+1)*stride+ci], v[(4*r+2)*stride+ci], v[(4*r+3)*stride+ci] = v0, v1, v2, v3
		}
	}
}

// winoG is G times the column (a, b, c).
func winoG(a, b, c float32) (float32, float32, float32, float32) {
	return a, 0.5 * ((a + b) + c), 0.5 * ((a - b) + c), c
}

// winoGroup is an item of forwardWinograd: the group g's samples padded,
// transformed into U, multiplied into M, and M transformed into y.
func (c *Conv2d) winoGroup(worker, g int) {
	p := c.wino
	i0, i1 := g*p.per, min(c.B, (g+1)*p.per)
	s := &c.scratch[worker]
	src, _ := c.padded(s, i0, i1)
	cin, cout, ld := c.Cin, c.Cout, p.ld
	t := (i1 - i0) * p.tiles
	n := (t + gemm.NR - 1) / gemm.NR * gemm.NR
	s.wU = grow(s.wU, 16*cin*ld)
	s.wM = grow(s.wM, 16*cout*ld)
	half := c.W / 2
	c.winoInput(s.wU, ld, src, i1-i0)
	for q := 0; q < 16*cin && n > t; q++ { // the last panel's columns past the tiles: 0
		clear(s.wU[q*ld+t : q*ld+n])
	}
	for xi := 0; xi < 16; xi++ {
		s.wPanels = winoPanels{src: s.wU, rows: p.rows[xi*cin : (xi+1)*cin]}
		gemm.SgemmPackedPanels(&c.winoA[xi], n, 1, &s.wPanels, 0, s.wM[xi*cout*ld:], ld)
	}
	s.wPanels = winoPanels{}
	ohw := c.H * c.W
	if p.outs != nil {
		y := c.y[i0*cout*ohw : i1*cout*ohw]
		for co := 0; co < cout; co++ {
			winoOutS(y[co*ohw:], c.W, s.wM[co*ld:], cout*ld, p.outs, t)
		}
		return
	}
	for i := 0; i < i1-i0; i++ {
		for co := 0; co < cout; co++ {
			out := c.y[((i0+i)*cout+co)*ohw : ((i0+i)*cout+co+1)*ohw]
			winoOut(out, c.W, s.wM[co*ld+i*p.tiles:], cout*ld, half, c.H/2)
		}
	}
}

// winoInput transforms the input tiles of n padded samples side by side
// at src into U: row ξ·Cin + ci at u[(ξ·Cin + ci)·ld:], sample i's tiles
// from column i·tiles. Narrow planes (offs) take winoInG, all of a
// channel's tiles at once; others winoIn, a plane at a time.
func (c *Conv2d) winoInput(u []float32, ld int, src []float32, n int) {
	p, cin, plane := c.wino, c.Cin, c.hp*c.wp
	for ci := 0; ci < cin; ci++ {
		if p.offs != nil {
			winoInG(u[ci*ld:], cin*ld, src[ci*plane:], p.offs, c.wp, n*p.tiles)
			continue
		}
		for i := 0; i < n; i++ {
			at := (i*cin + ci) * plane
			winoIn(u[ci*ld+i*p.tiles:], cin*ld, src[at:at+plane], c.wp, c.W/2, c.H/2)
		}
	}
}

// winoPanels is U[ξ] as a gemm.RunPanels: row q at rows[q], every
// NR-column panel a run where it lies.
type winoPanels struct {
	src  []float32
	rows []int
}

func (p *winoPanels) RunSource() ([]float32, []int) { return p.src, p.rows }
func (p *winoPanels) Run(j int) int                 { return j }

func (p *winoPanels) PackB(dst []float32, pc, jc, kb, nb int) {
	for t := 0; t*gemm.NR < nb; t++ {
		panel := dst[t*gemm.NR*kb : (t+1)*gemm.NR*kb]
		w := min(gemm.NR, nb-t*gemm.NR)
		for q := 0; q < kb; q++ {
			row := panel[q*gemm.NR : (q+1)*gemm.NR]
			copy(row, p.src[p.rows[pc+q]+jc+t*gemm.NR:][:w])
			clear(row[w:])
		}
	}
}

// winoIn transforms the n tiles of each of rows 4-row strips of a padded
// plane (rows wp floats apart, strip r at 2r·wp, its tile t in columns
// 2t … 2t+3): dst[ξ·stride + r·n + t] = (Bᵀ d B)[ξ/4][ξ%4], with
//
//	Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1].
func winoIn(dst []float32, stride int, src []float32, wp, n, rows int) {
	if n <= 0 || rows <= 0 {
		return
	}
	if len(dst) < 15*stride+rows*n || len(src) < (2*rows+1)*wp+2*n+2 {
		panic(fmt.Sprintf("cpuops.winoIn: %d strips of %d tiles, stride %d, row %d: dst %d, src %d floats", rows, n, stride, wp, len(dst), len(src)))
	}
	if winoAsm {
		winoInAVX512(&dst[0], stride, &src[0], wp, n, rows, &winoLanes[0])
		return
	}
	winoInGo(dst, stride, src, wp, n, rows)
}

// winoInG is winoIn for n tiles anywhere: tile t reads src[offs[t] +
// r·wp + c] (r, c < 4; offs increasing) into dst[ξ·stride + t]. It fills
// all 16 lanes where a plane's strips are narrower (W < 32), with the same
// adds in the same order, so the same bits.
func winoInG(dst []float32, stride int, src []float32, offs []int32, wp, n int) {
	if n <= 0 {
		return
	}
	if len(dst) < 15*stride+n || len(offs) < n || offs[0] < 0 || len(src) < int(offs[n-1])+3*wp+4 {
		panic(fmt.Sprintf("cpuops.winoInG: %d tiles, stride %d, row %d: dst %d, offs %d, src %d floats", n, stride, wp, len(dst), len(offs), len(src)))
	}
	if winoAsm {
		winoInGAVX512(&dst[0], stride, &src[0], &offs[0], wp, n)
		return
	}
	for t := 0; t < n; t++ {
		winoInTile(dst[t:], stride, src[offs[t]:], wp)
	}
}

// winoInGo is winoIn in Go: the AVX-512 kernel's adds in its order.
func winoInGo(dst []float32, stride int, src []float32, wp, n, rows int) {
	for s := 0; s < rows; s++ {
		for t := 0; t < n; t++ {
			winoInTile(dst[s*n+t:], stride, src[2*s*wp+2*t:], wp)
		}
	}
}

// winoInTile is one tile of winoIn: the 4x4 d at src (rows wp apart) into
// dst[ξ·stride] = (Bᵀ d B)[ξ/4][ξ%4], rows first, as the kernels add.
func winoInTile(dst []float32, stride int, src []float32, wp int) {
	var e [4][4]float32 // d B
	for r := 0; r < 4; r++ {
		d := src[r*wp : r*wp+4]
		e[r] = [4]float32{d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]}
	}
	for j := 0; j < 4; j++ {
		dst[j*stride] = e[0][j] - e[2][j]
		dst[(4+j)*stride] = e[1][j] + e[2][j]
		dst[(8+j)*stride] = e[2][j] - e[1][j]
		dst[(12+j)*stride] = e[1][j] - e[3][j]
	}
}

// winoOut transforms rows strips of n tiles back: with m[ξ] =
// src[ξ·stride + s·n + t], the 2x2 Aᵀ m A into dst[(2s+r)·w + 2t + c],
// with Aᵀ = [1 1 1 0; 0 1 −1 −1].
func winoOut(dst []float32, w int, src []float32, stride, n, rows int) {
	if n <= 0 || rows <= 0 {
		return
	}
	if len(dst) < (2*rows-1)*w+2*n || len(src) < 15*stride+rows*n {
		panic(fmt.Sprintf("cpuops.winoOut: %d strips of %d tiles, stride %d, row %d: dst %d, src %d floats", rows, n, stride, w, len(dst), len(src)))
	}
	if winoAsm {
		winoOutAVX512(&dst[0], w, &src[0], stride, n, rows, &winoLanes[0])
		return
	}
	winoOutGo(dst, w, src, stride, n, rows)
}

// winoOutS is winoOut for n tiles anywhere: with m[ξ] = src[ξ·stride +
// t], tile t's 2x2 into dst[offs[t] + r·w + c] (offs increasing), the same
// adds in the same order: all 16 lanes filled where a plane is 8 wide or
// less (its 16x16 planes, 8 tiles a strip, measured no faster scattered).
func winoOutS(dst []float32, w int, src []float32, stride int, offs []int32, n int) {
	if n <= 0 {
		return
	}
	if len(src) < 15*stride+n || len(offs) < n || offs[0] < 0 || len(dst) < int(offs[n-1])+w+2 {
		panic(fmt.Sprintf("cpuops.winoOutS: %d tiles, stride %d, row %d: dst %d, offs %d, src %d floats", n, stride, w, len(dst), len(offs), len(src)))
	}
	if winoAsm {
		winoOutSAVX512(&dst[0], w, &src[0], stride, &offs[0], n)
		return
	}
	for t := 0; t < n; t++ {
		winoOutTile(dst[offs[t]:], w, src[t:], stride)
	}
}

// winoOutGo is winoOut in Go: the AVX-512 kernel's adds in its order.
func winoOutGo(dst []float32, w int, src []float32, stride, n, rows int) {
	for s := 0; s < rows; s++ {
		for t := 0; t < n; t++ {
			winoOutTile(dst[2*s*w+2*t:], w, src[s*n+t:], stride)
		}
	}
}

// winoOutTile is one tile of winoOut: m[ξ] = src[ξ·stride], Aᵀ m A into
// dst[r·w + c], rows first, as the kernels add.
func winoOutTile(dst []float32, w int, src []float32, stride int) {
	var f [4][2]float32 // m A
	for r := 0; r < 4; r++ {
		m0, m1, m2, m3 := src[(4*r)*stride], src[(4*r+1)*stride], src[(4*r+2)*stride], src[(4*r+3)*stride]
		f[r] = [2]float32{(m0 + m1) + m2, (m1 - m2) - m3}
	}
	for j := 0; j < 2; j++ {
		dst[j] = (f[0][j] + f[1][j]) + f[2][j]
		dst[w+j] = (f[1][j] - f[2][j]) - f[3][j]
	}
}
