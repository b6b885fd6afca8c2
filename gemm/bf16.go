package gemm

import (
	"fmt"
	"math"
	"sync"
)

// bf16 products: C = alpha·op(A)·op(B) + beta·C with the elements of op(A)
// and op(B) rounded to bfloat16 (round to nearest, ties to even; NaN stays
// a quiet NaN) and every sum in fp32, as PyTorch's bf16 autocast and
// train.precision: bf16 mean it.
//
// Where the CPU has AVX512_BF16 (HasBF16), the product runs on VDPBF16PS
// micro-kernels: the blocking is Sgemm's, but B's packed fp32 panels are
// converted by VCVTNE2PS2BF16 into panels of bf16 pairs (per pair of k,
// column j's two values in one dword, the layout VDPBF16PS reads), A is
// packed into 12-row panels of pairs, an odd k is padded with a zero, and
// a 12x32 tile (24 zmm accumulators, 2 for B, 4 broadcasts of A pairs)
// does 2 bf16 products per fp32 lane per instruction, twice the products
// of an fp32 FMA. Elsewhere (no AVX512_BF16, $STOKE_GEMM=avx2, build tag
// stokepurego, other architectures) the inputs are rounded while packing
// and Sgemm's own kernels multiply them: the same result within the bound
// below, and the same function everywhere.
//
// Accuracy. The product of two bf16 values is exact in fp32 (8 + 8
// significant bits), so every sum is fp32 rounding alone: with S =
// Σ|â·b̂| over the rounded inputs and u = 2^-24, each element is within
// (k + 2·nb + 3)·u·(|alpha|·S + |beta·c|) of the exact result over the
// rounded inputs (nb k blocks of at most KC, each adding alpha's product
// and the add into C). VDPBF16PS (Intel SDM vol. 2, VDPBF16PS; likewise
// VCVTNE2PS2BF16) does not consult MXCSR: it treats denormal inputs as
// zero and flushes denormal results to zero, and VCVTNE2PS2BF16 turns a
// denormal fp32 input into zero. So on the fast path a term with an input
// below 2^-126 in magnitude is dropped (at most 2^-126·|other input| each),
// and a running sum that falls below 2^-126 becomes zero (at most 2^-126
// per step of k, times |alpha|): an absolute error, |alpha|·(D + (k+1)·2^-126)
// with D the sum of the dropped terms. bf16 has fp32's exponent range, so
// this touches only values below fp32's smallest normal, 2^-126. The
// fallback keeps denormals as Sgemm does. Per lane, the SDM defines
// VDPBF16PS as two fused adds, the odd element's product first; the tests
// check the kernels against that definition bit for bit where they run
// (they matched on AMD family 26, Zen 5).

// bf16Kernels are the kernels of the bf16 path: the tiles of 32 and 16
// columns, of 4, 8 and 12 rows (k32[r/4-1]) (kp pairs of k; a the first of
// the rows taken from a packed 12-row A panel, b a packed B panel of 32 or
// 16 columns; c with row stride ldc, not read where beta == 0) and pairs, the
// conversion of one packed fp32 B panel of 16 columns into bf16 pairs
// (dstride bytes apart), and row, the conversion of n consecutive floats
// (n a multiple of 32) into n/2 dwords of pairs. The conversions treat a
// denormal input as zero, as VCVTNE2PS2BF16 does (bf16BitsDAZ). A zero
// bf16Kernels is none.
type bf16Kernels struct {
	k32, k16 [3]bf16KernelFunc
	pairs    func(dst *uint32, dstride int, src *float32, kb int)
	pairRows func(dst *uint32, dstride int, src *float32, offs *int, kb, c, limit int) (ok bool)
	row      func(dst *uint32, src *float32, n int)
}

// PairPanels is a Panels that can write some of its NR-column panels
// straight in the bf16 kernels' layout, skipping the fp32 panel PackB
// writes and the conversion that follows it: a convolution's im2col
// panels whose NR pixels are one run of the input. The bits are the same.
type PairPanels interface {
	Panels
	// PackPairs writes the kb×NR panel of op(B) whose top-left element is
	// (pc, j), j a multiple of NR, by one call of w.Rows, and reports
	// whether it did; where it did not, PackB writes that panel.
	PackPairs(w *PairWriter, pc, j, kb int) bool
}

// PairWriter writes one panel for PairPanels.PackPairs.
type PairWriter struct {
	ks      *bf16Kernels
	dst     *uint32
	dstride int
	kb      int
	done    bool
}

// Rows writes the panel whose row q is src[offs[q]+c:][:NR], for the
// panel's kb rows (len(offs) == kb), rounded to bf16 pairs. It panics
// when an index lies outside src.
func (w *PairWriter) Rows(src []float32, offs []int, c int) {
	if len(offs) != w.kb || w.done {
		panic(fmt.Sprintf("gemm.PairWriter.Rows: %d row offsets for a panel of %d rows (or a second call)", len(offs), w.kb))
	}
	// The kernel checks each row's start against the last that fits.
	if len(src) < nr || !w.ks.pairRows(w.dst, w.dstride, &src[0], &offs[0], w.kb, c, len(src)-nr) {
		panic(fmt.Sprintf("gemm.PairWriter.Rows: a row of the panel (offsets plus %d) lies outside the %d floats of src", c, len(src)))
	}
	w.done = true
}

type bf16KernelFunc func(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32)

const (
	bmr = 12 // rows of the bf16 tiles
	bmc = 96 // a multiple of bmr
)

// HasBF16 reports whether SgemmBF16 runs the VDPBF16PS kernels: the CPU
// and OS have AVX512_BF16 (with AVX-512F and BW) and AVX-512 is not held
// off ($STOKE_GEMM=avx2, build tag stokepurego, as HasAVX512 says).
func HasBF16() bool { return cpuBF16 && bf16Kernel.pairs != nil && wide.main != nil }

// BF16Name says which path SgemmBF16 takes on this machine, for the
// start-up line.
func BF16Name() string {
	if HasBF16() {
		return "gemm bf16: Go assembly AVX512_BF16 (VDPBF16PS) 12x32 micro-kernel, bf16 inputs, fp32 sums"
	}
	why := "no AVX512_BF16 on this CPU or OS"
	if cpuBF16 {
		why = "AVX-512 held off by STOKE_GEMM=avx2 or build tag stokepurego"
	}
	return "gemm bf16: inputs rounded to bf16, then the fp32 " + kernelName + " (" + why + ")"
}

// bf16BitsRNE is f rounded to bf16, ties to even, as the 16 bits of a
// bfloat16 in the low half; a NaN stays NaN (made quiet, as
// VCVTNE2PS2BF16 does), an overflow rounds to infinity.
func bf16BitsRNE(f float32) uint32 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return u>>16 | 0x40
	}
	return (u + 0x7fff + (u>>16)&1) >> 16
}

// bf16BitsDAZ is bf16BitsRNE with a denormal input taken as zero of its
// sign, as VCVTNE2PS2BF16 converts: the fast path's packing of A, where it
// is done in Go.
func bf16BitsDAZ(f float32) uint32 {
	if u := math.Float32bits(f); u&0x7f800000 == 0 {
		return u >> 16 & 0x8000
	}
	return bf16BitsRNE(f)
}

// bf16RoundRNE is f rounded to bf16 (bf16BitsRNE) as a float32.
func bf16RoundRNE(f float32) float32 { return math.Float32frombits(bf16BitsRNE(f) << 16) }

type bf16Scratch struct {
	f    []float32 // op(B) packed in fp32 by PackB
	b    []uint32  // the same in bf16 pairs
	a    []uint32  // op(A) in 12-row panels of bf16 pairs
	row  []uint32  // one row of op(A) in pairs, on its way to a
	tile [bmr * 32]float32
	mat  matrixB
	pw   PairWriter // bf16PackB's, for PairPanels
	// the fallback's
	pa PackedA
	rp roundingPanels
}

var bf16Pool = sync.Pool{New: func() any { return new(bf16Scratch) }}

func (s *bf16Scratch) fast() {
	if s.f == nil {
		s.f = make([]float32, kc*nc)
		s.b = make([]uint32, kc/2*nc)
		s.a = make([]uint32, bmc*kc/2)
		s.row = make([]uint32, kc/2)
	}
}

// SgemmBF16 is Sgemm with the elements of op(A) and op(B) rounded to bf16
// and fp32 sums (see the accuracy note above): C = alpha·op(A)·op(B) + beta·C,
// op(A) m×k (A is k×m when transA), op(B) k×n (B is n×k when transB), C
// m×n, row strides lda, ldb, ldc; with beta == 0, C is not read.
func SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !begin("SgemmBF16", transA, m, n, k, alpha, a, lda, beta, c, ldc) {
		return
	}
	if transB {
		checkLen("B", b, n, k, ldb)
	} else {
		checkLen("B", b, k, n, ldb)
	}
	s := bf16Pool.Get().(*bf16Scratch)
	s.mat = matrixB{b, ldb, transB}
	bf16Multiply(s, bf16Path(), transA, m, n, k, alpha, a, lda, &s.mat, beta, c, ldc)
	s.mat = matrixB{}
	bf16Pool.Put(s)
}

// SgemmPanelsBF16 is SgemmBF16 with op(B) (k×n) given by a Panels source
// (a convolution's im2col matrix): its fp32 panels are rounded to bf16
// after PackB.
func SgemmPanelsBF16(transA bool, m, n, k int, alpha float32, a []float32, lda int, b Panels, beta float32, c []float32, ldc int) {
	if !begin("SgemmPanelsBF16", transA, m, n, k, alpha, a, lda, beta, c, ldc) {
		return
	}
	s := bf16Pool.Get().(*bf16Scratch)
	bf16Multiply(s, bf16Path(), transA, m, n, k, alpha, a, lda, b, beta, c, ldc)
	bf16Pool.Put(s)
}

// bf16Path is the kernels SgemmBF16 runs here, nil for the fallback.
func bf16Path() *bf16Kernels {
	if HasBF16() {
		return &bf16Kernel
	}
	return nil
}

// bf16Multiply runs the product on kernels ks, or the fallback where ks is nil.
func bf16Multiply(s *bf16Scratch, ks *bf16Kernels, transA bool, m, n, k int, alpha float32, a []float32, lda int, b Panels, beta float32, c []float32, ldc int) {
	if ks == nil {
		packAInto(&s.pa, FP32, bf16RoundSlice, transA, m, k, a, lda)
		s.rp.p = b
		SgemmPackedPanels(&s.pa, n, alpha, &s.rp, beta, c, ldc)
		s.rp.p = nil
		return
	}
	s.fast()
	bf16Blocks(s, ks, nil, 0, transA, m, n, k, alpha, a, lda, b, beta, c, ldc)
}

// roundingPanels rounds the panels of p to bf16 as they are packed.
type roundingPanels struct{ p Panels }

func (r *roundingPanels) PackB(dst []float32, pc, jc, kb, nb int) {
	packBRounded(dst, r.p, pc, jc, kb, nb, bf16RoundSlice)
}

// bf16RoundSlice rounds s in place to bf16 (bf16RoundRNE), in AVX-512 or
// AVX2 where the CPU has them.
func bf16RoundSlice(s []float32) {
	s = s[bf16RoundVec(s):]
	for i, v := range s {
		s[i] = bf16RoundRNE(v)
	}
}

// bf16KStep is the depth of the k blocks: kStep's, made even (at most KC,
// which is even) so that only the last block has an odd row to pad.
func bf16KStep(k int) int {
	s := kStep(k)
	return s + s&1
}

// BF16KStep is the depth of the k blocks in which the bf16 kernels sum a
// product (each block's sum from 0, then added to C by one rounding): a
// kernel elsewhere that sums its k blocks so gets their bits.
func BF16KStep(k int) int { return bf16KStep(k) }

// BF16Words writes src rounded to bf16 as the bf16 path's packing rounds
// it (ties to even, a denormal to zero, as VCVTNE2PS2BF16), two to a
// dword: dst[i] = src[2i] | src[2i+1]<<16, so that dst read as uint16s is
// src in bf16, an odd last float paired with zero. len(dst) must be
// (len(src)+1)/2.
func BF16Words(dst []uint32, src []float32) {
	n := len(src)
	if len(dst) != (n+1)/2 {
		panic(fmt.Sprintf("gemm.BF16Words: %d dwords for %d floats (want %d)", len(dst), n, (n+1)/2))
	}
	i := 0
	if HasBF16() && n >= 32 {
		i = n &^ 31
		bf16Kernel.row(&dst[0], &src[0], i)
	}
	for ; i < n; i += 2 {
		var hi uint32
		if i+1 < n {
			hi = bf16BitsDAZ(src[i+1])
		}
		dst[i/2] = bf16BitsDAZ(src[i]) | hi<<16
	}
}

// BF16PairPanel converts a 16-column fp32 panel of kb rows (src[16q+j],
// PackB's layout) into the pairs the bf16 kernels read for B, rounded as
// BF16Words: dst[16p+j] = row 2p's column j | row 2p+1's << 16, an odd
// last row paired with zero.
func BF16PairPanel(dst []uint32, src []float32, kb int) {
	kp := (kb + 1) / 2
	if kb <= 0 || len(dst) < 16*kp || len(src) < 16*kb {
		panic(fmt.Sprintf("gemm.BF16PairPanel: %d dwords, %d floats for %d rows", len(dst), len(src), kb))
	}
	if HasBF16() {
		bf16Kernel.pairs(&dst[0], 64, &src[0], kb)
		return
	}
	for q := 0; q < kb; q += 2 {
		for j := 0; j < 16; j++ {
			var hi uint32
			if q+1 < kb {
				hi = bf16BitsDAZ(src[16*(q+1)+j])
			}
			dst[8*q+j] = bf16BitsDAZ(src[16*q+j]) | hi<<16
		}
	}
}

// bf16PackB writes the kb×nb block of B at (pc, jc) as bf16 pairs into
// s.b: in a 32-column block the two 16-column panels' pairs alternate (a
// row of pairs 128 bytes), a last block of 16 columns or fewer has its own
// (64 bytes). B is packed in fp32 by its PackB and converted, or, where
// pp is not nil, panel by panel: by pp.PackPairs where it can, else by
// PackB for that panel and converted.
func bf16PackB(s *bf16Scratch, ks *bf16Kernels, b Panels, pp PairPanels, pc, jc, kb, nb int) {
	kp := (kb + 1) / 2
	if pp == nil {
		b.PackB(s.f, pc, jc, kb, nb)
	}
	for jr := 0; jr < nb; jr += 32 {
		stride := 64
		if nb-jr > nr {
			stride = 128
		}
		for j := jr; j < min(jr+32, nb); j += nr {
			dst, src := &s.b[jr*kp+j-jr], &s.f[j*kb]
			if pp != nil {
				w := &s.pw // in the scratch: a PairWriter on the stack would escape
				*w = PairWriter{ks: ks, dst: dst, dstride: stride, kb: kb}
				if pp.PackPairs(w, pc, jc+j, kb) && w.done {
					continue
				}
				pp.PackB(s.f[:kb*nr], pc, jc+j, kb, min(nr, nb-j))
				src = &s.f[0]
			}
			ks.pairs(dst, stride, src, kb)
		}
	}
}

// bf16Blocks is multiply's blocking on the bf16 kernels: B is packed in
// fp32 by its Panels and converted to pairs, A is packed into pairs unless
// pa holds it packed already.
func bf16Blocks(s *bf16Scratch, ks *bf16Kernels, pa *PackedABF16, r0 int, transA bool, m, n, k int, alpha float32, a []float32, lda int, b Panels, beta float32, c []float32, ldc int) {
	kstep := bf16KStep(k)
	pp, _ := b.(PairPanels)
	if ks.pairRows == nil {
		pp = nil
	}
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for bi, pc := 0, 0; pc < k; bi, pc = bi+1, pc+kstep {
			kb := min(kstep, k-pc)
			kp := (kb + 1) / 2
			bf16PackB(s, ks, b, pp, pc, jc, kb, nb)
			bet := beta
			if pc > 0 {
				bet = 1
			}
			for ic := 0; ic < m; ic += bmc {
				mb := min(bmc, m-ic)
				ap := s.a
				if pa != nil {
					ap = pa.data[bi*pa.mpad*(kstep/2)+(r0+ic)*kp:]
				} else {
					bf16PackA(ks, s.row, s.a, a, lda, transA, ic, pc, mb, kb)
				}
				bf16Macro(s, ks, ap, mb, nb, kp, alpha, bet, c[ic*ldc+jc:], ldc)
			}
		}
	}
}

// bf16Macro multiplies the packed mb×kb block of A by the packed kb×nb
// block of B into C: 12x32 tiles, 16 columns wide for a last 16 columns
// or fewer, 8 or 4 rows high for a last 8 or 4 rows or fewer, partial
// tiles through a scratch tile.
func bf16Macro(s *bf16Scratch, ks *bf16Kernels, a []uint32, mb, nb, kp int, alpha, beta float32, c []float32, ldc int) {
	for jr := 0; jr < nb; jr += 32 {
		w, kerns := 32, &ks.k32
		if nb-jr <= nr {
			w, kerns = nr, &ks.k16
		}
		nn := min(w, nb-jr)
		bp := &s.b[jr*kp]
		for ir := 0; ir < mb; ir += bmr {
			mm := min(bmr, mb-ir)
			rows := (mm + 3) &^ 3
			kern := kerns[rows/4-1]
			ap := &a[ir*kp]
			if mm == rows && nn == w {
				kern(kp, ap, bp, &c[ir*ldc+jr], ldc, alpha, beta)
				continue
			}
			t := s.tile[:rows*w]
			kern(kp, ap, bp, &t[0], w, alpha, 0)
			addTile(c[ir*ldc+jr:], ldc, t, w, mm, nn, beta)
		}
	}
}

// bf16PackA packs the mb×kb block of op(A) at (ic, pc) into 12-row panels
// of bf16 pairs: panel r holds, per pair p of k, rows ir..ir+11 as
// A[i][pc+2p] | A[i][pc+2p+1]<<16, zero past the last row and for the
// odd last k. A row of A is converted whole by ks.row into buf (kc/2
// dwords), then spread into the panel.
func bf16PackA(ks *bf16Kernels, buf, dst []uint32, a []float32, lda int, trans bool, ic, pc, mb, kb int) {
	kp := (kb + 1) / 2
	even := kb &^ 1
	for ir := 0; ir < mb; ir += bmr {
		mm := min(bmr, mb-ir)
		p := dst[ir*kp : ir*kp+kp*bmr]
		if trans { // op(A)[i][q] = A[q][i]: rows of A are contiguous in i
			for q := 0; q < even; q += 2 {
				r0 := a[(pc+q)*lda+ic+ir:][:mm]
				r1 := a[(pc+q+1)*lda+ic+ir:][:mm]
				d := p[q/2*bmr : q/2*bmr+bmr]
				for i := range r0 {
					d[i] = bf16BitsDAZ(r0[i]) | bf16BitsDAZ(r1[i])<<16
				}
				clear(d[mm:])
			}
			if kb&1 != 0 {
				r0 := a[(pc+kb-1)*lda+ic+ir:][:mm]
				d := p[(kp-1)*bmr : kp*bmr]
				for i, v := range r0 {
					d[i] = bf16BitsDAZ(v)
				}
				clear(d[mm:])
			}
			continue
		}
		vec := kb &^ 31
		for i := 0; i < mm; i++ {
			row := a[(ic+ir+i)*lda+pc:][:kb]
			if vec > 0 {
				ks.row(&buf[0], &row[0], vec)
			}
			for q := vec; q < even; q += 2 {
				buf[q/2] = bf16BitsDAZ(row[q]) | bf16BitsDAZ(row[q+1])<<16
			}
			if kb&1 != 0 {
				buf[kp-1] = bf16BitsDAZ(row[kb-1])
			}
			for q, v := range buf[:kp] {
				p[q*bmr+i] = v
			}
		}
		for i := mm; i < bmr; i++ {
			for q := 0; q < kp; q++ {
				p[q*bmr+i] = 0
			}
		}
	}
}

// PackedABF16 is op(A) packed once for SgemmPackedBF16 and
// SgemmPackedPanelsBF16, as PackedA is for SgemmPacked: already rounded
// to bf16 (in the bf16 kernels' pairs where HasBF16, else as fp32 values
// in a PackedA for the fallback).
type PackedABF16 struct {
	m, k, kstep, mpad int
	data              []uint32
	ks                *bf16Kernels // the kernels it was packed for
	fb                *PackedA     // the fallback's, when packed without them
	rows              [][]uint32   // per k block, one row of op(A) in pairs on its way to data (kept: packing allocates once)

	// the packing begin began, for block
	src   []float32
	lda   int
	trans bool
}

// PackABF16 packs op(A) (m×k; A itself is k×m when transA) into p, rounded
// to bf16, reusing p's storage when it is large enough.
func PackABF16(p *PackedABF16, transA bool, m, k int, a []float32, lda int) {
	packABF16(p, bf16Path(), transA, m, k, a, lda)
}

func packABF16(p *PackedABF16, ks *bf16Kernels, transA bool, m, k int, a []float32, lda int) {
	if m < 1 || k < 1 {
		panic(fmt.Sprintf("gemm.PackABF16: size m=%d k=%d, want both >= 1", m, k))
	}
	if transA {
		checkLen("A", a, k, m, lda)
	} else {
		checkLen("A", a, m, k, lda)
	}
	for bi, n := 0, p.begin(ks, transA, m, k, a, lda); bi < n; bi++ {
		p.block(bi)
	}
}

// begin sizes p for packABF16 and returns its number of k blocks, which
// block packs, each once, in any order or at once.
func (p *PackedABF16) begin(ks *bf16Kernels, transA bool, m, k int, a []float32, lda int) int {
	p.m, p.k, p.ks = m, k, ks
	if ks == nil {
		if p.fb == nil {
			p.fb = new(PackedA)
		}
		p.data = p.data[:0]
		return p.fb.begin(FP32, bf16RoundSlice, transA, m, k, a, lda)
	}
	p.fb = nil
	p.src, p.lda, p.trans = a, lda, transA
	kstep := bf16KStep(k)
	p.kstep, p.mpad = kstep, (m+bmr-1)/bmr*bmr
	nblocks := (k + kstep - 1) / kstep
	for len(p.rows) < nblocks {
		p.rows = append(p.rows, make([]uint32, kc/2))
	}
	if n := nblocks * p.mpad * kstep / 2; cap(p.data) < n {
		p.data = make([]uint32, n)
	} else {
		p.data = p.data[:n]
	}
	return nblocks
}

// block packs k block bi of what begin began.
func (p *PackedABF16) block(bi int) {
	if p.fb != nil {
		p.fb.block(bi)
		return
	}
	pc := bi * p.kstep
	bf16PackA(p.ks, p.rows[bi], p.data[bi*p.mpad*p.kstep/2:], p.src, p.lda, p.trans, 0, pc, p.m, min(p.kstep, p.k-pc))
}

// Rows and Depth are the m and k of the packed op(A).
func (p *PackedABF16) Rows() int  { return p.m }
func (p *PackedABF16) Depth() int { return p.k }

// SgemmPackedBF16 is SgemmBF16 with op(A) (m×k) packed by PackABF16:
// C = alpha·op(A)·op(B) + beta·C, op(B) k×n, rounded to bf16.
func SgemmPackedBF16(a *PackedABF16, transB bool, n int, alpha float32, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if a.m == 0 {
		panic("gemm.SgemmPackedBF16: A was never packed (PackABF16)")
	}
	if transB {
		checkLen("B", b, n, a.k, ldb)
	} else {
		checkLen("B", b, a.k, n, ldb)
	}
	if !beginRows("SgemmPackedBF16", a.m, n, alpha, beta, c, ldc) {
		return
	}
	s := bf16Pool.Get().(*bf16Scratch)
	s.mat = matrixB{b, ldb, transB}
	bf16PackedMultiply(s, a, "SgemmPackedBF16", 0, a.m, n, alpha, &s.mat, beta, c, ldc)
	s.mat = matrixB{}
	bf16Pool.Put(s)
}

// SgemmPackedPanelsBF16 is SgemmPackedBF16 with op(B) given by a Panels source.
func SgemmPackedPanelsBF16(a *PackedABF16, n int, alpha float32, b Panels, beta float32, c []float32, ldc int) {
	if a.m == 0 {
		panic("gemm.SgemmPackedPanelsBF16: A was never packed (PackABF16)")
	}
	if !beginRows("SgemmPackedPanelsBF16", a.m, n, alpha, beta, c, ldc) {
		return
	}
	s := bf16Pool.Get().(*bf16Scratch)
	bf16PackedMultiply(s, a, "SgemmPackedPanelsBF16", 0, a.m, n, alpha, b, beta, c, ldc)
	bf16Pool.Put(s)
}

// bf16PackedMultiply is rows [r0, r0+m) of the product of the packed a
// with b, r0 a multiple of RowBlock (of bmr), its sizes checked.
func bf16PackedMultiply(s *bf16Scratch, a *PackedABF16, fn string, r0, m, n int, alpha float32, b Panels, beta float32, c []float32, ldc int) {
	if a.fb != nil {
		s.rp.p = b
		packedPanels(fn, a.fb, r0, m, n, alpha, &s.rp, beta, c, ldc)
		s.rp.p = nil
		return
	}
	s.fast()
	bf16Blocks(s, a.ks, a, r0, false, m, n, a.k, alpha, nil, 0, b, beta, c, ldc)
}
