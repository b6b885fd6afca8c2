package gemm

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestPackABlocksIsPackAPrec: PackABlocks then every PackABlock, in
// reverse order and each on a goroutine of its own, packs what PackAPrec
// packs, at every precision (on this machine's bf16 path, VDPBF16PS or its
// fallback), transposed or not, with one k block and several; and the
// product with it is PackAPrec's product to the bit.
func TestPackABlocksIsPackAPrec(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, prec := range []Precision{FP32, TF32, BF16} {
		for _, trans := range []bool{false, true} {
			for _, mk := range [][2]int{{7, 100}, {30, 700}, {64, 1200}} {
				m, k := mk[0], mk[1]
				a := make([]float32, m*k)
				for i := range a {
					a[i] = rng.Float32()*2 - 1
				}
				lda := k
				if trans {
					lda = m
				}
				var want, got PackedA
				PackAPrec(&want, prec, trans, m, k, a, lda)
				n := PackABlocks(&got, prec, trans, m, k, a, lda)
				if n < 1 || (k > 2*kc && n < 2) {
					t.Fatalf("%v %dx%d: %d blocks", prec, m, k, n)
				}
				var wg sync.WaitGroup
				for bi := n - 1; bi >= 0; bi-- {
					wg.Add(1)
					go func() { defer wg.Done(); PackABlock(&got, bi) }()
				}
				wg.Wait()
				const cols = 40
				b := make([]float32, k*cols)
				for i := range b {
					b[i] = rng.Float32()*2 - 1
				}
				cw, cg := make([]float32, m*cols), make([]float32, m*cols)
				SgemmPacked(&want, false, cols, 1, b, cols, 0, cw, cols)
				SgemmPacked(&got, false, cols, 1, b, cols, 0, cg, cols)
				if !slices.Equal(cw, cg) {
					t.Errorf("%v trans %v %dx%d: the product with the blocks' packing differs from PackAPrec's", prec, trans, m, k)
				}
				same := slices.Equal(want.data, got.data)
				if want.bf != nil {
					same = got.bf != nil && slices.Equal(want.bf.data, got.bf.data)
					if want.bf.fb != nil {
						same = same && got.bf.fb != nil && slices.Equal(want.bf.fb.data, got.bf.fb.data)
					}
				}
				if !same {
					t.Errorf("%v trans %v %dx%d: the blocks packed other values than PackAPrec", prec, trans, m, k)
				}
			}
		}
	}
}
