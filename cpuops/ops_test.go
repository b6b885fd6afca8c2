package cpuops

import (
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
)

// Every op is checked against a float64 reference written from the layer's
// definition (PyTorch's Conv2d + ReLU, MaxPool2d(2), AdaptiveAvgPool2d(1),
// Linear, CrossEntropyLoss), and its gradients against central differences
// of that reference: loss = Σ r ⊙ op(inputs) for a fixed random r, so the
// gradient the op is given is r.

func randF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// checkClose fails when got and want differ by more than float32 rounding
// over sums of a few hundred terms allows.
func checkClose(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5+1e-4*math.Abs(want[i]) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %.7g, want %.7g", what, i, got[i], want[i])
		}
	}
}

// finiteDiff returns ∂loss/∂v by central differences, v perturbed in place.
func finiteDiff(v []float64, loss func() float64) []float64 {
	const eps = 1e-6
	g := make([]float64, len(v))
	for i := range v {
		orig := v[i]
		v[i] = orig + eps
		lp := loss()
		v[i] = orig - eps
		lm := loss()
		v[i] = orig
		g[i] = (lp - lm) / (2 * eps)
	}
	return g
}

func refConvReLU(B, cin, H, W, cout, K int, x, w, b []float64) []float64 {
	p := K / 2
	y := make([]float64, B*cout*H*W)
	for n := 0; n < B; n++ {
		for co := 0; co < cout; co++ {
			for oy := 0; oy < H; oy++ {
				for ox := 0; ox < W; ox++ {
					s := b[co]
					for ci := 0; ci < cin; ci++ {
						for ky := 0; ky < K; ky++ {
							for kx := 0; kx < K; kx++ {
								iy, ix := oy+ky-p, ox+kx-p
								if iy >= 0 && ix >= 0 && iy < H && ix < W {
									s += w[((co*cin+ci)*K+ky)*K+kx] * x[((n*cin+ci)*H+iy)*W+ix]
								}
							}
						}
					}
					y[((n*cout+co)*H+oy)*W+ox] = math.Max(s, 0)
				}
			}
		}
	}
	return y
}

func TestConvMatchesReference(t *testing.T) {
	for _, s := range []struct{ B, cin, H, W, cout, K int }{
		{3, 2, 5, 4, 3, 3}, {2, 3, 3, 3, 2, 1}, {2, 2, 3, 2, 2, 5}, {9, 1, 4, 4, 2, 3},
	} {
		rng := rand.New(rand.NewPCG(uint64(s.B*100+s.K), 1))
		c, err := NewConvBlock(s.B, s.cin, s.H, s.W, s.cout, s.K, false)
		if err != nil {
			t.Fatal(err)
		}
		x := randF32(rng, s.B*s.cin*s.H*s.W)
		w := randF32(rng, s.cout*s.cin*s.K*s.K)
		b := randF32(rng, s.cout)
		r := randF32(rng, s.B*s.cout*s.H*s.W)
		y := make([]float32, len(r))
		c.ForwardBlock(x, w, b, y)
		x64, w64, b64 := f64(x), f64(w), f64(b)
		checkClose(t, "conv y", y, refConvReLU(s.B, s.cin, s.H, s.W, s.cout, s.K, x64, w64, b64))

		dx := make([]float32, len(x))
		dw := make([]float32, len(w))
		db := make([]float32, len(b))
		c.BackwardDataBlock(w, y, r, dx)
		c.BackwardFilterBlock(x, y, r, dw, db)
		r64 := f64(r)
		loss := func() float64 {
			var l float64
			for i, v := range refConvReLU(s.B, s.cin, s.H, s.W, s.cout, s.K, x64, w64, b64) {
				l += r64[i] * v
			}
			return l
		}
		checkClose(t, "conv dx", dx, finiteDiff(x64, loss))
		checkClose(t, "conv dw", dw, finiteDiff(w64, loss))
		checkClose(t, "conv db", db, finiteDiff(b64, loss))
	}
}

// TestConvSameOnAnyCoreCount: the filter gradient is summed in a fixed
// order, so one core and two give the same bits (an exact resume on another
// machine depends on it).
func TestConvSameOnAnyCoreCount(t *testing.T) {
	for _, pool := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(5, 5))
		const B, cin, H, cout = 11, 3, 6, 4
		c, _ := NewConvBlock(B, cin, H, H, cout, 3, pool)
		x, w, b := randF32(rng, B*cin*H*H), randF32(rng, cout*cin*9), randF32(rng, cout)
		dy := randF32(rng, c.OutLen())
		run := func(procs int) [][]float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			y, dx := make([]float32, len(dy)), make([]float32, len(x))
			dw, db := make([]float32, len(w)), make([]float32, cout)
			c.ForwardBlock(x, w, b, y)
			c.BackwardDataBlock(w, y, dy, dx)
			c.BackwardFilterBlock(x, y, dy, dw, db)
			return [][]float32{y, dx, dw, db}
		}
		one, two := run(1), run(2)
		for i := range one {
			if !slices.Equal(one[i], two[i]) {
				t.Errorf("pool %v: output %d differs between 1 and 2 cores", pool, i)
			}
		}
	}
}

func refMaxPool(B, C, H, W int, x []float64) []float64 {
	oh, ow := H/2, W/2
	y := make([]float64, B*C*oh*ow)
	for p := 0; p < B*C; p++ {
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				m := math.Inf(-1)
				for d := 0; d < 4; d++ {
					m = math.Max(m, x[(p*H+2*oy+d/2)*W+2*ox+d%2])
				}
				y[(p*oh+oy)*ow+ox] = m
			}
		}
	}
	return y
}

func TestMaxPoolMatchesReference(t *testing.T) {
	for _, s := range [][4]int{{2, 3, 4, 4}, {1, 2, 5, 7}, {3, 1, 2, 3}} {
		B, C, H, W := s[0], s[1], s[2], s[3]
		rng := rand.New(rand.NewPCG(uint64(H*W), 2))
		p, err := NewMaxPool(B, C, H, W, 2, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		x := randF32(rng, B*C*H*W)
		y := make([]float32, p.OutLen())
		p.Forward(x, y)
		x64 := f64(x)
		checkClose(t, "maxpool y", y, refMaxPool(B, C, H, W, x64))
		r := randF32(rng, len(y))
		dx := make([]float32, len(x))
		for i := range dx {
			dx[i] = float32(math.NaN()) // Backward must write every element
		}
		p.Backward(r, dx)
		r64 := f64(r)
		checkClose(t, "maxpool dx", dx, finiteDiff(x64, func() float64 {
			var l float64
			for i, v := range refMaxPool(B, C, H, W, x64) {
				l += r64[i] * v
			}
			return l
		}))
	}
	// Ties go to the first input, as in PyTorch.
	p, _ := NewMaxPool(1, 1, 2, 2, 2, 2, 0)
	y, dx := make([]float32, 1), make([]float32, 4)
	p.Forward([]float32{1, 3, 3, 2}, y)
	p.Backward([]float32{1}, dx)
	if !slices.Equal(dx, []float32{0, 1, 0, 0}) {
		t.Errorf("tie: gradient went to %v, want the first maximum", dx)
	}
}

func TestAvgPoolMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const planes, n = 6, 5
	x := randF32(rng, planes*n)
	y := make([]float32, planes)
	AvgPoolForward(x, y)
	x64 := f64(x)
	ref := func() []float64 {
		out := make([]float64, planes)
		for i := range out {
			for _, v := range x64[i*n : (i+1)*n] {
				out[i] += v / n
			}
		}
		return out
	}
	checkClose(t, "avgpool y", y, ref())
	r := randF32(rng, planes)
	dx := make([]float32, len(x))
	AvgPoolBackward(r, dx)
	r64 := f64(r)
	checkClose(t, "avgpool dx", dx, finiteDiff(x64, func() float64 { return dotF(r64, ref()) }))
}

func dotF(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestLinearMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const B, C, N = 3, 5, 4
	h, w, b := randF32(rng, B*C), randF32(rng, C*N), randF32(rng, N)
	h64, w64, b64 := f64(h), f64(w), f64(b)
	ref := func() []float64 {
		z := make([]float64, B*N)
		for i := 0; i < B; i++ {
			for j := 0; j < N; j++ {
				z[i*N+j] = b64[j]
				for k := 0; k < C; k++ {
					z[i*N+j] += h64[i*C+k] * w64[k*N+j]
				}
			}
		}
		return z
	}
	z := make([]float32, B*N)
	LinearForward(B, C, N, h, w, b, z)
	checkClose(t, "linear z", z, ref())
	r := randF32(rng, B*N)
	r64 := f64(r)
	loss := func() float64 { return dotF(r64, ref()) }
	dh, dw, db := make([]float32, B*C), make([]float32, C*N), make([]float32, N)
	LinearBackwardData(B, C, N, w, r, dh)
	LinearBackwardWeight(B, C, N, h, r, dw)
	LinearBackwardBias(B, N, r, db)
	checkClose(t, "linear dh", dh, finiteDiff(h64, loss))
	checkClose(t, "linear dw", dw, finiteDiff(w64, loss))
	checkClose(t, "linear db", db, finiteDiff(b64, loss))
}

func TestXentMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	const B, N = 4, 5
	z := randF32(rng, B*N)
	// Rows 0 and 1 valid (weight 1/2 each), rows 2, 3 padding; row 3's
	// logits are non-finite and must not matter.
	tgt := make([]float32, B*N)
	tgt[0*N+2], tgt[1*N+4] = 0.5, 0.5
	z[3*N+1] = float32(math.Inf(1))
	z64 := f64(z)
	ref := func() float64 {
		var l float64
		for i, y := range []int{2, 4} {
			row := z64[i*N : (i+1)*N]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, v)
			}
			var s float64
			for _, v := range row {
				s += math.Exp(v - m)
			}
			l += 0.5 * (m + math.Log(s) - row[y])
		}
		return l
	}
	if got, want := XentForward(B, N, z, tgt), ref(); math.Abs(got-want) > 1e-6 {
		t.Errorf("loss %v, want %v", got, want)
	}
	dz := make([]float32, B*N)
	XentBackward(B, N, z, tgt, 2, dz)
	fd := finiteDiff(z64[:2*N], ref)
	for i := range fd {
		fd[i] *= 2
	}
	checkClose(t, "xent dz", dz[:2*N], fd)
	for _, v := range dz[2*N:] {
		if v != 0 {
			t.Fatalf("padded rows got gradient %v", dz[2*N:])
		}
	}
}

// TestStepAllocatesNothing: the ops reuse their scratch and workers.
func TestStepAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	const B, cin, H, cout = 4, 3, 8, 4
	c, _ := NewConvBlock(B, cin, H, H, cout, 3, false)
	cp, _ := NewConvBlock(B, cin, H, H, cout, 3, true)
	p, _ := NewMaxPool(B, cout, H, H, 2, 2, 0)
	x, w, b := randF32(rng, B*cin*H*H), randF32(rng, cout*cin*9), randF32(rng, cout)
	y, dy, dx := make([]float32, B*cout*H*H), randF32(rng, B*cout*H*H), make([]float32, len(x))
	dw, db, py := make([]float32, len(w)), make([]float32, cout), make([]float32, p.OutLen())
	step := func() {
		c.ForwardBlock(x, w, b, y)
		p.Forward(y, py)
		p.Backward(py, dy)
		c.BackwardDataBlock(w, y, dy, dx)
		c.BackwardFilterBlock(x, y, dy, dw, db)
		cp.ForwardBlock(x, w, b, py)
		cp.BackwardDataBlock(w, py, py, dx)
		cp.BackwardFilterBlock(x, py, py, dw, db)
	}
	step()
	// A collection empties the GEMM's scratch pool by design; what must not
	// happen is an allocation per step while it is warm.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if n := testing.AllocsPerRun(5, step); n != 0 {
		t.Errorf("a conv + pool step allocated %v times", n)
	}
}

// TestConvWithPoolMatchesReference: the fused pool against the float64
// reference conv + ReLU + max-pool, forward and gradients, odd sizes too.
func TestConvWithPoolMatchesReference(t *testing.T) {
	for _, s := range []struct{ B, cin, H, W, cout, K int }{
		{2, 2, 4, 4, 3, 3}, {3, 1, 5, 3, 2, 3}, {9, 2, 2, 2, 2, 1},
	} {
		rng := rand.New(rand.NewPCG(uint64(s.B*10+s.H), 3))
		c, err := NewConvBlock(s.B, s.cin, s.H, s.W, s.cout, s.K, true)
		if err != nil {
			t.Fatal(err)
		}
		x := randF32(rng, s.B*s.cin*s.H*s.W)
		w := randF32(rng, s.cout*s.cin*s.K*s.K)
		b := randF32(rng, s.cout)
		b[0] = -10 // a channel that is all zeros after the ReLU: ties in every pool window
		y := make([]float32, c.OutLen())
		c.ForwardBlock(x, w, b, y)
		x64, w64, b64 := f64(x), f64(w), f64(b)
		ref := func() []float64 {
			return refMaxPool(s.B, s.cout, s.H, s.W, refConvReLU(s.B, s.cin, s.H, s.W, s.cout, s.K, x64, w64, b64))
		}
		checkClose(t, "conv+pool y", y, ref())
		r := randF32(rng, len(y))
		dx, dw, db := make([]float32, len(x)), make([]float32, len(w)), make([]float32, len(b))
		c.BackwardDataBlock(w, y, r, dx)
		c.BackwardFilterBlock(x, y, r, dw, db)
		r64 := f64(r)
		loss := func() float64 {
			var l float64
			for i, v := range ref() {
				l += r64[i] * v
			}
			return l
		}
		checkClose(t, "conv+pool dx", dx, finiteDiff(x64, loss))
		checkClose(t, "conv+pool dw", dw, finiteDiff(w64, loss))
		checkClose(t, "conv+pool db", db, finiteDiff(b64, loss))
	}
}

// TestMaxPoolWindowsMatchBruteForce: every output of MaxPool over shapes
// with and without padding, strides below, at and above K, planes narrower
// than a window, is the first maximum of its window's in-plane taps in
// (row, column) order, by orderKey (NaN the largest, -0 below +0): the
// argmax, the value and so the gradient's route. The inputs take few
// values, so that ties are common, with NaNs and both zeros among them.
func TestMaxPoolWindowsMatchBruteForce(t *testing.T) {
	levels := []float32{-1, float32(math.Copysign(0, -1)), 0, 0.5, 2, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	avx2 := useAVX2
	defer func() { useAVX2 = avx2 }()
	for _, c := range [][8]int{ // B, C, H, W, K, stride, pad, and 1 for the AVX2 loops where the CPU has them
		{2, 3, 11, 11, 3, 2, 1, 1}, {1, 2, 9, 8, 3, 2, 1, 1}, {1, 1, 7, 5, 3, 1, 1, 1}, {2, 2, 6, 9, 2, 2, 0, 1},
		{1, 2, 10, 10, 5, 3, 2, 1}, {1, 1, 2, 3, 3, 2, 1, 1}, {1, 1, 8, 8, 3, 4, 0, 1}, {1, 2, 13, 12, 4, 2, 2, 1},
		// the ResNet stem's 3x3 stride 2 on rows of 16 or more outputs (AVX2, 8 at a time, the last 8
		// overlapping when their count is not a multiple of 8), even and odd widths, and the Go loop
		{2, 3, 9, 40, 3, 2, 1, 1}, {1, 2, 7, 35, 3, 2, 1, 1}, {1, 2, 6, 34, 3, 2, 1, 1}, {1, 1, 5, 112, 3, 2, 1, 1},
		{1, 1, 4, 17, 3, 2, 1, 1}, {1, 1, 3, 18, 3, 2, 1, 1}, {1, 2, 9, 40, 3, 2, 1, 0}, {1, 1, 5, 112, 3, 2, 1, 0},
	} {
		s := c[:7]
		useAVX2 = c[7] == 1 && avx2
		B, C, H, W, K, S, P := s[0], s[1], s[2], s[3], s[4], s[5], s[6]
		p, err := NewMaxPool(B, C, H, W, K, S, P)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(H*W+K), uint64(S+P)))
		x := make([]float32, p.InLen())
		for i := range x {
			x[i] = levels[rng.IntN(len(levels))]
		}
		y := make([]float32, p.OutLen())
		p.Forward(x, y)
		for q := 0; q < B*C; q++ {
			plane := x[q*H*W : (q+1)*H*W]
			for oy := 0; oy < p.Ho; oy++ {
				for ox := 0; ox < p.Wo; ox++ {
					best := -1
					for ky := 0; ky < K; ky++ {
						for kx := 0; kx < K; kx++ {
							iy, ix := oy*S-P+ky, ox*S-P+kx
							if iy < 0 || iy >= H || ix < 0 || ix >= W {
								continue
							}
							if j := iy*W + ix; best < 0 || orderKey(plane[j]) > orderKey(plane[best]) {
								best = j
							}
						}
					}
					o := (q*p.Ho+oy)*p.Wo + ox
					if int(p.arg[o]) != best || math.Float32bits(y[o]) != math.Float32bits(plane[best]) {
						t.Fatalf("%v (AVX2 %v) plane %d output (%d,%d): argmax %d value %v, want %d %v", s, useAVX2, q, oy, ox, p.arg[o], y[o], best, plane[best])
					}
				}
			}
		}
	}
}
