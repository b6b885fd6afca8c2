package gemm

// RunPanels is a Panels some of whose NR-column panels lie in one array
// already, a row of NR consecutive floats for each of their k rows: a
// stride-1 convolution's im2col matrix, whose columns along an output row
// read consecutive pixels of the padded input. Where the AVX-512 kernels
// run, the packed A is small enough to stay in L2 (runsMaxA: a layer of
// up to 128 channels at 3x3) and B's first two panels are runs,
// SgemmPackedPanels and SgemmPackedPanelsRows read such panels where they
// lie (two side by side make one 12x32 tile's B) and pack the others, a
// 32-column piece at a time, each piece multiplied as soon as it is
// packed, while it is in L1: at FP32, or at TF32 and BF16 on the fp32
// kernels when the source is a RoundedPanels rounded to that precision
// already. The products are the same bits as with every panel packed: the
// same FMAs in the same order.
type RunPanels interface {
	Panels
	// RunSource is the array the runs lie in and the offset in it of
	// each of op(B)'s k rows.
	RunSource() (src []float32, rows []int)
	// Run is, for the panel of columns j … j+NR−1 (j a multiple of NR),
	// the offset o such that element (q, j+i) of op(B) is
	// src[rows[q]+o+i] for every q and i < NR; or -1 where the panel is
	// not a run (PackB then packs it).
	Run(j int) int
}

// runsMaxA bounds the packed A (m·k floats) that multiplyRuns takes: it
// reads all of A for every 32 columns, which stays in L2 up to about
// this size. Past it (resnet18's 256 and 512 channels, 2.4 and 9.4 MB of
// weights) it read A from L3 and measured 5-8% slower than multiply's
// blocking, which holds a 96 KiB block of A in L2 across all columns.
const runsMaxA = 1 << 18

// useRuns says whether a product of a packed m×k A with b takes
// multiplyRuns: where the direct kernels run, A fits runsMaxA, and b's
// first two panels are runs (a convolution's panels are all runs or
// mostly not: those of an 8-pixel or narrower output row never are).
func useRuns(b RunPanels, m, n, k int) bool {
	return wide.direct != nil && m*k <= runsMaxA && n >= 2*nr && b.Run(0) >= 0 && b.Run(nr) >= 0
}

// directFunc is a kernel of a wide tile whose B is two runs: row p of B's
// two NR-column panels is b0[offs[p]:][:NR] and b1[offs[p]:][:NR].
type directFunc func(k int, a *float32, offs *int, b0, b1, c *float32, ldc int, alpha, beta float32)

// directKernels are a 2·mr×2·nr wide tile's kernels on runs: main for
// its tiles, row for a last full row panel, part[r] for a last one of r
// rows, each giving C the bits its packed twin gives it.
type directKernels struct {
	main, row directFunc
	part      [mr]directFunc
}

// multiplyRuns is multiply for a packed A (rows [r0, r0+m) of pa) and a
// RunPanels B that needs no rounding, 2·nr columns at a time: every k
// block of those columns, each of its row blocks through the direct
// kernels where both panels are runs within src, else packed into s.b and
// through macro. Each element of C meets the kernels multiply would give
// it, in the same k order, so it gets the same bits.
func multiplyRuns(s *scratch, pa *PackedA, r0, m, n int, alpha float32, b RunPanels, beta float32, c []float32, ldc int) {
	const cw = 2 * nr
	d := wide.direct
	src, rows := b.RunSource()
	k, kstep := pa.k, pa.kstep
	if len(rows) < k {
		panic("gemm: RunPanels has fewer row offsets than A has columns")
	}
	// The least and greatest row offset, in one pass, so that a run is
	// read only where all of its rows lie in src.
	lo, hi := rows[0], rows[0]
	for _, r := range rows[:k] {
		lo, hi = min(lo, r), max(hi, r)
	}
	inside := func(o int) bool {
		return o >= 0 && lo+o >= 0 && hi+o+nr <= len(src)
	}
	nblocks := (k + kstep - 1) / kstep
	for jr := 0; jr < n; jr += cw {
		nn := min(cw, n-jr)
		o0, o1 := -1, -1
		if nn == cw {
			o0, o1 = b.Run(jr), b.Run(jr+nr)
		}
		direct := inside(o0) && inside(o1)
		for bi := 0; bi < nblocks; bi++ {
			pc := bi * kstep
			kb := min(kstep, k-pc)
			bet := beta
			if pc > 0 {
				bet = 1
			}
			if !direct {
				b.PackB(s.b, pc, jr, kb, nn)
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				ap := pa.data[bi*pa.mpad*kstep+(r0+ic)*kb:]
				cc := c[ic*ldc+jr:]
				if !direct {
					macro(s, ap, mb, nn, kb, alpha, bet, cc, ldc)
					continue
				}
				offs, b0, b1 := &rows[pc], &src[o0], &src[o1]
				ir := 0
				for ; ir+2*mr <= mb; ir += 2 * mr {
					d.main(kb, &ap[ir*kb], offs, b0, b1, &cc[ir*ldc], ldc, alpha, bet)
				}
				for ; ir < mb; ir += mr {
					if mm := mb - ir; mm < mr {
						d.part[mm](kb, &ap[ir*kb], offs, b0, b1, &cc[ir*ldc], ldc, alpha, bet)
						continue
					}
					d.row(kb, &ap[ir*kb], offs, b0, b1, &cc[ir*ldc], ldc, alpha, bet)
				}
			}
		}
	}
}
