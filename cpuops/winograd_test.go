package cpuops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	"stoke/gemm"
)

// winoBound is the float32 error bound of F(2x2, 3x3) for y = conv(x, w)
// (3x3, stride 1, padding 1; x (B,Cin,H,W), w (Cout,Cin,3,3)), derived
// the standard way (Higham, "Accuracy and Stability of Numerical
// Algorithms", 3.1): every value the algorithm computes is a signed sum of
// elementary products coef·g·d, each carried through at most N = Cin + 12
// roundings (U: 2 adds; V: 2 adds twice, the halving exact; M: the GEMM's
// Cin fused multiply-adds and one add per k block of at most kc; Y: 2 adds
// twice), so |ŷ − y| <= γ_N · (|Aᵀ| Σ_ci (|G||g||Gᵀ|) ⊙ (|Bᵀ||d||B|) |A|),
// γ_N = N·u/(1−N·u), u = 2⁻²⁴: the algorithm run in float64 on the absolute
// values of its matrices and inputs.
func winoBound(B, cin, H, W, cout int, x, w []float32) []float64 {
	n := cin + 12 + (cin+gemm.KC-1)/gemm.KC
	u := math.Ldexp(1, -24)
	gamma := float64(n) * u / (1 - float64(n)*u)
	// |G||g||Gᵀ| per (co, ci).
	absG := [4][3]float64{{1, 0, 0}, {.5, .5, .5}, {.5, .5, .5}, {0, 0, 1}}
	v := make([]float64, cout*cin*16)
	for k := 0; k < cout*cin; k++ {
		var t [4][3]float64
		for r := 0; r < 4; r++ {
			for j := 0; j < 3; j++ {
				for q := 0; q < 3; q++ {
					t[r][j] += absG[r][q] * math.Abs(float64(w[k*9+q*3+j]))
				}
			}
		}
		for r := 0; r < 4; r++ {
			for j := 0; j < 4; j++ {
				for q := 0; q < 3; q++ {
					v[k*16+r*4+j] += t[r][q] * absG[j][q]
				}
			}
		}
	}
	absB := [4][4]float64{{1, 0, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 0, 1}} // |Bᵀ|
	absA := [2][4]float64{{1, 1, 1, 0}, {0, 1, 1, 1}}                             // |Aᵀ|
	at := func(b, ci, iy, ix int) float64 {
		if iy < 0 || iy >= H || ix < 0 || ix >= W {
			return 0
		}
		return math.Abs(float64(x[((b*cin+ci)*H+iy)*W+ix]))
	}
	bound := make([]float64, B*cout*H*W)
	for b := 0; b < B; b++ {
		for ty := 0; ty < H/2; ty++ {
			for tx := 0; tx < W/2; tx++ {
				us := make([][16]float64, cin)
				for ci := range us {
					var e [4][4]float64 // |d||B|
					for r := 0; r < 4; r++ {
						for j := 0; j < 4; j++ {
							for q := 0; q < 4; q++ {
								e[r][j] += at(b, ci, 2*ty-1+r, 2*tx-1+q) * absB[j][q]
							}
						}
					}
					for i := 0; i < 4; i++ {
						for j := 0; j < 4; j++ {
							for r := 0; r < 4; r++ {
								us[ci][i*4+j] += absB[i][r] * e[r][j]
							}
						}
					}
				}
				for co := 0; co < cout; co++ {
					var m [16]float64
					for ci := 0; ci < cin; ci++ {
						for k := 0; k < 16; k++ {
							m[k] += v[(co*cin+ci)*16+k] * us[ci][k]
						}
					}
					for i := 0; i < 2; i++ {
						for j := 0; j < 2; j++ {
							var y float64
							for r := 0; r < 4; r++ {
								for q := 0; q < 4; q++ {
									y += absA[i][r] * m[r*4+q] * absA[j][q]
								}
							}
							bound[((b*cout+co)*H+2*ty+i)*W+2*tx+j] = gamma * y
						}
					}
				}
			}
		}
	}
	return bound
}

// refConv3x3 is the exact (float64) 3x3 convolution at stride 1, padding 1.
func refConv3x3(B, cin, H, W, cout int, x, w []float32) []float64 {
	y := make([]float64, B*cout*H*W)
	for b := 0; b < B; b++ {
		for co := 0; co < cout; co++ {
			for oy := 0; oy < H; oy++ {
				for ox := 0; ox < W; ox++ {
					var s float64
					for ci := 0; ci < cin; ci++ {
						for ky := 0; ky < 3; ky++ {
							for kx := 0; kx < 3; kx++ {
								iy, ix := oy+ky-1, ox+kx-1
								if iy >= 0 && iy < H && ix >= 0 && ix < W {
									s += float64(w[((co*cin+ci)*3+ky)*3+kx]) * float64(x[((b*cin+ci)*H+iy)*W+ix])
								}
							}
						}
					}
					y[((b*cout+co)*H+oy)*W+ox] = s
				}
			}
		}
	}
	return y
}

// flip3x3 is BackwardData's weights as a forward conv's: (Cin, Cout, 3, 3),
// in and out swapped, each kernel turned by 180°.
func flip3x3(cin, cout int, w []float32) []float32 {
	f := make([]float32, len(w))
	for co := 0; co < cout; co++ {
		for ci := 0; ci < cin; ci++ {
			for k := 0; k < 9; k++ {
				f[(ci*cout+co)*9+8-k] = w[(co*cin+ci)*9+k]
			}
		}
	}
	return f
}

// refFilter3x3 is the exact (float64) filter gradient of a 3x3 conv at
// stride 1, padding 1: dw[co][ci][ky][kx] = Σ dy[b][co][oy][ox]·x[b][ci][oy+ky−1][ox+kx−1].
func refFilter3x3(B, cin, H, W, cout int, x, dy []float32) []float64 {
	dw := make([]float64, cout*cin*9)
	for co := 0; co < cout; co++ {
		for ci := 0; ci < cin; ci++ {
			for k := 0; k < 9; k++ {
				ky, kx := k/3, k%3
				var s float64
				for b := 0; b < B; b++ {
					for oy := 0; oy < H; oy++ {
						for ox := 0; ox < W; ox++ {
							iy, ix := oy+ky-1, ox+kx-1
							if iy >= 0 && iy < H && ix >= 0 && ix < W {
								s += float64(dy[((b*cout+co)*H+oy)*W+ox]) * float64(x[((b*cin+ci)*H+iy)*W+ix])
							}
						}
					}
				}
				dw[(co*cin+ci)*9+k] = s
			}
		}
	}
	return dw
}

// winoFilterBound is the float32 error bound of the filter gradient by
// F(2x2, 3x3) (winograd_filter.go), derived as winoBound's: every
// elementary product dy·x goes through at most N roundings (U's 2 adds,
// DY's 2, the GEMM's sum over the batch's T tiles with one add per k
// block and per chunk, Gᵀ·G's 4), so |dŵ − dw| <= γ_N · |Gᵀ| Σ_tiles
// (|A||dy||Aᵀ|) ⊙ (|Bᵀ||d||B|) |G|.
func winoFilterBound(B, cin, H, W, cout int, x, dy []float32) []float64 {
	T := B * (H / 2) * (W / 2)
	n := T + 2*(T/gemm.KC+B) + 16
	u := math.Ldexp(1, -24)
	gamma := float64(n) * u / (1 - float64(n)*u)
	absB := [4][4]float64{{1, 0, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 0, 1}} // |Bᵀ|
	absA := [4][2]float64{{1, 0}, {1, 1}, {1, 1}, {0, 1}}                         // |A|
	absGT := [3][4]float64{{1, .5, .5, 0}, {0, .5, .5, 0}, {0, .5, .5, 1}}        // |Gᵀ|
	xa := func(b, ci, iy, ix int) float64 {
		if iy < 0 || iy >= H || ix < 0 || ix >= W {
			return 0
		}
		return math.Abs(float64(x[((b*cin+ci)*H+iy)*W+ix]))
	}
	sum := make([]float64, cout*cin*16)
	for b := 0; b < B; b++ {
		for ty := 0; ty < H/2; ty++ {
			for tx := 0; tx < W/2; tx++ {
				us := make([][16]float64, cin)
				for ci := range us {
					for i := 0; i < 4; i++ {
						for j := 0; j < 4; j++ {
							for r := 0; r < 4; r++ {
								for q := 0; q < 4; q++ {
									us[ci][i*4+j] += absB[i][r] * xa(b, ci, 2*ty-1+r, 2*tx-1+q) * absB[j][q]
								}
							}
						}
					}
				}
				for co := 0; co < cout; co++ {
					var d [16]float64
					for i := 0; i < 4; i++ {
						for j := 0; j < 4; j++ {
							for r := 0; r < 2; r++ {
								for q := 0; q < 2; q++ {
									d[i*4+j] += absA[i][r] * math.Abs(float64(dy[((b*cout+co)*H+2*ty+r)*W+2*tx+q])) * absA[j][q]
								}
							}
						}
					}
					for ci := 0; ci < cin; ci++ {
						for k := 0; k < 16; k++ {
							sum[(co*cin+ci)*16+k] += d[k] * us[ci][k]
						}
					}
				}
			}
		}
	}
	bound := make([]float64, cout*cin*9)
	for k := 0; k < cout*cin; k++ {
		for a := 0; a < 3; a++ {
			for l := 0; l < 3; l++ {
				var v float64
				for i := 0; i < 4; i++ {
					for j := 0; j < 4; j++ {
						v += absGT[a][i] * sum[k*16+i*4+j] * absGT[l][j]
					}
				}
				bound[k*9+a*3+l] = gamma * v
			}
		}
	}
	return bound
}

// TestWinogradWithinBound: Forward, BackwardData and BackwardFilter by
// F(2x2, 3x3) stay within winoBound (winoFilterBound) of the exact
// convolution, dx and dw, with the batch's filter gradient in chunks of
// one to ten samples, for
// shapes whose groups are one sample and several, a last group of fewer
// samples, tiles that are not whole panels, 4x4 and 2x2 planes, non-square
// planes, channel counts of 1 to 96 and deep enough for two k blocks; and
// they are the same bits on 1 and 2 cores. The bound is tight enough that
// a transform's wrong sign or index, or a tile in the wrong place, fails
// it by orders of magnitude.
func TestWinogradWithinBound(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(t int) { winoFilterTiles = t }(winoFilterTiles)
	winoFilterTiles = 40 // chunks of a few samples: the filter gradient's beta-1 adds
	for _, s := range []struct{ B, Cin, H, W, Cout int }{
		{2, 16, 32, 32, 16},
		{3, 5, 6, 10, 7},
		{5, 64, 8, 8, 32},
		{17, 8, 4, 4, 24},
		{3, 1, 2, 2, 1},
		{2, 300, 4, 6, 13},
		{4, 96, 16, 12, 96},
	} {
		name := fmt.Sprintf("%+v", s)
		c, err := NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, 3, 1, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !c.setWinograd(true, true) || !c.back.Winograd() {
			t.Fatalf("%s: SetWinograd did not apply", name)
		}
		rng := rand.New(rand.NewPCG(uint64(s.B*1000+s.Cin), uint64(s.Cout)))
		x, w := randF32(rng, c.InLen()), randF32(rng, s.Cout*s.Cin*9)
		dy := randF32(rng, c.OutLen())
		check := func(what string, got []float32, want, bound []float64) {
			t.Helper()
			worst, at := 0.0, -1
			for i := range got {
				if r := math.Abs(float64(got[i])-want[i]) / (bound[i] + 1e-30); r > worst {
					worst, at = r, i
				}
			}
			t.Logf("%s %s: largest error %.3g of the bound", name, what, worst)
			if worst > 1 {
				t.Errorf("%s %s: [%d] = %g, exact %g: error %.3g times the bound %g", name, what, at, got[at], want[at], worst, bound[at])
			}
		}
		wantY := refConv3x3(s.B, s.Cin, s.H, s.W, s.Cout, x, w)
		wf := flip3x3(s.Cin, s.Cout, w)
		wantDX := refConv3x3(s.B, s.Cout, s.H, s.W, s.Cin, dy, wf)
		wantDW := refFilter3x3(s.B, s.Cin, s.H, s.W, s.Cout, x, dy)
		var y1, dx1, dw1 []float32
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			y, dx, dw := make([]float32, c.OutLen()), make([]float32, c.InLen()), make([]float32, len(w))
			c.Forward(x, w, y)
			c.BackwardData(w, dy, dx)
			c.BackwardFilter(x, dy, dw)
			if procs == 1 {
				check("Forward", y, wantY, winoBound(s.B, s.Cin, s.H, s.W, s.Cout, x, w))
				check("BackwardData", dx, wantDX, winoBound(s.B, s.Cout, s.H, s.W, s.Cin, dy, wf))
				check("BackwardFilter", dw, wantDW, winoFilterBound(s.B, s.Cin, s.H, s.W, s.Cout, x, dy))
				y1, dx1, dw1 = y, dx, dw
				continue
			}
			if !slices.Equal(y, y1) || !slices.Equal(dx, dx1) || !slices.Equal(dw, dw1) {
				t.Errorf("%s: 2 cores give other bits than 1", name)
			}
		}
	}
}

// TestWinogradTransformsSameBits: the AVX-512 transforms are winoInGo's,
// winoWeightsGo's, winoOutGo's, winoDyGo's (0 to 16 channels) and
// winoDwGo's bits, winoInG (gathered tiles) winoIn's and winoOutS
// (scattered) winoOut's, for 1 to 40 tiles (whole steps of
// 16 and partial ones) and 1 to 3 strips, and write nothing past the last
// tile (the masked stores).
func TestWinogradTransformsSameBits(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 here")
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for n := 1; n <= 40; n++ {
		rows := 1 + n%3
		wp, stride := 2*n+2+3, rows*n+5
		src := randF32(rng, (2*rows+1)*wp+2*n+2) // the last strip's last float is src's last
		want, got := make([]float32, 16*stride), make([]float32, 16*stride)
		for i := range got {
			want[i], got[i] = -7, -7
		}
		winoInGo(want, stride, src, wp, n, rows)
		winoInAVX512(&got[0], stride, &src[0], wp, n, rows, &winoLanes[0])
		if !slices.Equal(got, want) {
			t.Fatalf("winoIn, %d strips of %d tiles: AVX-512 and Go differ", rows, n)
		}
		var offs []int32 // the same strips' tiles by their origins
		for r := 0; r < rows; r++ {
			for u := 0; u < n; u++ {
				offs = append(offs, int32(2*r*wp+2*u))
			}
		}
		gotG := make([]float32, 16*stride)
		for i := range gotG {
			gotG[i] = -7
		}
		winoInG(gotG, stride, src, offs, wp, rows*n)
		if !slices.Equal(gotG, want) {
			t.Fatalf("winoInG, %d strips of %d tiles: other bits than winoIn's", rows, n)
		}
		for _, flip := range []int{0, 1} {
			ls := 9 + 4*flip
			g := randF32(rng, (n-1)*ls+9) // the last kernel's last float is g's last
			winoWeightsGo(want, stride, g, n, ls, flip == 1)
			winoWeightsAVX512(&got[0], stride, &g[0], n, ls, flip, &winoLanes[0])
			if !slices.Equal(got, want) {
				t.Fatalf("winoWeights, %d kernels %d apart, flip %d: AVX-512 and Go differ", n, ls, flip)
			}
		}
		cnt := n % 17
		plane := (2*rows)*(2*n+1) + 3
		dy := randF32(rng, max(1, cnt)*plane)
		dyStride := 32*rows*n + 7
		wantD, gotD := make([]float32, 16*dyStride), make([]float32, 16*dyStride)
		for i := range gotD {
			wantD[i], gotD[i] = -7, -7
		}
		winoDyGo(wantD, dyStride, dy, plane, 2*n+1, n, rows, cnt)
		winoDyAVX512(&gotD[0], dyStride, &dy[0], plane, 2*n+1, n, rows, cnt, &winoLanes[0])
		if !slices.Equal(gotD, wantD) {
			t.Fatalf("winoDy, %d channels of %d strips of %d tiles: AVX-512 and Go differ", cnt, rows, n)
		}
		cin, cnt2 := 1+n%5, 1+n%16
		x := randF32(rng, 15*stride+(cin-1)*17+cnt2)
		dwStride := 9*cin + 2
		wantW, gotW := make([]float32, cnt2*dwStride), make([]float32, cnt2*dwStride)
		for i := range gotW {
			wantW[i], gotW[i] = -7, -7
		}
		winoDwGo(wantW, dwStride, x, stride, 17, cin, cnt2)
		winoDwAVX512(&gotW[0], dwStride, &x[0], stride, 17, cin, cnt2, &winoLanes[0])
		if !slices.Equal(gotW, wantW) {
			t.Fatalf("winoDw, %d by %d channels: AVX-512 and Go differ", cnt2, cin)
		}
		m := randF32(rng, 15*stride+rows*n)
		w := 2*n + 3
		wantY, gotY := make([]float32, (2*rows-1)*w+2*n+1), make([]float32, (2*rows-1)*w+2*n+1)
		for i := range gotY {
			wantY[i], gotY[i] = -7, -7
		}
		winoOutGo(wantY, w, m, stride, n, rows)
		winoOutAVX512(&gotY[0], w, &m[0], stride, n, rows, &winoLanes[0])
		if !slices.Equal(gotY, wantY) {
			t.Fatalf("winoOut, %d strips of %d tiles: AVX-512 and Go differ:\n%v\n%v", rows, n, gotY, wantY)
		}
		var outs []int32 // the same tiles by their outputs' origins
		for r := 0; r < rows; r++ {
			for u := 0; u < n; u++ {
				outs = append(outs, int32(2*r*w+2*u))
			}
		}
		for i := range gotY {
			gotY[i] = -7
		}
		winoOutS(gotY, w, m, stride, outs, rows*n)
		if !slices.Equal(gotY, wantY) {
			t.Fatalf("winoOutS, %d strips of %d tiles: other bits than winoOut's", rows, n)
		}
	}
}

// TestWinogradPaths: a conv's Winograd Forward gives the same bits with
// the Go transforms as with the AVX-512 ones; a conv at TF32, or of a
// shape F(2x2, 3x3) does not take (stride 2, padding 0, odd planes,
// channel groups, a conv block), keeps the im2col GEMM's bits; and
// SetWinograd(false) restores them.
func TestWinogradPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fwd := func(c *Conv2d, x, w []float32) []float32 {
		y := make([]float32, c.OutLen())
		c.Forward(x, w, y)
		return y
	}
	c, _ := NewConv2d(3, 12, 8, 10, 20, 3, 1, 1, 1)
	x, w := randF32(rng, c.InLen()), randF32(rng, 20*12*9)
	plain := fwd(c, x, w)
	if c.SetWinograd(true) {
		t.Error("SetWinograd applied where it does not pay (12 to 20 channels)")
	}
	c.setWinograd(true, true)
	wino := fwd(c, x, w)
	if slices.Equal(wino, plain) {
		t.Error("SetWinograd(true) left Forward on the GEMM")
	}
	if winoAsm {
		winoAsm = false
		goPath := fwd(c, x, w)
		winoAsm = true
		if !slices.Equal(goPath, wino) {
			t.Error("the Go transforms give other bits than the AVX-512 ones")
		}
	}
	// BackwardData reads the flipped weights where they lie: the bits of
	// the back conv's Forward on weights flipped first.
	dy := randF32(rng, c.OutLen())
	dx, dxFlip := make([]float32, c.InLen()), make([]float32, c.InLen())
	c.BackwardData(w, dy, dx)
	c.back.Forward(dy, flip3x3(12, 20, w), dxFlip)
	if !slices.Equal(dx, dxFlip) {
		t.Error("BackwardData by Winograd on w where it lies: other bits than on the flipped weights")
	}
	c.SetPrecision(gemm.TF32)
	c.setWinograd(true, true)
	tf := fwd(c, x, w)
	c.SetWinograd(false)
	if !slices.Equal(tf, fwd(c, x, w)) {
		t.Error("at TF32 SetWinograd changed Forward")
	}
	c.SetPrecision(gemm.FP32)
	if !slices.Equal(fwd(c, x, w), plain) {
		t.Error("SetWinograd(false) did not restore the GEMM's bits")
	}
	for _, s := range []struct {
		name                         string
		B, Cin, H, W, Cout, st, p, g int
	}{
		{"stride 2", 2, 4, 8, 8, 8, 2, 1, 1},
		{"padding 0", 2, 4, 8, 8, 8, 1, 0, 1},
		{"odd plane", 2, 4, 7, 8, 8, 1, 1, 1},
		{"groups", 2, 4, 8, 8, 8, 1, 1, 2},
	} {
		c, err := NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, 3, s.st, s.p, s.g)
		if err != nil {
			t.Fatal(err)
		}
		if c.setWinograd(true, true) || c.Winograd() {
			t.Errorf("%s: SetWinograd applied", s.name)
		}
	}
	b, _ := NewConvBlock(2, 3, 8, 8, 16, 3, false)
	if b.setWinograd(true, true) {
		t.Error("a conv block: SetWinograd applied")
	}
}

// TestWinogradAllocatesNothing: once warm, the three Winograd passes
// allocate nothing, on 1 core and on 2.
func TestWinogradAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(8, 8))
	c, _ := NewConv2d(6, 32, 8, 8, 48, 3, 1, 1, 1)
	if !c.SetWinograd(true) {
		t.Fatal("SetWinograd did not apply at 32 and 48 channels")
	}
	x, w, dy := randF32(rng, c.InLen()), randF32(rng, 48*32*9), randF32(rng, c.OutLen())
	y, dx, dw := make([]float32, c.OutLen()), make([]float32, c.InLen()), make([]float32, len(w))
	step := func() {
		c.Forward(x, w, y)
		c.BackwardData(w, dy, dx)
		c.BackwardFilter(x, dy, dw)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		step()
		if n := testing.AllocsPerRun(5, step); n != 0 {
			t.Errorf("%d cores: a Winograd step allocated %v times", procs, n)
		}
	}
}
