package cpuops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddStride2Rows: col2im's stride-2 add (AVX-512 where it runs) adds
// src[r·srcLd+i] to dst[r·ld+2i] with the bits of a float32 add, for every
// width around the vector's 8 and a few rows, leaves every other float of
// dst as it was (a NaN's payload and −0 included), and writes nothing
// past the last row's dst[2w−2] (the rest of the array holds a sentinel).
func TestAddStride2Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const sentinel = 12345.5
	for w := 1; w < 42; w++ {
		for _, rows := range []int{1, 2, 5} {
			ld, srcLd := 2*w+3, w+2
			src := randF32(rng, (rows-1)*srcLd+w)
			end := (rows-1)*ld + 2*w - 1
			big := randF32(rng, end+20)
			for i := end; i < len(big); i++ {
				big[i] = sentinel
			}
			for i := 1; i < end; i += 4 {
				big[i] = math.Float32frombits(0x7fc01234) // a NaN with a payload
			}
			big[0] = float32(math.Copysign(0, -1))
			src[0] = float32(math.Copysign(0, -1)) // −0 + −0 = −0
			want := slices.Clone(big)
			for r := 0; r < rows; r++ {
				for i := 0; i < w; i++ {
					want[r*ld+2*i] += src[r*srcLd+i]
				}
			}
			got := slices.Clone(big)
			addStride2Rows(got[:end], src, w, rows, ld, srcLd)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("w=%d rows=%d (AVX-512 %v): dst[%d] = %v (bits %x), want %v (bits %x)", w, rows, useAVX512, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}

// TestSpan2 against the definition: o in [o0, o1) exactly when o < n and
// 0 <= 2·o + t < size.
func TestSpan2(t *testing.T) {
	for tt := -4; tt <= 4; tt++ {
		for size := 1; size < 12; size++ {
			for n := 0; n < 9; n++ {
				o0, o1 := span2(tt, size, n)
				for o := 0; o < n+3; o++ {
					in := o < n && 2*o+tt >= 0 && 2*o+tt < size
					if in != (o >= o0 && o < o1) {
						t.Fatalf("span2(%d, %d, %d) = [%d, %d): output %d inside is %v", tt, size, n, o0, o1, o, in)
					}
				}
			}
		}
	}
}

// TestCol2imStride2SameBits: col2im at stride 2, added straight into dx,
// gives every value the bits of adding each tap's values into a padded
// plane in tap order and cropping it (col2im's way at other strides),
// for 3x3, 1x1 and 7x7 kernels, odd and even sizes, a channel range.
func TestCol2imStride2SameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, s := range []struct{ cin, H, W, K, P, c0, c1 int }{
		{4, 8, 8, 3, 1, 0, 4}, {3, 7, 9, 3, 1, 1, 3}, {2, 8, 6, 1, 0, 0, 2},
		{2, 11, 9, 7, 3, 0, 2}, {2, 32, 32, 3, 1, 0, 2}, {2, 5, 5, 3, 2, 1, 2},
	} {
		c, err := NewConv2d(1, s.cin, s.H, s.W, 3, s.K, 2, s.P, 1)
		if err != nil {
			t.Fatal(err)
		}
		kk, ohw := s.K*s.K, c.Ho*c.Wo
		ld := ohw + 5
		col := randF32(rng, (s.c1-s.c0)*kk*ld)
		hp, wp := s.H+2*s.P, s.W+2*s.P
		want := randF32(rng, s.cin*s.H*s.W) // channels outside [c0, c1) stay
		got := slices.Clone(want)
		for ci := s.c0; ci < s.c1; ci++ {
			acc := make([]float32, hp*wp)
			for tap := 0; tap < kk; tap++ {
				ky, kx := tap/s.K, tap%s.K
				row := col[((ci-s.c0)*kk+tap)*ld:]
				for oy := 0; oy < c.Ho; oy++ {
					for ox := 0; ox < c.Wo; ox++ {
						acc[(2*oy+ky)*wp+2*ox+kx] += row[oy*c.Wo+ox]
					}
				}
			}
			for iy := 0; iy < s.H; iy++ {
				copy(want[(ci*s.H+iy)*s.W:(ci*s.H+iy+1)*s.W], acc[(iy+s.P)*wp+s.P:])
			}
		}
		c.start(1)
		c.col2im(&c.scratch[0], col, ld, got, s.c0, s.c1)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: dx[%d] = %v, want %v", s, i, got[i], want[i])
			}
		}
	}
}

// TestCopyRows16s2: the stride-2 im2col panel copy gives each row the 16
// floats at c0, c0+2, …, c0+14 and c1, …, c1+14 past its offset, NaN
// payloads and −0 kept, for runs of 16 (c1 = c0+16) and two of 8, with
// the last row's last float the array's last (the masked loads read no
// further).
func TestCopyRows16s2(t *testing.T) {
	if !useAVX512 {
		t.Skip("AVX-512 only")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	for _, cs := range [][2]int{{0, 16}, {3, 19}, {1, 40}, {5, 6}} {
		c0, c1 := cs[0], cs[1]
		offs := []int{0, 7, 50, 51, 100}
		src := randF32(rng, offs[len(offs)-1]+c1+15)
		src[c0] = math.Float32frombits(0x7fc01234)
		src[c1+2] = float32(math.Copysign(0, -1))
		dst := make([]float32, 16*len(offs))
		copyRows16s2AVX512(&dst[0], &src[0], &offs[0], len(offs), c0, c1, &evenLanes[0])
		for q, o := range offs {
			for i := 0; i < 8; i++ {
				for h, c := range []int{c0, c1} {
					got, want := dst[16*q+8*h+i], src[o+c+2*i]
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("c0 %d c1 %d: row %d lane %d = %v, want %v", c0, c1, q, 8*h+i, got, want)
					}
				}
			}
		}
	}
}

// TestStride2PanelsSameBits: a stride-2 convolution whose panels are runs
// at stride 2 (output rows of 8 and of 16 or more; 1x1, 3x3, 7x7) gives,
// forward, the bits of the same panels gathered value by value.
func TestStride2PanelsSameBits(t *testing.T) {
	if !useAVX512 {
		t.Skip("AVX-512 only")
	}
	for _, s := range []struct{ B, Cin, H, W, Cout, K, P int }{
		{3, 5, 16, 16, 20, 3, 1}, {2, 4, 33, 35, 8, 3, 1}, {4, 16, 32, 32, 32, 1, 0}, {2, 3, 40, 40, 16, 7, 3},
	} {
		c, err := NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, s.K, 2, s.P, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(c.kindFwd, panelStride2) {
			t.Fatalf("%+v: no stride-2 panel", s)
		}
		rng := rand.New(rand.NewPCG(uint64(s.H), uint64(s.Cin)))
		x, w := randF32(rng, c.InLen()), randF32(rng, s.Cout*s.Cin*s.K*s.K)
		run := func() []float32 {
			y := make([]float32, c.OutLen())
			c.Forward(x, w, y)
			return y
		}
		y1 := run()
		kinds := slices.Clone(c.kindFwd)
		for i, k := range c.kindFwd {
			if k == panelStride2 {
				c.kindFwd[i] = panelGather
			}
		}
		y0 := run()
		c.kindFwd = kinds
		for i := range y1 {
			if math.Float32bits(y1[i]) != math.Float32bits(y0[i]) {
				t.Fatalf("%+v: y[%d] = %v with stride-2 panels, %v gathered", s, i, y1[i], y0[i])
			}
		}
	}
}
