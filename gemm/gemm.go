package gemm

import (
	"fmt"
	"sync"
)

// Tile and block sizes. mr×nr is the micro-kernel's tile of C; kc is the
// depth of one packed panel (a kc×nr panel of B, 16 KiB, stays in L1 while
// the kernel walks an mc×kc block of A, 96 KiB, held in L2); nc bounds the
// packed block of B (kc×nc, 4 MiB at most, in L3).
const (
	mr = 6
	nr = 16
	kc = 256
	mc = 96 // a multiple of mr
	nc = 4096
)

// kernel computes the mr×nr tile c = beta·c + alpha·Σ_p a[p·mr+i]·b[p·nr+j]
// over p < k, for packed panels a (k×mr) and b (k×nr); c has row stride ldc.
// beta == 0 must not read c.
type kernelFunc func(k int, a, b, c *float32, ldc int, alpha, beta float32)

// Name says which micro-kernel Sgemm uses on this machine, e.g.
// "gemm: Go assembly AVX2+FMA 6x16 micro-kernel".
func Name() string { return "gemm: " + kernelName }

type scratch struct {
	a, b  []float32
	tile  [mr * nr]float32
	wtile [mr * maxWideCols]float32
	mat   matrixB
}

// Panels is a source of op(B) that writes its blocks straight into the
// packed layout, so that a B made on the fly (a convolution's im2col
// matrix) is never stored whole.
type Panels interface {
	// PackB writes the kb×nb block of op(B) whose top-left element is
	// (pc, jc) into dst as NR-column panels: panel t holds columns
	// jc+t·NR … jc+t·NR+NR−1 at dst[t·NR·kb:], kb rows of NR values each,
	// zero past column nb. kb <= KC, nb <= NC, and jc is a multiple of NR
	// (at TF32 and BF16 a block is asked for a few panels at a time).
	PackB(dst []float32, pc, jc, kb, nb int)
}

// RoundedPanels is a Panels whose values are rounded to RoundedTo()
// already, as RoundSlice rounds them (a convolution's input, say, rounded
// once before the im2col matrix is gathered from it: a ninth of the
// values of a 3x3 convolution's matrix): SgemmPanelsPrec and
// SgemmPackedPanels at that precision pack its blocks without rounding
// them again, the same bits for less work.
type RoundedPanels interface {
	Panels
	RoundedTo() Precision
}

// NR is the panel width of Panels, KC and NC bound its blocks.
const (
	NR = nr
	KC = kc
	NC = nc
)

// matrixB is a stored op(B), packed by packB.
type matrixB struct {
	b     []float32
	ldb   int
	trans bool
}

func (m *matrixB) PackB(dst []float32, pc, jc, kb, nb int) {
	packB(dst, m.b, m.ldb, m.trans, pc, jc, kb, nb)
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{a: make([]float32, mc*kc), b: make([]float32, kc*nc)}
}}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices:
// op(A) is m×k (A itself is k×m when transA), op(B) is k×n (B is n×k when
// transB), C is m×n; lda, ldb, ldc are the row strides of A, B and C as
// stored. With beta == 0, C is not read (it may hold anything).
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	SgemmPrec(FP32, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmPrec is Sgemm with op(A) and op(B) rounded to prec as they are
// packed (precision.go); the products are summed in float32 as at FP32,
// so the result is, bit for bit, Sgemm's on inputs rounded beforehand.
func SgemmPrec(prec Precision, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if prec == BF16 && FastBF16() {
		SgemmBF16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if !begin("Sgemm", transA, m, n, k, alpha, a, lda, beta, c, ldc) {
		return
	}
	if transB {
		checkLen("B", b, n, k, ldb)
	} else {
		checkLen("B", b, k, n, ldb)
	}
	s := scratchPool.Get().(*scratch)
	s.mat = matrixB{b, ldb, transB}
	multiply(s, prec, nil, 0, transA, m, n, k, alpha, a, lda, &s.mat, beta, c, ldc)
	s.mat = matrixB{}
	scratchPool.Put(s)
}

// SgemmPanels is Sgemm with op(B) (k×n) given by a Panels source.
func SgemmPanels(transA bool, m, n, k int, alpha float32, a []float32, lda int, b Panels, beta float32, c []float32, ldc int) {
	SgemmPanelsPrec(FP32, transA, m, n, k, alpha, a, lda, b, beta, c, ldc)
}

// SgemmPanelsPrec is SgemmPanels with op(A) and op(B) rounded to prec as
// they are packed (SgemmPrec).
func SgemmPanelsPrec(prec Precision, transA bool, m, n, k int, alpha float32, a []float32, lda int, b Panels, beta float32, c []float32, ldc int) {
	if prec == BF16 && FastBF16() {
		SgemmPanelsBF16(transA, m, n, k, alpha, a, lda, b, beta, c, ldc)
		return
	}
	if !begin("SgemmPanels", transA, m, n, k, alpha, a, lda, beta, c, ldc) {
		return
	}
	s := scratchPool.Get().(*scratch)
	multiply(s, prec, nil, 0, transA, m, n, k, alpha, a, lda, b, beta, c, ldc)
	scratchPool.Put(s)
}

// PackedA is op(A) packed once into the micro-kernel's row panels, every k
// block of it, for products that use the same A with many B: a
// convolution's weights, shared by every sample of a batch, are packed
// once per batch instead of once per sample. PackA fills it, SgemmPacked
// and SgemmPackedPanels multiply with it; the results are bit-identical to
// Sgemm's on the same A (the same panels meet the same kernel calls).
// PackAPrec packs it rounded to a precision, and the products with it then
// round op(B) to the same one.
type PackedA struct {
	m, k, kstep, mpad int
	prec              Precision
	data              []float32
	bf                *PackedABF16 // instead of data: packed for the VDPBF16PS kernels (FastBF16)

	// the packing PackABlocks began, for PackABlock
	src   []float32
	lda   int
	trans bool
	round func([]float32)
}

// PackA packs op(A) (m×k; A itself is k×m when transA) into p, reusing
// p's storage when it is large enough.
func PackA(p *PackedA, transA bool, m, k int, a []float32, lda int) {
	PackAPrec(p, FP32, transA, m, k, a, lda)
}

// PackAPrec is PackA with op(A) rounded to prec; SgemmPacked and
// SgemmPackedPanels then round op(B) to prec too (SgemmPrec).
func PackAPrec(p *PackedA, prec Precision, transA bool, m, k int, a []float32, lda int) {
	for bi, n := 0, PackABlocks(p, prec, transA, m, k, a, lda); bi < n; bi++ {
		PackABlock(p, bi)
	}
}

// PackABlocks begins PackAPrec's packing of op(A) into p and returns how
// many blocks (its k blocks) PackABlock then packs: each block once, in
// any order, on any goroutines at once, before p is multiplied with. p
// holds a until the next PackABlocks. The packed A is PackAPrec's, to the
// bit.
func PackABlocks(p *PackedA, prec Precision, transA bool, m, k int, a []float32, lda int) int {
	if m < 1 || k < 1 {
		panic(fmt.Sprintf("gemm.PackA: size m=%d k=%d, want both >= 1", m, k))
	}
	if transA {
		checkLen("A", a, k, m, lda)
	} else {
		checkLen("A", a, m, k, lda)
	}
	if prec == BF16 && FastBF16() {
		if p.bf == nil {
			p.bf = new(PackedABF16)
		}
		p.m, p.k, p.prec, p.src = m, k, prec, nil
		return p.bf.begin(bf16Path(), transA, m, k, a, lda)
	}
	p.bf = nil
	return p.begin(prec, rounding(prec), transA, m, k, a, lda)
}

// PackABlock packs block bi of the packing PackABlocks began.
func PackABlock(p *PackedA, bi int) {
	if p.bf != nil {
		p.bf.block(bi)
		return
	}
	p.block(bi)
}

// packAInto is PackAPrec's packing on the fp32 kernels, op(A) rounded by
// round as it is packed (none where round is nil) and the packed A marked
// as of prec.
func packAInto(p *PackedA, prec Precision, round func([]float32), transA bool, m, k int, a []float32, lda int) {
	for bi, n := 0, p.begin(prec, round, transA, m, k, a, lda); bi < n; bi++ {
		p.block(bi)
	}
}

// begin sizes p for packAInto and returns its number of k blocks.
func (p *PackedA) begin(prec Precision, round func([]float32), transA bool, m, k int, a []float32, lda int) int {
	kstep := kStep(k)
	p.m, p.k, p.kstep, p.mpad, p.prec = m, k, kstep, (m+mr-1)/mr*mr, prec
	p.src, p.lda, p.trans, p.round = a, lda, transA, round
	nblocks := (k + kstep - 1) / kstep
	if n := nblocks * p.mpad * kstep; cap(p.data) < n {
		p.data = make([]float32, n)
	} else {
		p.data = p.data[:n]
	}
	return nblocks
}

// block packs k block bi of what begin began.
func (p *PackedA) block(bi int) {
	pc := bi * p.kstep
	packARounded(p.data[bi*p.mpad*p.kstep:], p.src, p.lda, p.trans, 0, pc, p.m, min(p.kstep, p.k-pc), p.round)
}

// Rows and Depth are the m and k of the packed op(A), Precision what it
// was rounded to.
func (p *PackedA) Rows() int            { return p.m }
func (p *PackedA) Depth() int           { return p.k }
func (p *PackedA) Precision() Precision { return p.prec }

// SgemmPacked is Sgemm with op(A) (m×k) packed by PackA: C = alpha·op(A)·op(B) + beta·C,
// op(B) k×n.
func SgemmPacked(a *PackedA, transB bool, n int, alpha float32, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !beginPacked("SgemmPacked", a, n, alpha, beta, c, ldc) {
		return
	}
	if transB {
		checkLen("B", b, n, a.k, ldb)
	} else {
		checkLen("B", b, a.k, n, ldb)
	}
	if a.bf != nil {
		SgemmPackedBF16(a.bf, transB, n, alpha, b, ldb, beta, c, ldc)
		return
	}
	s := scratchPool.Get().(*scratch)
	s.mat = matrixB{b, ldb, transB}
	multiply(s, a.prec, a, 0, false, a.m, n, a.k, alpha, nil, 0, &s.mat, beta, c, ldc)
	s.mat = matrixB{}
	scratchPool.Put(s)
}

// SgemmPackedPanels is SgemmPacked with op(B) given by a Panels source.
func SgemmPackedPanels(a *PackedA, n int, alpha float32, b Panels, beta float32, c []float32, ldc int) {
	if a.m == 0 {
		panic("gemm.SgemmPackedPanels: A was never packed (PackA)")
	}
	packedPanels("SgemmPackedPanels", a, 0, a.m, n, alpha, b, beta, c, ldc)
}

// RowBlock divides the first row of SgemmPackedPanelsRows's rows.
const RowBlock = 12

// SgemmPackedPanelsRows is SgemmPackedPanels for rows [r0, r1) of op(A)
// alone: C (its row 0 is row r0 of the product, (r1−r0)×n) = alpha·op(A)[r0:r1]·op(B) + beta·C.
// r0 is a multiple of RowBlock. Each element gets the bits SgemmPackedPanels
// gives it, so that cores may split a product with few columns by rows.
func SgemmPackedPanelsRows(a *PackedA, r0, r1, n int, alpha float32, b Panels, beta float32, c []float32, ldc int) {
	if a.m == 0 {
		panic("gemm.SgemmPackedPanelsRows: A was never packed (PackA)")
	}
	if r0 < 0 || r0%RowBlock != 0 || r1 <= r0 || r1 > a.m {
		panic(fmt.Sprintf("gemm.SgemmPackedPanelsRows: rows [%d, %d) of %d, want 0 <= r0 < r1 <= %d with r0 a multiple of %d", r0, r1, a.m, a.m, RowBlock))
	}
	packedPanels("SgemmPackedPanelsRows", a, r0, r1-r0, n, alpha, b, beta, c, ldc)
}

// packedPanels is rows [r0, r0+m) of the product of the packed a with b.
func packedPanels(fn string, a *PackedA, r0, m, n int, alpha float32, b Panels, beta float32, c []float32, ldc int) {
	if !beginRows(fn, m, n, alpha, beta, c, ldc) {
		return
	}
	if a.bf != nil {
		s := bf16Pool.Get().(*bf16Scratch)
		bf16PackedMultiply(s, a.bf, fn, r0, m, n, alpha, b, beta, c, ldc)
		bf16Pool.Put(s)
		return
	}
	s := scratchPool.Get().(*scratch)
	multiply(s, a.prec, a, r0, false, m, n, a.k, alpha, nil, 0, b, beta, c, ldc)
	scratchPool.Put(s)
}

func beginPacked(fn string, a *PackedA, n int, alpha, beta float32, c []float32, ldc int) bool {
	if a.m == 0 {
		panic("gemm." + fn + ": A was never packed (PackA)")
	}
	return beginRows(fn, a.m, n, alpha, beta, c, ldc)
}

// beginRows checks n and C (m×n) and does the whole job when no product
// is needed. It reports whether the product remains to be done.
func beginRows(fn string, m, n int, alpha, beta float32, c []float32, ldc int) bool {
	if n < 0 {
		panic(fmt.Sprintf("gemm.%s: negative size n=%d", fn, n))
	}
	if n == 0 {
		return false
	}
	checkLen("C", c, m, n, ldc)
	if alpha == 0 {
		scale(m, n, beta, c, ldc)
		return false
	}
	return true
}

// kStep is the depth of the k blocks of a product of depth k: equal blocks
// of at most kc (288 = 2×144, not 256 + 32: a thin last block would spend
// more on loading and storing C than on multiplying).
func kStep(k int) int {
	kblocks := (k + kc - 1) / kc
	return (k + kblocks - 1) / kblocks
}

// KStep is the depth of the k blocks an FP32 product of depth k is cut
// into, each summed from 0 and then added to C: for a caller that sums
// the same products in its own kernel and wants the GEMM's bits.
func KStep(k int) int { return kStep(k) }

// begin checks the sizes and the A and C slices shared by Sgemm and
// SgemmPanels, and does the whole job when no product is needed (an empty
// C, or only C·beta). It reports whether the product remains to be done.
func begin(fn string, transA bool, m, n, k int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int) bool {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm.%s: negative size m=%d n=%d k=%d", fn, m, n, k))
	}
	if m == 0 || n == 0 {
		return false
	}
	checkLen("C", c, m, n, ldc)
	if k == 0 || alpha == 0 {
		scale(m, n, beta, c, ldc)
		return false
	}
	if transA {
		checkLen("A", a, k, m, lda)
	} else {
		checkLen("A", a, m, k, lda)
	}
	return true
}

// multiply is the blocked product (the loops around the micro-kernel in
// the BLIS paper's Figure 2): jc over nc columns, pc over k blocks (B
// packed once each), ic over mc rows (A packed, unless pa holds it
// packed already: its rows [r0, r0+m)), then the tiles. A and B are rounded to prec as they are
// packed, a few panels at a time while they are in L1 (packARounded,
// packBRounded; pa was rounded by PackAPrec, a RoundedPanels b may be
// rounded already).
func multiply(s *scratch, prec Precision, pa *PackedA, r0 int, transA bool, m, n, k int, alpha float32, a []float32, lda int, b Panels, beta float32, c []float32, ldc int) {
	kstep := kStep(k)
	round := rounding(prec)
	roundB := round
	if r, ok := b.(RoundedPanels); ok && r.RoundedTo() == prec {
		roundB = nil
	}
	if rp, ok := b.(RunPanels); ok && pa != nil && roundB == nil && useRuns(rp, m, n, k) {
		multiplyRuns(s, pa, r0, m, n, alpha, rp, beta, c, ldc)
		return
	}
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for bi, pc := 0, 0; pc < k; bi, pc = bi+1, pc+kstep {
			kb := min(kstep, k-pc)
			packBRounded(s.b, b, pc, jc, kb, nb, roundB)
			bet := beta
			if pc > 0 {
				bet = 1
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				ap := s.a
				if pa != nil {
					ap = pa.data[bi*pa.mpad*kstep+(r0+ic)*kb:]
				} else {
					packARounded(s.a, a, lda, transA, ic, pc, mb, kb, round)
				}
				macro(s, ap, mb, nb, kb, alpha, bet, c[ic*ldc+jc:], ldc)
			}
		}
	}
}

// wideKernel is a micro-kernel wider than mr×nr (kernel_avx512_amd64.s)
// and its shape, rows a multiple of mr and cols of nr: it reads rows/mr
// packed A panels and cols/nr packed B panels where packA and packB put
// them, and gives every element of C the bits kernel gives it. row is the
// mr×cols kernel for the rows left over; edge, when not nil, the
// 2·mr×nr one for the nr-column panels past the last wide tile (kernel
// takes their rows left over). part[r], when not nil, is the r×cols
// kernel for a last row panel of r < mr rows: it writes those rows only,
// with the bits row and addTile give them. A zero wideKernel is none.
type wideKernel struct {
	main, row  kernelFunc
	rows, cols int
	edge       kernelFunc
	part       [mr]kernelFunc
	direct     *directKernels // the same tile on B's runs (RunPanels), or nil
}

// maxWideCols bounds wideKernel.cols (the scratch tile for partial rows;
// it holds an edge kernel's 2·mr×nr tile too).
const maxWideCols = 64

// macro multiplies the packed mb×kb block of A (a) by the packed kb×nb block of
// B into C, one tile at a time: wide tiles first where a wide kernel runs,
// then mr×nr tiles; partial edge tiles go through a scratch tile.
func macro(s *scratch, a []float32, mb, nb, kb int, alpha, beta float32, c []float32, ldc int) {
	jr := 0
	if w := wide; w.main != nil {
		for ; jr+w.cols <= nb; jr += w.cols {
			bp := &s.b[jr*kb]
			ir := 0
			for ; ir+w.rows <= mb; ir += w.rows {
				w.main(kb, &a[ir*kb], bp, &c[ir*ldc+jr], ldc, alpha, beta)
			}
			for ; ir < mb; ir += mr {
				if mm := min(mr, mb-ir); mm < mr {
					if p := w.part[mm]; p != nil {
						p(kb, &a[ir*kb], bp, &c[ir*ldc+jr], ldc, alpha, beta)
						continue
					}
					t := s.wtile[:mr*w.cols]
					w.row(kb, &a[ir*kb], bp, &t[0], w.cols, alpha, 0)
					addTile(c[ir*ldc+jr:], ldc, t, w.cols, mm, w.cols, beta)
					continue
				}
				w.row(kb, &a[ir*kb], bp, &c[ir*ldc+jr], ldc, alpha, beta)
			}
		}
	}
	for ; jr < nb; jr += nr {
		nn := min(nr, nb-jr)
		bp := &s.b[jr*kb]
		ir := 0
		if e := wide.edge; e != nil {
			for ; ir+2*mr <= mb; ir += 2 * mr {
				if nn == nr {
					e(kb, &a[ir*kb], bp, &c[ir*ldc+jr], ldc, alpha, beta)
					continue
				}
				t := s.wtile[:2*mr*nr]
				e(kb, &a[ir*kb], bp, &t[0], nr, alpha, 0)
				addTile(c[ir*ldc+jr:], ldc, t, nr, 2*mr, nn, beta)
			}
		}
		for ; ir < mb; ir += mr {
			mm := min(mr, mb-ir)
			ap := &a[ir*kb]
			if mm == mr && nn == nr {
				kernel(kb, ap, bp, &c[ir*ldc+jr], ldc, alpha, beta)
				continue
			}
			t := s.tile[:]
			kernel(kb, ap, bp, &t[0], nr, alpha, 0)
			addTile(c[ir*ldc+jr:], ldc, t, nr, mm, nn, beta)
		}
	}
}

// addTile sets the mm×nn corner of C to beta·C + t (t has row stride ldt,
// C is not read where beta == 0): the one rounding of partial tiles, on
// every kernel path. beta·C is rounded before the add (the conversion
// keeps the compiler from fusing the two, as GOAMD64=v3 would), as the
// row kernels for partial panels do it.
func addTile(c []float32, ldc int, t []float32, ldt, mm, nn int, beta float32) {
	for i := 0; i < mm; i++ {
		row := c[i*ldc : i*ldc+nn]
		tr := t[i*ldt : i*ldt+nn]
		if beta == 0 {
			copy(row, tr)
			continue
		}
		for j := range row {
			row[j] = float32(beta*row[j]) + tr[j]
		}
	}
}

// packA copies the mb×kb block of op(A) at (ic, pc) into mr-row panels:
// panel r holds rows ir..ir+mr-1 as kb consecutive groups of mr values,
// zero-padded past the last row.
func packA(dst, a []float32, lda int, trans bool, ic, pc, mb, kb int) {
	for ir := 0; ir < mb; ir += mr {
		mm := min(mr, mb-ir)
		p := dst[ir*kb : ir*kb+kb*mr]
		if trans { // op(A)[i][p] = A[p][i]: rows of A are contiguous in i
			for q := 0; q < kb; q++ {
				src := a[(pc+q)*lda+ic+ir:]
				d := p[q*mr : q*mr+mr]
				if mm == mr {
					*(*[mr]float32)(d) = *(*[mr]float32)(src)
				} else {
					copy(d, src[:mm])
					clear(d[mm:])
				}
			}
			continue
		}
		base := (ic+ir)*lda + pc
		q0 := packRowsVec(p, a, base, lda, mm, kb) // columns [0, q0) done
		if mm < mr {
			for i := 0; i < mm; i++ {
				src := a[base+i*lda+q0 : base+i*lda+kb]
				for q, v := range src {
					p[(q0+q)*mr+i] = v
				}
			}
			for i := mm; i < mr; i++ {
				for q := q0; q < kb; q++ {
					p[q*mr+i] = 0
				}
			}
			continue
		}
		// Six rows side by side, the panel written in order.
		r0, r1, r2 := a[base:base+kb], a[base+lda:base+lda+kb], a[base+2*lda:base+2*lda+kb]
		r3, r4, r5 := a[base+3*lda:base+3*lda+kb], a[base+4*lda:base+4*lda+kb], a[base+5*lda:base+5*lda+kb]
		for q := q0; q < kb; q++ {
			d := (*[mr]float32)(p[q*mr : q*mr+mr])
			d[0], d[1], d[2], d[3], d[4], d[5] = r0[q], r1[q], r2[q], r3[q], r4[q], r5[q]
		}
	}
}

// packB copies the kb×nb block of op(B) at (pc, jc) into nr-column panels:
// panel j holds columns jr..jr+nr-1 as kb consecutive rows of nr values,
// zero-padded past the last column.
func packB(dst, b []float32, ldb int, trans bool, pc, jc, kb, nb int) {
	for jr := 0; jr < nb; jr += nr {
		nn := min(nr, nb-jr)
		p := dst[jr*kb : jr*kb+kb*nr]
		if !trans { // rows of B are contiguous in j
			for q := 0; q < kb; q++ {
				src := b[(pc+q)*ldb+jc+jr:]
				d := p[q*nr : q*nr+nr]
				if nn == nr {
					*(*[nr]float32)(d) = *(*[nr]float32)(src)
				} else {
					copy(d, src[:nn])
					clear(d[nn:])
				}
			}
			continue
		}
		// op(B)[q][j] = B[j][q]: read nr rows of B side by side, write
		// the panel in order.
		base := (jc+jr)*ldb + pc
		if nn < nr {
			clear(p)
			for j := 0; j < nn; j++ {
				src := b[base+j*ldb : base+j*ldb+kb]
				for q, v := range src {
					p[q*nr+j] = v
				}
			}
			continue
		}
		var rows [nr][]float32
		for j := range rows {
			rows[j] = b[base+j*ldb : base+j*ldb+kb]
		}
		for q := 0; q < kb; q++ {
			d := (*[nr]float32)(p[q*nr : q*nr+nr])
			for j := range d {
				d[j] = rows[j][q]
			}
		}
	}
}

func scale(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

func checkLen(what string, s []float32, rows, cols, ld int) {
	if ld < cols {
		panic(fmt.Sprintf("gemm.Sgemm: %s has row stride %d < %d columns", what, ld, cols))
	}
	if need := (rows-1)*ld + cols; len(s) < need {
		panic(fmt.Sprintf("gemm.Sgemm: %s has %d elements, a %dx%d matrix with stride %d needs %d", what, len(s), rows, cols, ld, need))
	}
}
