package cpuops

import (
	"math"
	"math/rand/v2"
	"testing"

	"stoke/gemm"
)

// im2colNaive is the im2col matrix of x ((planes, H, W), K×K "same"
// padding) stored whole: row (ci, ky, kx), column pixel.
func im2colNaive(x []float32, planes, H, W, K int) [][]float32 {
	p := K / 2
	var rows [][]float32
	for ci := 0; ci < planes; ci++ {
		for ky := 0; ky < K; ky++ {
			for kx := 0; kx < K; kx++ {
				row := make([]float32, H*W)
				for y := 0; y < H; y++ {
					for xx := 0; xx < W; xx++ {
						if iy, ix := y+ky-p, xx+kx-p; iy >= 0 && iy < H && ix >= 0 && ix < W {
							row[y*W+xx] = x[ci*H*W+iy*W+ix]
						}
					}
				}
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// TestIm2colPanelsExact: colPanels (col) and colTPanels (colᵀ) pack every
// block of the im2col matrix exactly as gemm.Panels says, bit for bit, with
// blocks that start and end off the panel width and off the image rows, on
// images narrower and wider than a panel, and zero past column nb.
func TestIm2colPanelsExact(t *testing.T) {
	const nr = gemm.NR
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][4]int{{3, 64, 64, 3}, {2, 7, 5, 3}, {2, 32, 32, 3}, {3, 16, 16, 1}, {2, 9, 37, 5}, {1, 20, 18, 3}} {
		planes, H, W, K := s[0], s[1], s[2], s[3]
		x := make([]float32, planes*H*W)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		col := im2colNaive(x, planes, H, W, K)
		taps := makeTaps(planes, H, W, K)
		rows, pixels := len(taps), H*W
		cp := &colPanels{taps, H, W, x}
		ct := &colTPanels{&Conv{H: H, W: W, K: K, taps: taps}, x}
		// check packs the kb×nb block at (pc, jc) of a matrix with entry
		// at(q, j) and compares the panels.
		check := func(name string, b gemm.Panels, at func(q, j int) float32, pc, jc, kb, nb int) {
			t.Helper()
			npan := (nb + nr - 1) / nr
			dst := make([]float32, npan*nr*kb)
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			b.PackB(dst, pc, jc, kb, nb)
			for pn := 0; pn < npan; pn++ {
				for q := 0; q < kb; q++ {
					for j := 0; j < nr; j++ {
						var want float32
						if c := pn*nr + j; c < nb {
							want = at(pc+q, jc+c)
						}
						if got := dst[pn*nr*kb+q*nr+j]; math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("%s %v: block pc=%d jc=%d kb=%d nb=%d: panel %d row %d col %d = %v, want %v", name, s, pc, jc, kb, nb, pn, q, j, got, want)
						}
					}
				}
			}
		}
		for _, blk := range [][2]int{{0, 1}, {0, 1 << 30}, {3, 40}, {1, nr}, {nr + 5, 2*nr + 3}} {
			// col: k over taps, n over pixels.
			pc, kb := min(blk[0], rows-1), min(rows-min(blk[0], rows-1), 7)
			jc := min(blk[0]*3, pixels-1)
			nb := min(blk[1], pixels-jc)
			check("col", cp, func(q, j int) float32 { return col[q][j] }, pc, jc, kb, nb)
			// colᵀ: k over pixels, n over taps.
			pc, kb = min(blk[0]*5, pixels-1), min(pixels-min(blk[0]*5, pixels-1), 3*W+2)
			jc = min(blk[0], rows-1)
			nb = min(blk[1], rows-jc)
			check("colT", ct, func(q, j int) float32 { return col[j][q] }, pc, jc, kb, nb)
		}
	}
}
