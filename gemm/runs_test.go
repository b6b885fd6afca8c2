package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// runMatrix is op(B)[q][j] = src[rows[q]+cols[j]]: a RunPanels whose
// panels of 16 consecutive columns are runs (when runs is set).
type runMatrix struct {
	src        []float32
	rows, cols []int
	runs       bool
	rounded    Precision // RoundedTo
}

func (r *runMatrix) RoundedTo() Precision { return r.rounded }

func (r *runMatrix) PackB(dst []float32, pc, jc, kb, nb int) {
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kb : jr*kb+kb*nr]
		for q := 0; q < kb; q++ {
			for i := 0; i < nr; i++ {
				v := float32(0)
				if jr+i < nb {
					if at := r.rows[pc+q] + r.cols[jc+jr+i]; at < len(r.src) {
						v = r.src[at]
					}
				}
				panel[q*nr+i] = v
			}
		}
	}
}

func (r *runMatrix) RunSource() ([]float32, []int) { return r.src, r.rows }

func (r *runMatrix) Run(j int) int {
	if !r.runs || j+nr > len(r.cols) {
		return -1
	}
	for i := 1; i < nr; i++ {
		if r.cols[j+i] != r.cols[j]+i {
			return -1
		}
	}
	return r.cols[j]
}

// packedOnly hides a Panels' RunPanels methods: every panel packed.
type packedOnly struct{ Panels }

// TestRunPanelsBitIdentical: a product whose B panels are runs (read
// where they lie by the direct kernels, where AVX-512 runs) gives C the
// bits of the same product with every panel packed, through
// SgemmPackedPanels and SgemmPackedPanelsRows: row counts with every last
// row panel from 1 to 6 rows and past mc, k of 1, odd, past kc and two
// blocks, runs beside gathered panels and partial last panels, alpha and
// beta 0, 1 and others, NaN in C where beta is 0.
func TestRunPanelsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const srcLen = 4096
	src := randSlice(rng, srcLen)
	var pa PackedA
	direct := 0
	for _, m := range []int{1, 5, 12, 16, 17, 23, 30, 64, mc + 7} {
		for _, k := range []int{1, 3, 9, 144, kc + 5, 2*kc + 1} {
			for _, shape := range []string{"runs", "mixed", "tail"} {
				// The columns: panels of 16, each a run at a random place
				// or (mixed: the third and sixth) 16 random pixels; tail
				// adds a partial panel of 7. The first two are runs, as
				// useRuns asks.
				var cols []int
				for p := 0; p < 6; p++ {
					base := rng.IntN(srcLen/2 - nr)
					for i := 0; i < nr; i++ {
						c := base + i
						if shape == "mixed" && p%3 == 2 {
							c = rng.IntN(srcLen / 2)
						}
						cols = append(cols, c)
					}
				}
				if shape == "tail" {
					for i := 0; i < 7; i++ {
						cols = append(cols, rng.IntN(srcLen/2))
					}
				}
				rows := make([]int, k)
				for q := range rows {
					rows[q] = rng.IntN(srcLen/2 - nr)
				}
				n := len(cols)
				b := &runMatrix{src, rows, cols, true, FP32}
				if useRuns(b, m, n, k) {
					direct++
				}
				a := randSlice(rng, m*k)
				PackA(&pa, false, m, k, a, k)
				for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0.3, 0}} {
					alpha, beta := ab[0], ab[1]
					ldc := n + 3
					c0 := randSlice(rng, m*ldc)
					if beta == 0 {
						for i := range c0 {
							if i%5 == 0 {
								c0[i] = float32(math.NaN())
							}
						}
					}
					want, got := slices.Clone(c0), slices.Clone(c0)
					SgemmPackedPanels(&pa, n, alpha, packedOnly{b}, beta, want, ldc)
					SgemmPackedPanels(&pa, n, alpha, b, beta, got, ldc)
					name := fmt.Sprintf("m=%d k=%d %s alpha=%g beta=%g", m, k, shape, alpha, beta)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("%s: SgemmPackedPanels C[%d] = %v, want %v (every panel packed)", name, i, got[i], want[i])
					}
					if m > RowBlock { // rows [12, m) alone
						wantR, gotR := slices.Clone(c0[RowBlock*ldc:]), slices.Clone(c0[RowBlock*ldc:])
						SgemmPackedPanelsRows(&pa, RowBlock, m, n, alpha, packedOnly{b}, beta, wantR, ldc)
						SgemmPackedPanelsRows(&pa, RowBlock, m, n, alpha, b, beta, gotR, ldc)
						if i := firstDiff(gotR, wantR); i >= 0 {
							t.Fatalf("%s: SgemmPackedPanelsRows C[%d] = %v, want %v", name, i, gotR[i], wantR[i])
						}
					}
				}
			}
		}
	}
	if wide.direct == nil {
		t.Logf("no direct kernels on this path (%s): runs were packed", kernelName)
	} else if direct == 0 {
		t.Fatal("no product took the direct kernels")
	}
}

// TestRunPanelsPastSource: a run some of whose rows reach past src is
// packed, not read where it would lie (src here is followed by NaN in
// its array, which a read past it would bring into C; runMatrix's PackB
// gives 0 there).
func TestRunPanelsPastSource(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const srcLen = 1000
	big := randSlice(rng, srcLen+64)
	for i := srcLen; i < len(big); i++ {
		big[i] = float32(math.NaN())
	}
	m, k := 16, 9
	rows := make([]int, k)
	for q := range rows {
		rows[q] = 40 * q
	}
	var cols []int
	for j := 0; j < 2*nr; j++ {
		cols = append(cols, srcLen-rows[k-1]-nr+8+j) // the last row's run ends 8+16 past src
	}
	b := &runMatrix{big[:srcLen], rows, cols, true, FP32}
	if b.Run(0) < 0 || b.Run(nr) < 0 {
		t.Fatal("the test's panels are not runs")
	}
	var pa PackedA
	PackA(&pa, false, m, k, randSlice(rng, m*k), k)
	want, got := make([]float32, m*2*nr), make([]float32, m*2*nr)
	SgemmPackedPanels(&pa, 2*nr, 1, packedOnly{b}, 0, want, 2*nr)
	SgemmPackedPanels(&pa, 2*nr, 1, b, 0, got, 2*nr)
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("C[%d] = %v, want %v (the run packed, 0 past src)", i, got[i], want[i])
	}
}

// TestRunPanelsRounded: at TF32 and BF16 (the fp32 kernels), a B whose
// source is rounded already (RoundedPanels) is read where it lies and
// gives the bits of the product that rounds every packed panel of the
// unrounded source; runs of an unrounded source give them too (packed
// and rounded).
func TestRunPanelsRounded(t *testing.T) {
	defer SetFastBF16(SetFastBF16(false))
	rng := rand.New(rand.NewPCG(13, 14))
	const srcLen = 2048
	src := randSlice(rng, srcLen)
	m, k, n := 30, 2*kc+1, 4*nr+5
	rows := make([]int, k)
	for q := range rows {
		rows[q] = rng.IntN(srcLen/2 - nr)
	}
	var cols []int
	for p := 0; p < n/nr; p++ {
		base := rng.IntN(srcLen/2 - nr)
		for i := 0; i < nr; i++ {
			cols = append(cols, base+i)
		}
	}
	for len(cols) < n {
		cols = append(cols, rng.IntN(srcLen/2))
	}
	a := randSlice(rng, m*k)
	for _, prec := range []Precision{TF32, BF16} {
		rounded := slices.Clone(src)
		RoundSlice(prec, rounded)
		var pa PackedA
		PackAPrec(&pa, prec, false, m, k, a, k)
		want, got := make([]float32, m*n), make([]float32, m*n)
		SgemmPackedPanels(&pa, n, 1, packedOnly{&runMatrix{src, rows, cols, false, FP32}}, 0, want, n)
		SgemmPackedPanels(&pa, n, 1, &runMatrix{rounded, rows, cols, true, prec}, 0, got, n)
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("%v: C[%d] = %v, want %v (B rounded as it is packed)", prec, i, got[i], want[i])
		}
		// Runs not rounded yet must be rounded: packed, not read.
		clear(got)
		SgemmPackedPanels(&pa, n, 1, &runMatrix{src, rows, cols, true, FP32}, 0, got, n)
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("%v, source not rounded: C[%d] = %v, want %v", prec, i, got[i], want[i])
		}
	}
}

// TestUseRuns: the direct kernels take a product only where A fits
// runsMaxA and B's first two panels are runs.
func TestUseRuns(t *testing.T) {
	if wide.direct == nil {
		t.Skipf("no direct kernels on this path (%s)", kernelName)
	}
	cols := make([]int, 3*nr)
	for j := range cols {
		cols[j] = j
	}
	runs := &runMatrix{make([]float32, 1024), make([]int, 8), cols, true, FP32}
	gathered := &runMatrix{make([]float32, 1024), make([]int, 8), cols, false, FP32}
	for _, c := range []struct {
		b       *runMatrix
		m, n, k int
		want    bool
	}{
		{runs, 16, 3 * nr, 144, true},
		{runs, 64, 3 * nr, runsMaxA / 64, true},
		{runs, 64, 3 * nr, runsMaxA/64 + 1, false}, // A past runsMaxA
		{runs, 16, nr, 144, false},                 // one panel
		{gathered, 16, 3 * nr, 144, false},
	} {
		if got := useRuns(c.b, c.m, c.n, c.k); got != c.want {
			t.Errorf("useRuns(runs %v, m=%d n=%d k=%d) = %v, want %v", c.b.runs, c.m, c.n, c.k, got, c.want)
		}
	}
}

// firstDiff is the first index where a and b differ in bits, or -1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
