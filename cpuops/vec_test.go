package cpuops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestVectorLoopsMatchGo: the AVX2 loops (where the CPU has them) give the
// same bits as the portable ones, for every length around the vector widths.
func TestVectorLoopsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for n := 0; n < 70; n++ {
		src, dst := randF32(rng, n), randF32(rng, n)
		want := slices.Clone(dst)
		for i, v := range src {
			want[i] += v
		}
		got := slices.Clone(dst)
		addTo(got, src)
		if !slices.Equal(got, want) {
			t.Fatalf("addTo, n=%d: %v, want %v", n, got, want)
		}

		// Add, into a third slice and into either operand.
		sum := make([]float32, n)
		for i := range sum {
			sum[i] = src[i] + dst[i]
		}
		z := make([]float32, n)
		Add(z, src, dst)
		zx, zy := slices.Clone(src), slices.Clone(dst)
		Add(zx, zx, dst)
		Add(zy, src, zy)
		for what, got := range map[string][]float32{"z": z, "z = x": zx, "z = y": zy} {
			if !slices.Equal(got, sum) {
				t.Fatalf("Add (%s), n=%d: %v, want %v", what, n, got, sum)
			}
		}

		y, dy := randF32(rng, n), randF32(rng, n)
		for i := range y {
			switch i % 4 {
			case 0:
				y[i] = 0
			case 1:
				y[i] = float32(math.Abs(float64(y[i])))
			case 2:
				y[i] = float32(math.NaN())
			}
		}
		for _, bias := range []float32{0, -0.5, float32(math.Copysign(0, -1))} {
			x := slices.Clone(y)
			for i := range x {
				if i%5 == 3 {
					x[i] = float32(math.Copysign(0, -1)) // −0 + −0 = −0: must come out +0
				}
			}
			want, got := slices.Clone(x), slices.Clone(x)
			biasReLUGo(want, bias)
			biasReLU(got, bias)
			for i := range want {
				if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
					t.Fatalf("biasReLU(%v), n=%d, i=%d: %v (bits %x), want %v (bits %x)", bias, n, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}

		wm, gm := make([]float32, n), make([]float32, n)
		reluMaskGo(wm, y, dy)
		reluMask(gm, y, dy)
		for i := range wm {
			if math.Float32bits(wm[i]) != math.Float32bits(gm[i]) {
				t.Fatalf("reluMask, n=%d, i=%d: %v, want %v", n, i, gm[i], wm[i])
			}
		}
	}
}

// TestBatchNormLoops: BatchNorm's vector loops against float64 sums, for
// every length around the vector widths, with and without the ReLU mask,
// on this CPU's loops and on the portable ones.
func TestBatchNormLoops(t *testing.T) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	for _, v := range []bool{useAVX2, false} {
		useAVX2 = v
		testBatchNormLoops(t)
	}
}

func testBatchNormLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	near := func(got float64, want float64, n int) bool {
		return math.Abs(got-want) <= 1e-6*float64(n+1)*(1+math.Abs(want))
	}
	for n := 0; n < 70; n++ {
		x, dy := randF32(rng, n), randF32(rng, n)
		for i := range x {
			x[i] = 2*x[i] + 3
		}
		var ws, wss float64
		for _, v := range x {
			ws += float64(v)
			wss += float64(v) * float64(v)
		}
		if s, ss := sumSq(x); math.Abs(s-ws) > 1e-12*(1+math.Abs(ws)) || math.Abs(ss-wss) > 1e-12*(1+wss) {
			t.Fatalf("sumSq, n=%d: %v, %v; want %v, %v", n, s, ss, ws, wss)
		}
		for _, relu := range []bool{false, true} {
			y := make([]float32, n)
			scaleShift(x, y, 0.7, -2.5, relu)
			mask := make([]bool, n)
			for i, v := range x {
				want := float64(v)*0.7 - 2.5
				if relu {
					want = math.Max(want, 0)
				}
				if !near(float64(y[i]), want, 1) || (relu && math.Signbit(float64(y[i]))) {
					t.Fatalf("scaleShift relu=%v, n=%d, i=%d: %v, want %v", relu, n, i, y[i], want)
				}
				mask[i] = !relu || y[i] != 0
			}
			var wg, wgx float64
			for i := range x {
				if mask[i] {
					wg += float64(dy[i])
					wgx += float64(dy[i]) * float64(x[i])
				}
			}
			if sg, sgx := gradSums(x, y, dy, relu); !near(float64(sg), wg, n) || !near(float64(sgx), wgx, 4*n) {
				t.Fatalf("gradSums relu=%v, n=%d: %v, %v; want %v, %v", relu, n, sg, sgx, wg, wgx)
			}
			dx := make([]float32, n)
			bnDx(x, y, dy, dx, relu, 1.5, -0.25, 0.125)
			for i := range x {
				var g float64
				if mask[i] {
					g = float64(dy[i])
				}
				if want := 1.5*g - 0.25*float64(x[i]) + 0.125; !near(float64(dx[i]), want, 2) {
					t.Fatalf("bnDx relu=%v, n=%d, i=%d: %v, want %v", relu, n, i, dx[i], want)
				}
			}
		}
	}
}

// TestCopyRows: the panel copies give the portable loops' panels.
func TestCopyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	src := randF32(rng, 500)
	for n := 0; n < 12; n++ {
		offs := make([]int, n)
		for i := range offs {
			offs[i] = 7*i + i*i
		}
		want, got := make([]float32, 16*n), make([]float32, 16*n)
		copyRows16Go(want, src, offs, 5)
		copyRows16(got, src, offs, 5)
		if !slices.Equal(got, want) {
			t.Fatalf("copyRows16, n=%d: %v, want %v", n, got, want)
		}
		copyRows8x2Go(want, src, offs, 3, 40)
		copyRows8x2(got, src, offs, 3, 40)
		if !slices.Equal(got, want) {
			t.Fatalf("copyRows8x2, n=%d: %v, want %v", n, got, want)
		}
	}
}

// TestTranspose8: the 8x8 transpose writes panel rows of stride 16.
func TestTranspose8(t *testing.T) {
	src := make([]float32, 300)
	for i := range src {
		src[i] = float32(i)
	}
	offs := [8]int{0, 9, 30, 31, 100, 150, 151, 280}
	dst := make([]float32, 16*8)
	if !transpose8(dst, src[3:], &offs) {
		t.Skip("no AVX2 on this CPU")
	}
	for i := 0; i < 8; i++ {
		for j := 0; j < 16; j++ {
			want := float32(0)
			if j < 8 {
				want = src[3+offs[j]+i]
			}
			if dst[16*i+j] != want {
				t.Fatalf("dst[%d][%d] = %v, want %v", i, j, dst[16*i+j], want)
			}
		}
	}
}

// TestFusedBatchNormLoops: the loops of the fused BatchNorm + add + ReLU
// give the bits of the loops they replace (scaleShift then AddReLU;
// reluMask then gradSums), at every length around the vector widths, with
// zeros, −0 and NaN among the values, on this CPU's loops and the portable ones.
func TestFusedBatchNormLoops(t *testing.T) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	rng := rand.New(rand.NewPCG(11, 11))
	for _, v := range []bool{useAVX2, false} {
		useAVX2 = v
		for n := 0; n < 70; n++ {
			x, s, dy := randF32(rng, n), randF32(rng, n), randF32(rng, n)
			for i := 0; i < n; i += 7 {
				x[i], s[i], dy[i] = 0, float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))
			}
			if n > 20 {
				x[13], s[17] = float32(math.NaN()), float32(math.NaN())
			}
			bnOut, want, got := make([]float32, n), make([]float32, n), make([]float32, n)
			scaleShift(x, bnOut, 0.7, -0.3, false)
			AddReLU(bnOut, s, want)
			scaleShiftAddReLU(x, s, got, 0.7, -0.3)
			sameBits(t, fmt.Sprintf("scaleShiftAddReLU avx2=%v n=%d", v, n), got, want)

			d, dGot := make([]float32, n), make([]float32, n)
			reluMask(d, want, dy)
			sg, sgx := gradSums(x, want, d, false)
			gg, ggx := gradSumsMask(x, want, dy, dGot)
			sameBits(t, fmt.Sprintf("gradSumsMask d avx2=%v n=%d", v, n), dGot, d)
			sameBits(t, fmt.Sprintf("gradSumsMask sums avx2=%v n=%d", v, n), []float32{gg, ggx}, []float32{sg, sgx})
		}
	}
}

// TestPadPlanes: every float of the padded planes is the input where it
// lies inside and +0 around it, whatever was in dst before (NaN here),
// for widths around the vector width (the AVX-512 rows' full vectors and
// masked tail, where the CPU has them) and pads up to and past the 8 the
// vector rows take.
func TestPadPlanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 9))
	for _, planes := range []int{1, 3} {
		for _, H := range []int{1, 2, 5} {
			for W := 1; W <= 49; W++ {
				for _, P := range []int{1, 2, 3, 8, 9} {
					hp, wp := H+2*P, W+2*P
					x := randF32(rng, planes*H*W)
					dst := make([]float32, planes*hp*wp+5) // a tail that must stay NaN
					for i := range dst {
						dst[i] = float32(math.NaN())
					}
					padPlanes(dst, x, planes, H, W, P)
					for i, v := range dst {
						p, y, xx := i/(hp*wp), i%(hp*wp)/wp, i%wp
						want := float32(math.NaN())
						switch {
						case p >= planes:
						case y >= P && y < H+P && xx >= P && xx < W+P:
							want = x[p*H*W+(y-P)*W+xx-P]
						default:
							want = 0
						}
						if math.Float32bits(v) != math.Float32bits(want) {
							t.Fatalf("planes=%d H=%d W=%d P=%d: dst[%d] (plane %d, row %d, col %d) = %v, want %v (AVX-512 %v)",
								planes, H, W, P, i, p, y, xx, v, want, useAVX512)
						}
					}
				}
			}
		}
	}
}
