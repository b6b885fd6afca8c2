package cpuops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"stoke/gemm"
)

// At tf32 and bf16 every pass of the conv and the linear layer equals, bit
// for bit, the same pass at fp32 on its GEMM's inputs rounded by hand
// (Forward x and w, BackwardData dy and w, BackwardFilter x and dy); the
// fp32 passes are checked against float64 references in resnet_test.go and
// ops_test.go, so this chains the precisions to those references. And the
// rounding shows: each pass differs from fp32 on unrounded inputs.

func roundedF32(p gemm.Precision, s []float32) []float32 {
	r := slices.Clone(s)
	gemm.RoundSlice(p, r)
	return r
}

// precConv is the conv at p and its fp32 twin: a Conv2d of stride S and
// padding P, or with block a conv block (pooled when pool).
func precConv(t *testing.T, p gemm.Precision, block, pool bool, B, cin, H, W, cout, K, S, P int) (atP, fp32 *Conv2d) {
	t.Helper()
	mk := func() *Conv2d {
		var c *Conv2d
		var err error
		if block {
			c, err = NewConvBlock(B, cin, H, W, cout, K, pool)
		} else {
			c, err = NewConv2d(B, cin, H, W, cout, K, S, P, 1)
		}
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	atP, fp32 = mk(), mk()
	atP.SetPrecision(p)
	if atP.Precision() != p || fp32.Precision() != gemm.FP32 {
		t.Fatalf("SetPrecision(%v): conv at %v, a new conv at %v", p, atP.Precision(), fp32.Precision())
	}
	return atP, fp32
}

func sameAsRounded(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %v, want %v (the fp32 pass on rounded inputs)", what, i, got[i], want[i])
		}
	}
}

func differs(t *testing.T, what string, got, fp32 []float32) {
	t.Helper()
	if slices.Equal(got, fp32) {
		t.Errorf("%s: the same as fp32 on unrounded inputs: nothing was rounded", what)
	}
}

func TestConv2dPrecisionIsRoundedInputs(t *testing.T) {
	defer gemm.SetFastBF16(gemm.SetFastBF16(false)) // the reference: rounding while packing, bit for bit
	for _, p := range []gemm.Precision{gemm.TF32, gemm.BF16} {
		for _, s := range []struct{ B, cin, H, W, cout, K, S, P int }{
			{2, 3, 7, 6, 4, 3, 1, 1}, // stride 1: BackwardData is the flipped-kernel forward
			{3, 2, 7, 7, 3, 3, 2, 1}, // stride 2: col2im
			{9, 2, 4, 4, 2, 3, 2, 1}, // several samples per GEMM
			{2, 4, 6, 5, 3, 1, 2, 0},
		} {
			rng := rand.New(rand.NewPCG(uint64(s.B*100+s.K*10+s.S), 23))
			c, ref := precConv(t, p, false, false, s.B, s.cin, s.H, s.W, s.cout, s.K, s.S, s.P)
			x, w, dy := randF32(rng, c.InLen()), randF32(rng, s.cout*s.cin*s.K*s.K), randF32(rng, c.OutLen())
			rx, rw, rdy := roundedF32(p, x), roundedF32(p, w), roundedF32(p, dy)
			out := func(n int, f func([]float32)) []float32 { o := make([]float32, n); f(o); return o }
			name := func(pass string) string { return p.String() + " " + pass }

			y := out(c.OutLen(), func(o []float32) { c.Forward(x, w, o) })
			sameAsRounded(t, name("Forward"), y, out(c.OutLen(), func(o []float32) { ref.Forward(rx, rw, o) }))
			differs(t, name("Forward"), y, out(c.OutLen(), func(o []float32) { ref.Forward(x, w, o) }))

			dx := out(len(x), func(o []float32) { c.BackwardData(w, dy, o) })
			sameAsRounded(t, name("BackwardData"), dx, out(len(x), func(o []float32) { ref.BackwardData(rw, rdy, o) }))
			differs(t, name("BackwardData"), dx, out(len(x), func(o []float32) { ref.BackwardData(w, dy, o) }))

			dw := out(len(w), func(o []float32) { c.BackwardFilter(x, dy, o) })
			sameAsRounded(t, name("BackwardFilter"), dw, out(len(w), func(o []float32) { ref.BackwardFilter(rx, rdy, o) }))
			differs(t, name("BackwardFilter"), dw, out(len(w), func(o []float32) { ref.BackwardFilter(x, dy, o) }))
		}
	}
}

// TestConvBlockPrecisionIsRoundedInputs: the cnn's conv block likewise;
// its bias, ReLU and pool stay fp32, and so does the bias gradient (the
// fp32 one of the unrounded dy).
func TestConvBlockPrecisionIsRoundedInputs(t *testing.T) {
	defer gemm.SetFastBF16(gemm.SetFastBF16(false)) // the reference: rounding while packing, bit for bit
	const B, cin, H, cout = 3, 3, 8, 4
	for _, p := range []gemm.Precision{gemm.TF32, gemm.BF16} {
		for _, pool := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(p), 24))
			c, ref := precConv(t, p, true, pool, B, cin, H, H, cout, 3, 1, 1)
			x, w, b := randF32(rng, c.InLen()), randF32(rng, cout*cin*9), randF32(rng, cout)
			rx, rw := roundedF32(p, x), roundedF32(p, w)
			y, want := make([]float32, c.OutLen()), make([]float32, c.OutLen())
			c.ForwardBlock(x, w, b, y)
			ref.ForwardBlock(rx, rw, b, want) // ref's pooling argmax then is c's
			sameAsRounded(t, p.String()+" ForwardBlock", y, want)

			dy := randF32(rng, c.OutLen())
			rdy := roundedF32(p, dy)
			dx, wantDx := make([]float32, len(x)), make([]float32, len(x))
			c.BackwardDataBlock(w, y, dy, dx)
			ref.BackwardDataBlock(rw, y, rdy, wantDx)
			sameAsRounded(t, p.String()+" BackwardDataBlock", dx, wantDx)

			dw, db := make([]float32, len(w)), make([]float32, cout)
			wantDw, fp32Db := make([]float32, len(w)), make([]float32, cout)
			c.BackwardFilterBlock(x, y, dy, dw, db)
			ref.BackwardFilterBlock(rx, y, rdy, wantDw, make([]float32, cout))
			sameAsRounded(t, p.String()+" BackwardFilterBlock dw", dw, wantDw)
			ref.BackwardFilterBlock(x, y, dy, make([]float32, len(w)), fp32Db)
			sameAsRounded(t, p.String()+" BackwardFilterBlock db (fp32)", db, fp32Db)
			differs(t, p.String()+" BackwardFilterBlock dw", dw, func() []float32 {
				o := make([]float32, len(w))
				ref.BackwardFilterBlock(x, y, dy, o, make([]float32, cout))
				return o
			}())
		}
	}
}

func TestLinearPrecisionIsRoundedInputs(t *testing.T) {
	defer gemm.SetFastBF16(gemm.SetFastBF16(false)) // the reference: rounding while packing, bit for bit
	const B, C, N = 7, 37, 11
	for _, p := range []gemm.Precision{gemm.TF32, gemm.BF16} {
		rng := rand.New(rand.NewPCG(uint64(p), 25))
		h, w, b, dz := randF32(rng, B*C), randF32(rng, C*N), randF32(rng, N), randF32(rng, B*N)
		rh, rw, rdz := roundedF32(p, h), roundedF32(p, w), roundedF32(p, dz)
		z, wantZ, fp32Z := make([]float32, B*N), make([]float32, B*N), make([]float32, B*N)
		LinearForwardPrec(p, B, C, N, h, w, b, z)
		LinearForward(B, C, N, rh, rw, b, wantZ)
		LinearForward(B, C, N, h, w, b, fp32Z)
		sameAsRounded(t, p.String()+" LinearForward", z, wantZ)
		differs(t, p.String()+" LinearForward", z, fp32Z)

		dh, wantDh, fp32Dh := make([]float32, B*C), make([]float32, B*C), make([]float32, B*C)
		LinearBackwardDataPrec(p, B, C, N, w, dz, dh)
		LinearBackwardData(B, C, N, rw, rdz, wantDh)
		LinearBackwardData(B, C, N, w, dz, fp32Dh)
		sameAsRounded(t, p.String()+" LinearBackwardData", dh, wantDh)
		differs(t, p.String()+" LinearBackwardData", dh, fp32Dh)

		dw, wantDw, fp32Dw := make([]float32, C*N), make([]float32, C*N), make([]float32, C*N)
		LinearBackwardWeightPrec(p, B, C, N, h, dz, dw)
		LinearBackwardWeight(B, C, N, rh, rdz, wantDw)
		LinearBackwardWeight(B, C, N, h, dz, fp32Dw)
		sameAsRounded(t, p.String()+" LinearBackwardWeight", dw, wantDw)
		differs(t, p.String()+" LinearBackwardWeight", dw, fp32Dw)
	}
}
