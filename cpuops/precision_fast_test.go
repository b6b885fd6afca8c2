package cpuops

import (
	"math"
	"math/rand/v2"
	"testing"

	"stoke/gemm"
)

// TestConv2dFastBF16WithinBound: at bf16 on a CPU with AVX512_BF16 the
// conv's passes run on the VDPBF16PS kernels (gemm.FastBF16), which sum
// the same exactly-representable products of bf16-rounded inputs in
// another order (pairs first). Each output is within the float32 summation
// bound of the reference path (rounding while packing, then the fp32
// kernels): 2·(3k+3)·2⁻²⁴·Σ|terms|, twice gemm's stated bound for depth k
// (one for each side), where Σ|terms| is the same pass on |inputs|. And it
// is the fast path that ran: some output differs from the reference's bits.
func TestConv2dFastBF16WithinBound(t *testing.T) {
	if !gemm.HasBF16() {
		t.Skip("this CPU has no AVX512_BF16: bf16 runs the reference path (" + gemm.BF16Name() + ")")
	}
	defer gemm.SetFastBF16(gemm.SetFastBF16(true))
	for _, s := range []struct{ B, cin, H, W, cout, K, S, P int }{
		{2, 16, 9, 9, 24, 3, 1, 1},  // stride 1: BackwardData is the flipped-kernel forward
		{3, 8, 11, 10, 16, 3, 2, 1}, // stride 2: col2im
		{2, 32, 6, 6, 40, 1, 1, 0},  // a 1x1 conv, k = Cin
	} {
		rng := rand.New(rand.NewPCG(uint64(s.cin), 5))
		x, w := randF32(rng, s.B*s.cin*s.H*s.W), randF32(rng, s.cout*s.cin*s.K*s.K)
		gemm.RoundSlice(gemm.BF16, x)
		gemm.RoundSlice(gemm.BF16, w)
		mk := func(p gemm.Precision) *Conv2d {
			c, err := NewConv2d(s.B, s.cin, s.H, s.W, s.cout, s.K, s.S, s.P, 1)
			if err != nil {
				t.Fatal(err)
			}
			c.SetPrecision(p)
			return c
		}
		dy := randF32(rng, mk(gemm.FP32).OutLen())
		gemm.RoundSlice(gemm.BF16, dy)
		abs := func(v []float32) []float32 {
			a := make([]float32, len(v))
			for i, f := range v {
				a[i] = float32(math.Abs(float64(f)))
			}
			return a
		}
		type pass struct {
			name string
			n    int
			run  func(c *Conv2d, x, w, dy, out []float32)
		}
		c0 := mk(gemm.FP32)
		ho := c0.OutLen() / (s.B * s.cout)
		k := max(s.cin*s.K*s.K, s.cout*s.K*s.K, s.B*ho)
		for _, p := range []pass{
			{"Forward", c0.OutLen(), func(c *Conv2d, x, w, _, out []float32) { c.Forward(x, w, out) }},
			{"BackwardData", c0.InLen(), func(c *Conv2d, _, w, dy, out []float32) { c.BackwardData(w, dy, out) }},
			{"BackwardFilter", len(w), func(c *Conv2d, x, _, dy, out []float32) { c.BackwardFilter(x, dy, out) }},
		} {
			fast, ref, sum := make([]float32, p.n), make([]float32, p.n), make([]float32, p.n)
			p.run(mk(gemm.BF16), x, w, dy, fast)
			gemm.SetFastBF16(false)
			p.run(mk(gemm.BF16), x, w, dy, ref)
			gemm.SetFastBF16(true)
			p.run(mk(gemm.FP32), abs(x), abs(w), abs(dy), sum)
			differ := 0
			for i := range ref {
				bound := 2 * float64(3*k+3) * 0x1p-24 * float64(sum[i]) * (1 + 1e-5)
				if d := math.Abs(float64(fast[i]) - float64(ref[i])); d > bound {
					t.Fatalf("%+v %s [%d]: fast %v, reference %v: |diff| %.3g over the bound %.3g", s, p.name, i, fast[i], ref[i], d, bound)
				}
				if fast[i] != ref[i] {
					differ++
				}
			}
			if differ == 0 {
				t.Errorf("%+v %s: the fast path gave the reference's bits everywhere: did it run?", s, p.name)
			}
		}
	}
}
