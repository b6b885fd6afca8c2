package cpuops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// The ResNet layers against float64 references written from PyTorch's
// definitions (Conv2d with stride and padding, BatchNorm2d in training and
// evaluation, MaxPool2d(3, 2, 1), the residual ReLU(a + b)), gradients
// against central differences of the references.

func refConv2d(B, cin, H, W, cout, K, S, P int, x, w []float64) (y []float64, ho, wo int) {
	ho, wo = (H+2*P-K)/S+1, (W+2*P-K)/S+1
	y = make([]float64, B*cout*ho*wo)
	for n := 0; n < B; n++ {
		for co := 0; co < cout; co++ {
			for oy := 0; oy < ho; oy++ {
				for ox := 0; ox < wo; ox++ {
					var s float64
					for ci := 0; ci < cin; ci++ {
						for ky := 0; ky < K; ky++ {
							for kx := 0; kx < K; kx++ {
								iy, ix := oy*S-P+ky, ox*S-P+kx
								if iy >= 0 && ix >= 0 && iy < H && ix < W {
									s += w[((co*cin+ci)*K+ky)*K+kx] * x[((n*cin+ci)*H+iy)*W+ix]
								}
							}
						}
					}
					y[((n*cout+co)*ho+oy)*wo+ox] = s
				}
			}
		}
	}
	return y, ho, wo
}

func TestConv2dMatchesReference(t *testing.T) {
	for _, s := range []struct{ B, cin, H, W, cout, K, S, P int }{
		{2, 3, 7, 6, 4, 3, 1, 1}, {3, 2, 7, 7, 3, 3, 2, 1}, {2, 4, 6, 5, 3, 1, 2, 0},
		{2, 3, 5, 5, 2, 1, 1, 0}, {2, 2, 11, 9, 3, 7, 2, 3}, {9, 2, 4, 4, 2, 3, 2, 1},
		{2, 2, 5, 12, 3, 3, 1, 1}, {3, 2, 8, 8, 2, 3, 1, 1}, // rows of 8 and more: transposed panels
	} {
		rng := rand.New(rand.NewPCG(uint64(s.B*100+s.K*10+s.S), 2))
		c, err := NewConv2d(s.B, s.cin, s.H, s.W, s.cout, s.K, s.S, s.P, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, w := randF32(rng, c.InLen()), randF32(rng, s.cout*s.cin*s.K*s.K)
		r := randF32(rng, c.OutLen())
		y := make([]float32, c.OutLen())
		c.Forward(x, w, y)
		x64, w64, r64 := f64(x), f64(w), f64(r)
		want, ho, wo := refConv2d(s.B, s.cin, s.H, s.W, s.cout, s.K, s.S, s.P, x64, w64)
		if ho != c.Ho || wo != c.Wo {
			t.Fatalf("%+v: output %dx%d, want %dx%d", s, c.Ho, c.Wo, ho, wo)
		}
		checkClose(t, "conv2d y", y, want)
		dx, dw := make([]float32, len(x)), make([]float32, len(w))
		c.BackwardData(w, r, dx)
		c.BackwardFilter(x, r, dw)
		loss := func() float64 {
			y, _, _ := refConv2d(s.B, s.cin, s.H, s.W, s.cout, s.K, s.S, s.P, x64, w64)
			var l float64
			for i, v := range y {
				l += r64[i] * v
			}
			return l
		}
		checkClose(t, "conv2d dx", dx, finiteDiff(x64, loss))
		checkClose(t, "conv2d dw", dw, finiteDiff(w64, loss))
	}
}

func TestConv2dSameOnAnyCoreCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	c, _ := NewConv2d(11, 3, 8, 8, 4, 3, 2, 1, 1)
	x, w, dy := randF32(rng, c.InLen()), randF32(rng, 4*3*9), randF32(rng, c.OutLen())
	run := func(procs int) [][]float32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		y, dx, dw := make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
		c.Forward(x, w, y)
		c.BackwardData(w, dy, dx)
		c.BackwardFilter(x, dy, dw)
		return [][]float32{y, dx, dw}
	}
	one, two := run(1), run(2)
	for i := range one {
		if !slices.Equal(one[i], two[i]) {
			t.Fatalf("output %d differs between 1 and 2 cores", i)
		}
	}
}

// refBN is BatchNorm2d's forward in training (batch statistics of the first
// n samples) or evaluation (running statistics), with an optional ReLU.
func refBN(B, C, HW, n int, x, gamma, beta, rm, rv []float64, training, relu bool) (y, mean, unbiased []float64) {
	y = make([]float64, B*C*HW)
	mean, unbiased = make([]float64, C), make([]float64, C)
	for c := 0; c < C; c++ {
		var m, v float64
		cnt := float64(n * HW)
		if training {
			for i := 0; i < n; i++ {
				for j := 0; j < HW; j++ {
					m += x[(i*C+c)*HW+j]
				}
			}
			m /= cnt
			for i := 0; i < n; i++ {
				for j := 0; j < HW; j++ {
					d := x[(i*C+c)*HW+j] - m
					v += d * d
				}
			}
			unbiased[c] = v / (cnt - 1)
			v /= cnt
		} else {
			m, v = rm[c], rv[c]
		}
		mean[c] = m
		for i := 0; i < n; i++ {
			for j := 0; j < HW; j++ {
				k := (i*C+c)*HW + j
				y[k] = (x[k]-m)/math.Sqrt(v+1e-5)*gamma[c] + beta[c]
				if relu {
					y[k] = math.Max(y[k], 0)
				}
			}
		}
	}
	return y, mean, unbiased
}

func TestBatchNormMatchesReference(t *testing.T) {
	for _, s := range []struct {
		B, C, HW, n int
		relu        bool
	}{{4, 3, 5, 4, false}, {4, 3, 5, 3, true}, {2, 5, 1, 2, false}, {6, 2, 9, 4, true}, {3, 2, 67, 3, true}, {2, 2, 64, 2, false}} {
		rng := rand.New(rand.NewPCG(uint64(s.B*10+s.n), 3))
		bn, err := NewBatchNorm(s.B, s.C, s.HW, s.relu)
		if err != nil {
			t.Fatal(err)
		}
		x, gamma, beta := randF32(rng, bn.Len()), randF32(rng, s.C), randF32(rng, s.C)
		for i := range x {
			x[i] = 3*x[i] + 1.5 // statistics far from (0, 1)
		}
		rm, rv := randF32(rng, s.C), randF32(rng, s.C)
		for i := range rv {
			rv[i] = float32(math.Abs(float64(rv[i]))) + 0.5
		}
		rm0, rv0 := f64(rm), f64(rv)
		x64, g64, b64 := f64(x), f64(gamma), f64(beta)

		// Evaluation: the running statistics, unchanged.
		y := make([]float32, bn.Len())
		bn.Forward(x, gamma, beta, y, rm, rv, s.n, false)
		want, _, _ := refBN(s.B, s.C, s.HW, s.n, x64, g64, b64, rm0, rv0, false, s.relu)
		checkClose(t, "bn eval y", y, want)
		checkClose(t, "bn eval running_mean", rm, rm0)

		// Training: batch statistics; running ones move by momentum 0.1
		// towards the batch mean and the unbiased batch variance.
		for i := range y {
			y[i] = float32(math.NaN()) // every value must be written
		}
		bn.Forward(x, gamma, beta, y, rm, rv, s.n, true)
		want, mean, unb := refBN(s.B, s.C, s.HW, s.n, x64, g64, b64, rm0, rv0, true, s.relu)
		checkClose(t, "bn train y", y, want)
		wantRM, wantRV := make([]float64, s.C), make([]float64, s.C)
		for c := range wantRM {
			wantRM[c] = 0.9*rm0[c] + 0.1*mean[c]
			wantRV[c] = 0.9*rv0[c] + 0.1*unb[c]
		}
		checkClose(t, "bn running_mean", rm, wantRM)
		checkClose(t, "bn running_var", rv, wantRV)

		r := randF32(rng, bn.Len())
		r64 := f64(r)
		dx, dg, db := make([]float32, len(x)), make([]float32, s.C), make([]float32, s.C)
		bn.Backward(x, gamma, y, r, dx, dg, db)
		loss := func() float64 {
			y, _, _ := refBN(s.B, s.C, s.HW, s.n, x64, g64, b64, rm0, rv0, true, s.relu)
			var l float64
			for i, v := range y {
				l += r64[i] * v
			}
			return l
		}
		checkClose(t, "bn dx", dx, finiteDiff(x64, loss))
		checkClose(t, "bn dgamma", dg, finiteDiff(g64, loss))
		checkClose(t, "bn dbeta", db, finiteDiff(b64, loss))
	}
}

func refMaxPoolK(B, C, H, W, K, S, P int, x []float64) []float64 {
	ho, wo := (H+2*P-K)/S+1, (W+2*P-K)/S+1
	y := make([]float64, B*C*ho*wo)
	for p := 0; p < B*C; p++ {
		for oy := 0; oy < ho; oy++ {
			for ox := 0; ox < wo; ox++ {
				m := math.Inf(-1)
				for ky := 0; ky < K; ky++ {
					for kx := 0; kx < K; kx++ {
						iy, ix := oy*S-P+ky, ox*S-P+kx
						if iy >= 0 && ix >= 0 && iy < H && ix < W {
							m = math.Max(m, x[(p*H+iy)*W+ix])
						}
					}
				}
				y[(p*ho+oy)*wo+ox] = m
			}
		}
	}
	return y
}

func TestMaxPoolKMatchesReference(t *testing.T) {
	for _, s := range []struct{ B, C, H, W, K, S, P int }{
		{2, 3, 8, 8, 3, 2, 1}, {2, 2, 7, 5, 3, 2, 1}, {1, 2, 6, 6, 2, 2, 0}, {2, 1, 5, 5, 3, 1, 1},
	} {
		rng := rand.New(rand.NewPCG(uint64(s.H*10+s.W), 4))
		p, err := NewMaxPool(s.B, s.C, s.H, s.W, s.K, s.S, s.P)
		if err != nil {
			t.Fatal(err)
		}
		// Distinct values, so that finite differences do not cross a tie.
		x := make([]float32, p.InLen())
		for i, k := range rng.Perm(len(x)) {
			x[i] = float32(k)/8 - 3
		}
		y := make([]float32, p.OutLen())
		p.Forward(x, y)
		x64 := f64(x)
		checkClose(t, "maxpool y", y, refMaxPoolK(s.B, s.C, s.H, s.W, s.K, s.S, s.P, x64))
		r := randF32(rng, p.OutLen())
		r64 := f64(r)
		dx := make([]float32, len(x))
		p.Backward(r, dx)
		checkClose(t, "maxpool dx", dx, finiteDiff(x64, func() float64 {
			var l float64
			for i, v := range refMaxPoolK(s.B, s.C, s.H, s.W, s.K, s.S, s.P, x64) {
				l += r64[i] * v
			}
			return l
		}))
	}
}

func TestAddReLU(t *testing.T) {
	a := []float32{1, -2, 0.5, -0.25}
	b := []float32{-0.5, 1, 0.5, 0.25}
	y := make([]float32, 4)
	AddReLU(a, b, y)
	if want := []float32{0.5, 0, 1, 0}; !slices.Equal(y, want) {
		t.Fatalf("AddReLU = %v, want %v", y, want)
	}
	d := make([]float32, 4)
	ReLUBackward(y, []float32{1, 2, 3, 4}, d)
	if want := []float32{1, 0, 3, 0}; !slices.Equal(d, want) {
		t.Fatalf("ReLUBackward = %v, want %v", d, want)
	}
}

// TestConv2dGroupsMatchOneSample: Conv2d multiplies several samples per
// GEMM (partial last groups included); its output and input gradient are
// the per-sample convolutions' bit for bit, and its filter gradient is
// their sum to float32 rounding.
func TestConv2dGroupsMatchOneSample(t *testing.T) {
	for _, s := range []struct{ B, cin, H, W, cout, K, S, P int }{
		{37, 3, 5, 5, 4, 3, 1, 1},   // 25 pixels: 11 samples per group, 4 groups
		{37, 2, 20, 20, 3, 3, 1, 1}, // 400 pixels: one sample per group; filter chunks of 3 and 2
		{19, 3, 8, 8, 5, 3, 1, 1},   // 8-wide rows: panels of two runs
		{21, 4, 9, 7, 3, 3, 2, 1},   // stride 2, odd sizes
		{23, 5, 6, 6, 7, 1, 2, 0},   // 1x1 stride 2, no padding
		{13, 2, 4, 4, 3, 1, 1, 0},   // 1x1 stride 1
		{9, 2, 7, 7, 2, 5, 1, 2},
	} {
		rng := rand.New(rand.NewPCG(uint64(s.B*10+s.H), 9))
		c, err := NewConv2d(s.B, s.cin, s.H, s.W, s.cout, s.K, s.S, s.P, 1)
		if err != nil {
			t.Fatal(err)
		}
		one, err := NewConv2d(1, s.cin, s.H, s.W, s.cout, s.K, s.S, s.P, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, w, dy := randF32(rng, c.InLen()), randF32(rng, s.cout*s.cin*s.K*s.K), randF32(rng, c.OutLen())
		y, dx, dw := make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
		for i := range y {
			y[i] = float32(math.NaN()) // every value must be written
		}
		c.Forward(x, w, y)
		c.BackwardData(w, dy, dx)
		c.BackwardFilter(x, dy, dw)
		in, out := one.InLen(), one.OutLen()
		y1, dx1, dw1 := make([]float32, out), make([]float32, in), make([]float32, len(w))
		sum := make([]float64, len(w))
		for i := 0; i < s.B; i++ {
			xi, dyi := x[i*in:(i+1)*in], dy[i*out:(i+1)*out]
			one.Forward(xi, w, y1)
			one.BackwardData(w, dyi, dx1)
			one.BackwardFilter(xi, dyi, dw1)
			if !slices.Equal(y1, y[i*out:(i+1)*out]) || !slices.Equal(dx1, dx[i*in:(i+1)*in]) {
				t.Fatalf("%+v: sample %d: y or dx differs from the sample alone", s, i)
			}
			for j, v := range dw1 {
				sum[j] += float64(v)
			}
		}
		checkClose(t, "conv2d dw of the batch", dw, sum)
	}
}

// TestConv2dSharedScratch: convs of different sizes sharing their scratch
// (Share: the filter-gradient partial sums, the packed and flipped
// weights, the workers' buffers), called in turn, give every pass's output
// they give alone, bit for bit; a sharing conv keeps none of its own, and
// the shared partial sums are the largest conv's. The shapes take each
// BackwardData path: the flipped-kernel forward (3x3 stride 1), the 1x1's
// transposed pack (stride 1, with and without channel groups) and col2im
// (stride 2).
func TestConv2dSharedScratch(t *testing.T) {
	shapes := []struct{ B, cin, H, cout, K, S, P, G int }{
		{9, 3, 32, 4, 3, 1, 1, 1}, {9, 4, 8, 6, 3, 2, 1, 1}, {9, 6, 16, 6, 1, 1, 0, 1}, {5, 8, 6, 12, 1, 1, 0, 4}, {4, 8, 6, 8, 3, 1, 1, 2}}
	rng := rand.New(rand.NewPCG(12, 12))
	var shared Conv2dShared
	var own, shr []*Conv2d
	var xs, ws, dys [][]float32
	largest := 0
	for _, s := range shapes {
		a, err := NewConv2d(s.B, s.cin, s.H, s.H, s.cout, s.K, s.S, s.P, s.G)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewConv2d(s.B, s.cin, s.H, s.H, s.cout, s.K, s.S, s.P, s.G)
		b.Share(&shared)
		own, shr = append(own, a), append(shr, b)
		xs, dys = append(xs, randF32(rng, a.InLen())), append(dys, randF32(rng, a.OutLen()))
		ws = append(ws, randF32(rng, s.cout*a.gkk()))
		largest = max(largest, a.groups*s.cout*a.gkk())
	}
	for round := 0; round < 2; round++ {
		for i, c := range shr {
			o := own[i]
			x, w, dy := xs[i], ws[i], dys[i]
			for _, pass := range []struct {
				name string
				n    int
				run  func(c *Conv2d, out []float32)
			}{
				{"Forward", o.OutLen(), func(c *Conv2d, out []float32) { c.Forward(x, w, out) }},
				{"BackwardData", o.InLen(), func(c *Conv2d, out []float32) { c.BackwardData(w, dy, out) }},
				{"BackwardFilter", len(w), func(c *Conv2d, out []float32) { c.BackwardFilter(x, dy, out) }},
			} {
				want, got := make([]float32, pass.n), make([]float32, pass.n)
				pass.run(o, want)
				pass.run(c, got)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d conv %d %+v: %s with shared scratch differs from the conv alone", round, i, shapes[i], pass.name)
				}
			}
		}
	}
	for i, c := range shr {
		if cap(c.ownDW) != 0 || len(c.ownPack) != 0 || len(c.ownScr) != 0 || cap(c.ownFlip) != 0 || cap(c.ownOut) != 0 ||
			(c.back != nil && (len(c.back.ownPack) != 0 || len(c.back.ownScr) != 0)) {
			t.Errorf("sharing conv %d allocated scratch of its own", i)
		}
	}
	if cap(shared.groupDW) != largest {
		t.Fatalf("shared partial sums %d floats, want the largest conv's %d", cap(shared.groupDW), largest)
	}
	if len(own[0].ownPack) == 0 || cap(own[0].ownFlip) == 0 {
		t.Fatal("an unshared conv kept no packed or flipped weights: the check above tests nothing")
	}
}

// TestConv2dFilterTiles: where a batch's pixels make fewer filter-gradient
// groups than there are cores, each group's dw is cut into tiles of rows
// or columns that are separate work items. The tiles must cover dw exactly
// once: dw is within float32 summation of a float64 reference, and gives
// the same bits on 8 cores (tiles, the counts below), 2 and 1 (untiled,
// one item per group). The shapes: groups cut by columns (taps),
// one by rows (a 1x1 conv's many outputs), several groups summed in
// blocks, and channel groups (a ResNeXt's) cut by columns.
func TestConv2dFilterTiles(t *testing.T) {
	for _, s := range []struct {
		B, cin, H, cout, K, S, P, G int
		groups, tiles               int
		rows                        bool
	}{
		{2, 32, 32, 48, 3, 1, 1, 1, 2, 2, false},
		{3, 8, 32, 300, 1, 1, 0, 1, 3, 2, true},
		{2, 40, 64, 8, 3, 2, 1, 1, 2, 2, false},
		{6, 48, 32, 16, 3, 1, 1, 1, 6, 3, false},
		{2, 64, 32, 64, 3, 1, 1, 2, 2, 2, false},
		{16, 32, 7, 32, 3, 1, 1, 1, 1, 2, false}, // 784 pixels in all: one group, of the whole batch
	} {
		name := fmt.Sprintf("B%d-%dx%d-%d-K%d-S%d-G%d", s.B, s.cin, s.H, s.cout, s.K, s.S, s.G)
		c, err := NewConv2d(s.B, s.cin, s.H, s.H, s.cout, s.K, s.S, s.P, s.G)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(s.cin), uint64(s.cout)))
		cg := s.cin / s.G
		x, dy := randF32(rng, c.InLen()), randF32(rng, c.OutLen())
		dw := make([]float32, s.cout*cg*s.K*s.K)
		run := func(c *Conv2d, procs int) []float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			got := make([]float32, len(dw))
			c.BackwardFilter(x, dy, got)
			return got
		}
		got := run(c, 8)
		if c.groups != s.groups || c.tiles != s.tiles || c.tileRows != s.rows {
			t.Fatalf("%s: %d groups of %d tiles (rows %v) on 8 cores, want %d of %d (rows %v)", name, c.groups, c.tiles, c.tileRows, s.groups, s.tiles, s.rows)
		}
		want, abs := make([]float64, len(dw)), make([]float64, len(dw))
		convProducts(s.B, s.cin, s.H, s.cout, s.K, s.S, s.P, s.G, func(yi, xi, wi int) {
			p := float64(dy[yi]) * float64(x[xi])
			want[wi] += p
			abs[wi] += math.Abs(p)
		})
		checkBound(t, name+" dw", got, want, abs, s.B*c.Ho*c.Wo+filterGroups)
		for _, procs := range []int{2, 1} {
			if d := run(c, procs); !slices.Equal(d, got) {
				t.Errorf("%s: dw on %d cores (%d tiles) differs from 8 cores'", name, procs, c.tiles)
			}
		}
		if c.tiles != 1 {
			t.Errorf("%s: %d tiles on one core", name, c.tiles)
		}
	}
}

// TestConv2dForwardTiles: where a batch makes fewer Forward groups than
// filterGroups, each group's output pixels (or its output channels) are
// cut into tiles that are separate work items, crossing sample
// boundaries where a group holds several samples. y must be within float32 summation of a float64
// reference, and y and dx (at stride 1 itself a tiled Forward) must give
// the same bits on 8 cores (tiles, the counts below), 2 and 1 (untiled).
func TestConv2dForwardTiles(t *testing.T) {
	for _, s := range []struct {
		B, cin, H, cout, K, S, P, G int
		tiles                       int
		rows                        bool
	}{
		{3, 5, 7, 6, 3, 1, 1, 1, 2, false},    // one group of 3 samples of 49 pixels, tiles of 96
		{2, 4, 16, 8, 3, 1, 1, 1, 4, false},   // a group a sample, 256 pixels
		{3, 6, 16, 8, 3, 2, 1, 2, 3, false},   // stride 2, channel groups
		{4, 8, 14, 16, 1, 1, 0, 1, 4, false},  // a 1x1 conv, groups of 2 samples of 196 pixels
		{4, 20, 7, 200, 3, 1, 1, 1, 4, true},  // a group of 4 samples of 49 pixels: rows 60, 60, 60, 20
		{4, 100, 4, 100, 1, 1, 0, 1, 2, true}, // a 1x1 conv, 64 pixels: rows 60 and 40; its dx's too
		{1, 8, 16, 300, 1, 1, 0, 1, 5, true},  // one sample, 256 pixels: 60 rows a tile, straight into y
		{4, 12, 7, 96, 3, 1, 1, 4, 3, false},  // channel groups: columns
	} {
		name := fmt.Sprintf("B%d-%dx%d-%d-K%d-S%d-G%d", s.B, s.cin, s.H, s.cout, s.K, s.S, s.G)
		c, err := NewConv2d(s.B, s.cin, s.H, s.H, s.cout, s.K, s.S, s.P, s.G)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(s.H), uint64(s.cout)))
		cg := s.cin / s.G
		x, w, dy := randF32(rng, c.InLen()), randF32(rng, s.cout*cg*s.K*s.K), randF32(rng, c.OutLen())
		run := func(c *Conv2d, procs int) (y, dx []float32) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			y, dx = make([]float32, c.OutLen()), make([]float32, c.InLen())
			c.Forward(x, w, y)
			c.BackwardData(w, dy, dx)
			return y, dx
		}
		y, dx := run(c, 8)
		if c.fwdTiles != s.tiles || c.fwdRows != s.rows {
			t.Fatalf("%s: %d tiles a group (of rows: %v) on 8 cores, want %d (%v)", name, c.fwdTiles, c.fwdRows, s.tiles, s.rows)
		}
		want, abs := make([]float64, len(y)), make([]float64, len(y))
		convProducts(s.B, s.cin, s.H, s.cout, s.K, s.S, s.P, s.G, func(yi, xi, wi int) {
			p := float64(w[wi]) * float64(x[xi])
			want[yi] += p
			abs[yi] += math.Abs(p)
		})
		checkBound(t, name+" y", y, want, abs, cg*s.K*s.K)
		for _, procs := range []int{2, 1} {
			if y1, dx1 := run(c, procs); !slices.Equal(y1, y) || !slices.Equal(dx1, dx) {
				t.Errorf("%s: y or dx on %d cores differs from 8 cores'", name, procs)
			}
		}
		if c.fwdTiles != 1 {
			t.Errorf("%s: %d tiles on one core", name, c.fwdTiles)
		}
	}
}

// TestConv2dBackwardDataTiles: where a strided conv's batch makes fewer
// BackwardData groups than the cores, each group's im2col GEMM is cut
// into tiles of input channels, each finishing its channels of dx. dx
// must be within float32 summation of a float64 reference and give the
// same bits on 8 cores (tiles, the counts below), 2 and 1 (untiled).
func TestConv2dBackwardDataTiles(t *testing.T) {
	for _, s := range []struct {
		B, cin, H, cout, K, S, P, G int
		tiles                       int
	}{
		{4, 40, 14, 24, 3, 2, 1, 1, 5}, // one group of 4 samples of 49 pixels: 7 tiles of 48 rows at most, whole 4 channels (36 rows): 8 channels each
		{4, 96, 14, 32, 1, 2, 0, 1, 2}, // a 1x1 downsampling: tiles of 48 channels
		{2, 16, 9, 8, 3, 2, 0, 1, 2},   // no padding, tiles of 8 channels
		{4, 24, 14, 24, 3, 2, 1, 2, 1}, // channel groups: untiled
	} {
		name := fmt.Sprintf("B%d-%dx%d-%d-K%d-S%d-G%d", s.B, s.cin, s.H, s.cout, s.K, s.S, s.G)
		c, err := NewConv2d(s.B, s.cin, s.H, s.H, s.cout, s.K, s.S, s.P, s.G)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(s.cin), uint64(s.cout)))
		cg := s.cin / s.G
		w, dy := randF32(rng, s.cout*cg*s.K*s.K), randF32(rng, c.OutLen())
		run := func(procs int) []float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			dx := randF32(rng, c.InLen()) // overwritten
			c.BackwardData(w, dy, dx)
			return dx
		}
		dx := run(8)
		if c.bwdTiles != s.tiles {
			t.Fatalf("%s: %d tiles a group on 8 cores, want %d", name, c.bwdTiles, s.tiles)
		}
		want, abs := make([]float64, len(dx)), make([]float64, len(dx))
		convProducts(s.B, s.cin, s.H, s.cout, s.K, s.S, s.P, s.G, func(yi, xi, wi int) {
			p := float64(w[wi]) * float64(dy[yi])
			want[xi] += p
			abs[xi] += math.Abs(p)
		})
		checkBound(t, name+" dx", dx, want, abs, s.cout/s.G*s.K*s.K)
		for _, procs := range []int{2, 1} {
			if d := run(procs); !slices.Equal(d, dx) {
				t.Errorf("%s: dx on %d cores differs from 8 cores'", name, procs)
			}
		}
		if c.bwdTiles != 1 {
			t.Errorf("%s: %d tiles on one core", name, c.bwdTiles)
		}
	}
}

// TestTilesFor: the groups of a pass are cut when they alone would leave
// workers idle or unevenly loaded, and not when they split evenly.
func TestTilesFor(t *testing.T) {
	for _, c := range [][3]int{{1, 1, 1}, {1, 2, 2}, {3, 2, 2}, {8, 2, 1}, {5, 2, 2}, {9, 2, 1}, {3, 8, 5}, {1, 8, 8}, {16, 8, 1}} {
		if got := tilesFor(c[0], c[1]); got != c[2] {
			t.Errorf("tilesFor(%d groups, %d workers) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}

// convProducts calls f(yi, xi, wi) for each product w[wi]·x[xi] that a
// convolution of a B×cin×H×H input with cout K×K filters (stride S, pad
// P, G channel groups) adds into its output y[yi], the indices flat NCHW:
// the float64 references of the tile tests are built from it.
func convProducts(B, cin, H, cout, K, S, P, G int, f func(yi, xi, wi int)) {
	Ho := (H+2*P-K)/S + 1
	cg, og := cin/G, cout/G
	for b := 0; b < B; b++ {
		for co := 0; co < cout; co++ {
			for j := 0; j < cg; j++ {
				ci := co/og*cg + j
				for ky := 0; ky < K; ky++ {
					for kx := 0; kx < K; kx++ {
						for oy := 0; oy < Ho; oy++ {
							for ox := 0; ox < Ho; ox++ {
								iy, ix := oy*S-P+ky, ox*S-P+kx
								if iy < 0 || iy >= H || ix < 0 || ix >= H {
									continue
								}
								f(((b*cout+co)*Ho+oy)*Ho+ox, ((b*cin+ci)*H+iy)*H+ix, ((co*cg+j)*K+ky)*K+kx)
							}
						}
					}
				}
			}
		}
	}
}
