package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// bf16Emu are the bf16 kernels written in Go as Intel's SDM defines
// VDPBF16PS and VCVTNE2PS2BF16 (DAZ, FTZ, round to nearest even; per lane
// the odd product is added first, then the even one), so that the blocking
// and packing of the fast path are tested on any CPU, and the assembly
// against the definition where the CPU has it.
var bf16Emu = bf16Kernels{
	k32:   [3]bf16KernelFunc{bf16EmuTile(4, 32), bf16EmuTile(8, 32), bf16EmuTile(12, 32)},
	k16:   [3]bf16KernelFunc{bf16EmuTile(4, 16), bf16EmuTile(8, 16), bf16EmuTile(12, 16)},
	pairs: bf16EmuPairs,
	pairRows: func(dst *uint32, dstride int, src *float32, offs *int, kb, c, limit int) bool {
		panel := make([]float32, kb*nr)
		for q, o := range unsafe.Slice(offs, kb) {
			if o+c < 0 || o+c > limit {
				return false
			}
			copy(panel[q*nr:(q+1)*nr], unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*(o+c))), nr))
		}
		bf16EmuPairs(dst, dstride, &panel[0], kb)
		return true
	},
	row: func(dst *uint32, src *float32, n int) {
		d, s := unsafe.Slice(dst, n/2), unsafe.Slice(src, n)
		for q := range d {
			d[q] = bf16BitsDAZ(s[2*q]) | bf16BitsDAZ(s[2*q+1])<<16
		}
	},
}

const minNormal32 = 0x1p-126

// daz is a bf16 (low 16 bits) as fp32, denormals as zero.
func daz(h uint32) float32 {
	if h&0x7f80 == 0 {
		h &= 0x8000
	}
	return math.Float32frombits(h << 16)
}

// ftz flushes a denormal fp32 to zero of its sign.
func ftz(f float32) float32 {
	if f != 0 && math.Abs(float64(f)) < minNormal32 {
		return float32(math.Copysign(0, float64(f)))
	}
	return f
}

func bf16EmuTile(rows, cols int) bf16KernelFunc {
	return func(kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32) {
		bf16EmuKernel(rows, cols, kp, a, b, c, ldc, alpha, beta)
	}
}

func bf16EmuKernel(rows, cols, kp int, a, b *uint32, c *float32, ldc int, alpha, beta float32) {
	ap := unsafe.Slice(a, (kp-1)*bmr+rows)
	bp := unsafe.Slice(b, kp*cols)
	cs := unsafe.Slice(c, (rows-1)*ldc+cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			var acc float32
			for p := 0; p < kp; p++ {
				x, y := ap[p*bmr+i], bp[p*cols+j]
				acc = ftz(float32(float64(acc) + float64(daz(x>>16))*float64(daz(y>>16))))
				acc = ftz(float32(float64(acc) + float64(daz(x&0xffff))*float64(daz(y&0xffff))))
			}
			t := alpha * acc
			if beta != 0 {
				t = float32(math.FMA(float64(beta), float64(cs[i*ldc+j]), float64(t)))
			}
			cs[i*ldc+j] = t
		}
	}
}

func bf16EmuPairs(dst *uint32, dstride int, src *float32, kb int) {
	s := unsafe.Slice(src, kb*nr)
	cvt := bf16BitsDAZ
	for p := 0; p < (kb+1)/2; p++ {
		d := unsafe.Slice((*uint32)(unsafe.Add(unsafe.Pointer(dst), p*dstride)), nr)
		for j := range d {
			var hi uint32
			if 2*p+1 < kb {
				hi = cvt(s[(2*p+1)*nr+j])
			}
			d[j] = cvt(s[2*p*nr+j]) | hi<<16
		}
	}
}

// TestBF16RoundRNE: bf16BitsRNE gives the nearer of the two bf16 values
// around x, the even one on a tie, infinity past the largest, a quiet NaN
// for a NaN; over random bit patterns and the edges.
func TestBF16RoundRNE(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	bits := []uint32{0, 0x80000000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff, 0x7f7f8000, 0x7f7f7fff,
		0xff7fffff, 0x7f800000, 0xff800000, 0x7f800001, 0x7fc00000, 0xffa00000, 0x00000001, 0x007fffff, 0x00008000, 0x00018000}
	for range 20000 {
		bits = append(bits, rng.Uint32())
	}
	for _, u := range bits {
		x := math.Float32frombits(u)
		h := bf16BitsRNE(x)
		if h>>16 != 0 {
			t.Fatalf("%#08x: %#x has bits above 16", u, h)
		}
		got := math.Float32frombits(h << 16)
		if math.IsNaN(float64(x)) {
			if !math.IsNaN(float64(got)) || h&0x40 == 0 || h&0x8000 != (u>>16)&0x8000 {
				t.Fatalf("NaN %#08x: got %#04x, want a quiet NaN of the same sign", u, h)
			}
			continue
		}
		if u&0x7fffffff == 0x7f800000 { // infinity stays
			if got != x {
				t.Fatalf("%g rounded to %g", x, got)
			}
			continue
		}
		// The two candidates: lo toward zero, hi one bf16 step away (2^128,
		// that is infinity, past the largest), the even one has bit 16 clear.
		lo := float64(math.Float32frombits(u &^ 0xffff))
		up := u&^0xffff + 0x10000
		hi := float64(math.Float32frombits(up))
		if up&0x7fffffff == 0x7f800000 {
			hi = math.Copysign(0x1p128, float64(x))
		}
		xv := float64(x)
		dl, dh := math.Abs(xv-lo), math.Abs(hi-xv)
		want := hi
		if dl < dh || dl == dh && (u>>16)&1 == 0 {
			want = lo
		}
		if math.Abs(want) == 0x1p128 {
			want = math.Copysign(math.Inf(1), want)
		}
		if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(float64(x)) {
			t.Fatalf("%#08x (%g): rounded to %g (%#04x), want %g", u, x, got, h, want)
		}
	}
}

// TestBF16RoundSlice: the vector rounding of the fallback (AVX2 where the
// CPU has it) gives bf16RoundRNE's bits, NaN and infinity included, on
// lengths around its 8-float step.
func TestBF16RoundSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 8))
	for _, n := range []int{0, 1, 7, 8, 9, 33, 1000} {
		s := make([]float32, n)
		for i := range s {
			s[i] = math.Float32frombits(rng.Uint32())
		}
		for i, u := range []uint32{0x7f800000, 0xff800000, 0x7f800001, 0xffc00001, 0x7f7fffff, 0x3f808000, 0x3f818000, 0x00008000} {
			if i < n {
				s[(i*37)%n] = math.Float32frombits(u)
			}
		}
		want := slices.Clone(s)
		for i, v := range want {
			want[i] = bf16RoundRNE(v)
		}
		bf16RoundSlice(s)
		if i := bf16FirstDiff(s, want); i >= 0 {
			t.Fatalf("n=%d: [%d] = %#08x, want %#08x", n, i, math.Float32bits(s[i]), math.Float32bits(want[i]))
		}
	}
}

// bf16Ref is the float64 product over op(A) and op(B) rounded to bf16, and
// per element the bound of the package comment: tol = (k + 2·nb + 3)·u·
// (|alpha|·S + |beta·c|) + |alpha|·(D + (k+1)·2^-126) + 2^-140.
func bf16Ref(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, tol []float64) {
	want, tol = make([]float64, m*n), make([]float64, m*n)
	nb := (k + kStep(k) - 1) / kStep(k)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, abs, dropped float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				tiny := math.Abs(float64(av)) < minNormal32 || math.Abs(float64(bv)) < minNormal32
				x := float64(bf16RoundRNE(av)) * float64(bf16RoundRNE(bv))
				s += x
				abs += math.Abs(x)
				if tiny || math.Abs(float64(bf16RoundRNE(av))) < minNormal32 || math.Abs(float64(bf16RoundRNE(bv))) < minNormal32 {
					dropped += math.Abs(x)
				}
			}
			v := float64(alpha) * s
			bc := 0.0
			if beta != 0 {
				bc = float64(beta) * float64(c[i*ldc+j])
				v += bc
			}
			want[i*n+j] = v
			aa := math.Abs(float64(alpha))
			tol[i*n+j] = float64(k+2*nb+3)*0x1p-24*(aa*abs+math.Abs(bc)) + aa*(dropped+float64(k+1)*minNormal32) + 0x1p-140
		}
	}
	return want, tol
}

// bf16Paths are the ways to the product tested here: the chosen kernels
// (the assembly where HasBF16), the Go definition of them, the fallback.
func bf16Paths() map[string]*bf16Kernels {
	p := map[string]*bf16Kernels{"emulated": &bf16Emu, "fallback": nil}
	if HasBF16() {
		p["vdpbf16ps"] = &bf16Kernel
	}
	return p
}

// runBF16 computes the product on path ks through each entry point, into
// copies of c0.
func runBF16(ks *bf16Kernels, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c0 []float32, ldc int) map[string][]float32 {
	out := map[string][]float32{}
	for _, e := range []string{"SgemmBF16", "SgemmPanelsBF16", "SgemmPackedBF16", "SgemmPackedPanelsBF16"} {
		c := slices.Clone(c0)
		s := bf16Pool.Get().(*bf16Scratch)
		mat := &matrixB{b, ldb, transB}
		switch e {
		case "SgemmBF16", "SgemmPanelsBF16":
			if begin(e, transA, m, n, k, alpha, a, lda, beta, c, ldc) {
				bf16Multiply(s, ks, transA, m, n, k, alpha, a, lda, mat, beta, c, ldc)
			}
		default:
			var pa PackedABF16
			packABF16(&pa, ks, transA, m, k, a, lda)
			if beginRows(e, pa.m, n, alpha, beta, c, ldc) {
				bf16PackedMultiply(s, &pa, e, 0, pa.m, n, alpha, mat, beta, c, ldc)
			}
		}
		bf16Pool.Put(s)
		out[e] = c
	}
	return out
}

// TestSgemmBF16Bound: every path and entry point is within the stated
// bound of the float64 product over bf16-rounded inputs, over edges in m,
// n (tiles of 12, 8 and 4 rows, 32 and 16 columns, whole and partial,
// past mc and nc), k (1, odd, past KC, odd
// blocks), both transposes, alpha and beta of 0, 1 and others, ldc > n
// (the padding untouched), and NaN in C where beta is 0 (not read).
func TestSgemmBF16Bound(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 2))
	shapes := [][3]int{
		{1, 1, 1}, {12, 32, 1}, {12, 32, 2}, {12, 16, 3}, {13, 33, 7}, {11, 31, 5}, {12, 17, 4},
		{24, 64, 16}, {23, 65, 9}, {25, 48, 27}, {bmc + 7, 3*32 + 17, kc + 5}, {bmc + 13, 40, 2*kc + 1},
		{5, nc + 40, 3}, {30, 20, 577}, {64, 288, 64}, {20, 33, 10}, {8, 16, 6},
	}
	alphaBeta := [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0.3, 0}, {1, -1.25}, {0, 0.5}}
	paths := bf16Paths()
	for si, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		if raceEnabled && m*n*k > 100000 {
			continue // slow under the race detector (TestBF16Concurrent is its test)
		}
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				ab := alphaBeta[(si+btoi(ta)+2*btoi(tb))%len(alphaBeta)]
				alpha, beta := ab[0], ab[1]
				lda, ldb, ldc := k+3, n+2, n+1
				ar, br := m, k
				if ta {
					lda, ar = m+1, k
				}
				if tb {
					ldb, br = k+2, n
				}
				a := randSlice(rng, ar*lda)
				b := randSlice(rng, br*ldb)
				c0 := randSlice(rng, m*ldc)
				if beta == 0 {
					for i := range c0 {
						if i%ldc < n {
							c0[i] = float32(math.NaN())
						}
					}
				}
				want, tol := bf16Ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, ldc)
				for pname, ks := range paths {
					if pname == "emulated" && HasBF16() && m*n*k > 200000 {
						continue // slow; the assembly is the definition (TestBF16KernelsAsDefined)
					}
					for e, c := range runBF16(ks, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, ldc) {
						where := fmt.Sprintf("%s %s m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v", pname, e, m, n, k, ta, tb, alpha, beta)
						checkBF16(t, where, c, c0, want, tol, m, n, ldc)
					}
				}
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkBF16(t *testing.T, where string, c, c0 []float32, want, tol []float64, m, n, ldc int) {
	t.Helper()
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= n {
				if math.Float32bits(got) != math.Float32bits(c0[i*ldc+j]) {
					t.Fatalf("%s: C[%d][%d] past n changed: %v, was %v", where, i, j, got, c0[i*ldc+j])
				}
				continue
			}
			w, e := want[i*n+j], tol[i*n+j]
			if d := math.Abs(float64(got) - w); !(d <= e) {
				t.Fatalf("%s: C[%d][%d] = %v, want %v within %.3g (off by %.3g)", where, i, j, got, w, e, d)
			}
		}
	}
}

// TestBF16Tiny: denormal and tiny inputs, and sums that pass through the
// denormal range, stay within the bound (the dropped terms and flushed
// sums of the fast path's DAZ/FTZ are its absolute part).
func TestBF16Tiny(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 3))
	m, n, k := 13, 35, 41
	gen := func(len int) []float32 {
		s := make([]float32, len)
		for i := range s {
			switch rng.IntN(4) {
			case 0: // fp32 denormal
				s[i] = math.Float32frombits(rng.Uint32N(0x800000) | rng.Uint32()&0x80000000)
			case 1: // just above 2^-126
				s[i] = float32(minNormal32 * (1 + rng.Float64()) * float64(1-2*rng.IntN(2)))
			case 2: // a scale that makes products near 2^-126
				s[i] = float32(0x1p-63 * rng.NormFloat64())
			default:
				s[i] = float32(rng.NormFloat64())
			}
		}
		return s
	}
	a, b := gen(m*k), gen(k*n)
	c0 := gen(m * n)
	for _, beta := range []float32{0, 1} {
		want, tol := bf16Ref(false, false, m, n, k, 1, a, k, b, n, beta, c0, n)
		for pname, ks := range bf16Paths() {
			for e, c := range runBF16(ks, false, false, m, n, k, 1, a, k, b, n, beta, c0, n) {
				checkBF16(t, fmt.Sprintf("%s %s beta=%v", pname, e, beta), c, c0, want, tol, m, n, n)
			}
		}
	}
}

// TestBF16KernelsAsDefined: where the CPU has AVX512_BF16, the assembly
// conversion gives VCVTNE2PS2BF16's bits (bf16Emu.pairs: RNE, denormals to
// zero, quiet NaN) for every kind of input, and the assembly kernels give
// the SDM's VDPBF16PS definition bit for bit on ordinary inputs, so the
// encodings and operand order are right.
func TestBF16KernelsAsDefined(t *testing.T) {
	if !HasBF16() {
		t.Skip("no AVX512_BF16 kernels on this CPU or OS")
	}
	rng := rand.New(rand.NewPCG(24, 4))
	for _, kb := range []int{1, 2, 3, 8, 17, kc} {
		src := make([]float32, kb*nr)
		for i := range src {
			src[i] = math.Float32frombits(rng.Uint32())
			if i%3 == 0 {
				src[i] = float32(rng.NormFloat64())
			}
		}
		src[0] = float32(math.Inf(-1))
		got := make([]uint32, (kb+1)/2*32)
		want := slices.Clone(got)
		bf16Kernel.pairs(&got[0], 128, &src[0], kb)
		bf16EmuPairs(&want[0], 128, &src[0], kb)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("bf16Pairs16 kb=%d: dword %d = %#08x, want %#08x (from %#08x, %#08x)", kb, i, got[i], want[i],
					math.Float32bits(src[(i/32*2)*nr+i%32%nr]), math.Float32bits(src[min(i/32*2+1, kb-1)*nr+i%32%nr]))
			}
		}
	}
	// bf16PairRows16: the same conversion of rows gathered by offset.
	for _, kb := range []int{1, 2, 3, 8, 17, kc} {
		src := make([]float32, 4096)
		for i := range src {
			src[i] = math.Float32frombits(rng.Uint32())
			if i%3 == 0 {
				src[i] = float32(rng.NormFloat64())
			}
		}
		offs := make([]int, kb)
		for q := range offs {
			offs[q] = rng.IntN(len(src)-nr-7) - 7
		}
		offs[kb-1] = len(src) - nr - 7 // the last row that fits
		got := make([]uint32, (kb+1)/2*32)
		want := slices.Clone(got)
		okGot := bf16Kernel.pairRows(&got[0], 128, &src[0], &offs[0], kb, 7, len(src)-nr)
		okWant := bf16Emu.pairRows(&want[0], 128, &src[0], &offs[0], kb, 7, len(src)-nr)
		if !okGot || !okWant {
			t.Fatalf("bf16PairRows16 kb=%d: ok %v, the definition %v, for rows inside src", kb, okGot, okWant)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("bf16PairRows16 kb=%d: dword %d = %#08x, want %#08x", kb, i, got[i], want[i])
			}
		}
		// One row a float too far, or before src: refused.
		for _, bad := range []int{len(src) - nr - 6, -8} {
			q := rng.IntN(kb)
			was := offs[q]
			offs[q] = bad
			if bf16Kernel.pairRows(&got[0], 128, &src[0], &offs[0], kb, 7, len(src)-nr) {
				t.Fatalf("bf16PairRows16 kb=%d: row %d at offset %d+7 of %d floats accepted", kb, q, bad, len(src))
			}
			offs[q] = was
		}
	}
	for _, n := range []int{32, 64, kc} {
		src := make([]float32, n)
		for i := range src {
			src[i] = math.Float32frombits(rng.Uint32())
			if i%3 == 0 {
				src[i] = float32(rng.NormFloat64())
			}
		}
		got, want := make([]uint32, n/2), make([]uint32, n/2)
		bf16Kernel.row(&got[0], &src[0], n)
		bf16Emu.row(&want[0], &src[0], n)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("bf16Row32 n=%d: dword %d = %#08x, want %#08x (from %#08x, %#08x)", n, i, got[i], want[i],
					math.Float32bits(src[2*i]), math.Float32bits(src[2*i+1]))
			}
		}
	}
	for _, kp := range []int{1, 2, 3, 64, 129} {
		for _, w := range []int{16, 32} {
			a := make([]uint32, kp*bmr)
			b := make([]uint32, kp*w)
			for i := range a {
				a[i] = bf16BitsRNE(float32(rng.NormFloat64())) | bf16BitsRNE(float32(rng.NormFloat64()))<<16
			}
			for i := range b {
				b[i] = bf16BitsRNE(float32(rng.NormFloat64())) | bf16BitsRNE(float32(rng.NormFloat64()))<<16
			}
			for r := range 3 {
				for _, ab := range [][2]float32{{1, 0}, {0.75, -1.5}} {
					ldc := w + 3
					c0 := randSlice(rng, bmr*ldc)
					got, want := slices.Clone(c0), slices.Clone(c0)
					k, e := bf16Kernel.k32[r], bf16Emu.k32[r]
					if w == 16 {
						k, e = bf16Kernel.k16[r], bf16Emu.k16[r]
					}
					k(kp, &a[0], &b[0], &got[0], ldc, ab[0], ab[1])
					e(kp, &a[0], &b[0], &want[0], ldc, ab[0], ab[1])
					if i := bf16FirstDiff(got, want); i >= 0 {
						t.Fatalf("%dx%d kernel kp=%d alpha=%v beta=%v: C[%d][%d] = %v (%#x), the definition gives %v (%#x)",
							4*r+4, w, kp, ab[0], ab[1], i/ldc, i%ldc, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestBF16FastMatchesFallback: the fast path (or its Go definition) and
// the fallback agree within twice the bound, on a conv-like shape, and
// results do not depend on the entry point (the same panels meet the same
// kernels).
func TestBF16FastMatchesFallback(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 5))
	m, n, k := 64, 300, 288
	a, b := randSlice(rng, m*k), randSlice(rng, k*n)
	c0 := randSlice(rng, m*n)
	_, tol := bf16Ref(false, false, m, n, k, 1, a, k, b, n, 0.5, c0, n)
	fb := runBF16(nil, false, false, m, n, k, 1, a, k, b, n, 0.5, c0, n)["SgemmBF16"]
	ks := &bf16Emu
	if HasBF16() {
		ks = &bf16Kernel
	}
	res := runBF16(ks, false, false, m, n, k, 1, a, k, b, n, 0.5, c0, n)
	for e, c := range res {
		if i := bf16FirstDiff(c, res["SgemmBF16"]); i >= 0 {
			t.Fatalf("%s differs from SgemmBF16 at %d: %v vs %v", e, i, c[i], res["SgemmBF16"][i])
		}
		for i := range c {
			if d := math.Abs(float64(c[i]) - float64(fb[i])); d > 2*tol[i] {
				t.Fatalf("%s: C[%d] = %v, the fallback gives %v: off by %.3g > 2·%.3g", e, i, c[i], fb[i], d, tol[i])
			}
		}
	}
}

// pairMatrix is a stored k×n B (not transposed) as a PairPanels that
// writes its full panels as pairs (PairWriter.Rows) except those whose
// index is a multiple of skip, left to PackB.
type pairMatrix struct {
	matrixB
	skip int
	offs []int
}

func (p *pairMatrix) PackPairs(w *PairWriter, pc, j, kb int) bool {
	if j+nr > p.ldb || (j/nr)%p.skip == 0 { // ldb is n: a partial panel

		return false
	}
	if cap(p.offs) < kb {
		p.offs = make([]int, kb)
	}
	offs := p.offs[:kb]
	for q := range offs {
		offs[q] = (pc + q) * p.ldb
	}
	w.Rows(p.b, offs, j)
	return true
}

// TestBF16PairPanelsSameBits: a PairPanels source gives the bits of the
// same B packed by PackB and converted, through SgemmPanelsBF16 and the
// pre-packed entry, on the assembly (where HasBF16) and its Go
// definition, over n with whole and partial 16- and 32-column blocks, k
// with odd rows and blocks past KC, and panels written either way in one
// block.
func TestBF16PairPanelsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 9))
	paths := map[string]*bf16Kernels{"emulated": &bf16Emu}
	if HasBF16() {
		paths["vdpbf16ps"] = &bf16Kernel
	}
	for name, ks := range paths {
		for _, s := range [][3]int{{5, 16, 3}, {13, 31, 1}, {12, 32, 17}, {20, 33, 8}, {7, 48, kc + 5}, {30, 100, 2*kc + 3}, {4, 300, 9}} {
			m, n, k := s[0], s[1], s[2]
			a, b := randSlice(rng, m*k), randSlice(rng, k*n)
			c0 := randSlice(rng, m*n)
			for _, skip := range []int{1 << 30, 3} {
				for _, packed := range []bool{false, true} {
					run := func(src Panels) []float32 {
						c := slices.Clone(c0)
						sc := bf16Pool.Get().(*bf16Scratch)
						defer bf16Pool.Put(sc)
						if !packed {
							sc.fast()
							bf16Blocks(sc, ks, nil, 0, false, m, n, k, 0.75, a, k, src, 0.5, c, n)
							return c
						}
						var pa PackedABF16
						packABF16(&pa, ks, false, m, k, a, k)
						bf16PackedMultiply(sc, &pa, "SgemmPackedPanelsBF16", 0, pa.m, n, 0.75, src, 0.5, c, n)
						return c
					}
					want := run(&matrixB{b, n, false})
					got := run(&pairMatrix{matrixB: matrixB{b, n, false}, skip: skip})
					if i := bf16FirstDiff(got, want); i >= 0 {
						t.Fatalf("%s m=%d n=%d k=%d skip=%d packed=%v: C[%d][%d] = %v, packed by PackB %v", name, m, n, k, skip, packed, i/n, i%n, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestBF16Concurrent: calls from many goroutines at once (the scratch
// pool shared) give each the result of a call alone (run with -race).
func TestBF16Concurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 6))
	m, n, k := 30, 70, 45
	a, b := randSlice(rng, m*k), randSlice(rng, k*n)
	want := make([]float32, m*n)
	SgemmBF16(false, false, m, n, k, 1, a, k, b, n, 0, want, n)
	var pa PackedABF16
	PackABF16(&pa, false, m, k, a, k)
	var wg sync.WaitGroup
	errs := make([]string, 8)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := make([]float32, m*n)
			for r := 0; r < 4; r++ {
				if g%2 == 0 {
					SgemmBF16(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
				} else {
					SgemmPackedBF16(&pa, false, n, 1, b, n, 0, c, n)
				}
				if i := bf16FirstDiff(c, want); i >= 0 {
					errs[g] = fmt.Sprintf("goroutine %d round %d: C[%d] = %v, want %v", g, r, i, c[i], want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
}

// TestBF16NoAllocs: steady-state calls allocate nothing, on the chosen
// path and the fallback (the scratch and the fallback's packed A pooled).
func TestBF16NoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	rng := rand.New(rand.NewPCG(24, 7))
	m, n, k := 20, 50, 33
	a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	mat := &matrixB{b, n, false}
	pairs := &pairMatrix{matrixB: *mat, skip: 2, offs: make([]int, k)}
	var pa PackedABF16
	PackABF16(&pa, false, m, k, a, k) // the first pack sizes it
	for name, f := range map[string]func(){
		"PackABF16+SgemmPackedBF16": func() {
			PackABF16(&pa, false, m, k, a, k)
			SgemmPackedBF16(&pa, false, n, 1, b, n, 0, c, n)
		},
		"SgemmBF16":                       func() { SgemmBF16(false, false, m, n, k, 1, a, k, b, n, 0, c, n) },
		"SgemmPanelsBF16":                 func() { SgemmPanelsBF16(false, m, n, k, 1, a, k, mat, 0, c, n) },
		"SgemmPanelsBF16 with PairPanels": func() { SgemmPanelsBF16(false, m, n, k, 1, a, k, pairs, 0, c, n) },
		"fallback": func() {
			s := bf16Pool.Get().(*bf16Scratch)
			bf16Multiply(s, nil, false, m, n, k, 1, a, k, mat, 0, c, n)
			bf16Pool.Put(s)
		},
	} {
		if allocs := testing.AllocsPerRun(20, f); allocs != 0 {
			t.Errorf("%s: %v allocations a call", name, allocs)
		}
	}
}

// TestBF16Name: the start-up line names the path taken, and holding
// AVX-512 off (as STOKE_GEMM=avx2 does) takes the fallback.
func TestBF16Name(t *testing.T) {
	name := BF16Name()
	if HasBF16() != strings.Contains(name, "VDPBF16PS") {
		t.Errorf("HasBF16() = %v, BF16Name() = %q", HasBF16(), name)
	}
	func() {
		defer func(w wideKernel) { wide = w }(wide)
		wide = wideKernel{}
		if HasBF16() {
			t.Errorf("HasBF16() with AVX-512 held off")
		}
		if n := BF16Name(); !strings.Contains(n, "rounded to bf16") || (cpuBF16 && !strings.Contains(n, "STOKE_GEMM=avx2")) {
			t.Errorf("BF16Name() with AVX-512 held off = %q", n)
		}
	}()
}

// TestBF16BadInput: wrong sizes and short slices panic with the function's
// name, as Sgemm's do.
func TestBF16BadInput(t *testing.T) {
	a, b, c := make([]float32, 12), make([]float32, 12), make([]float32, 12)
	for _, tc := range []struct {
		want string
		f    func()
	}{
		{"gemm.SgemmBF16: negative size", func() { SgemmBF16(false, false, -1, 2, 2, 1, a, 2, b, 2, 0, c, 2) }},
		{"B has 12 elements", func() { SgemmBF16(false, false, 2, 4, 4, 1, a, 4, b, 4, 0, c, 4) }},
		{"gemm.SgemmPanelsBF16: negative size", func() { SgemmPanelsBF16(false, 1, 1, -1, 1, a, 1, &matrixB{b, 1, false}, 0, c, 1) }},
		{"gemm.PackABF16: size", func() { PackABF16(&PackedABF16{}, false, 0, 1, a, 1) }},
		{"never packed", func() { SgemmPackedBF16(&PackedABF16{}, false, 1, 1, b, 1, 0, c, 1) }},
		{"gemm.SgemmPackedPanelsBF16: negative size", func() {
			var pa PackedABF16
			PackABF16(&pa, false, 1, 1, a, 1)
			SgemmPackedPanelsBF16(&pa, -1, 1, &matrixB{b, 1, false}, 0, c, 1)
		}},
		{"never packed", func() { SgemmPackedPanelsBF16(&PackedABF16{}, 1, 1, &matrixB{b, 1, false}, 0, c, 1) }},
		{"outside the 40 floats of src", func() {
			ks := &bf16Emu
			if HasBF16() {
				ks = &bf16Kernel
			}
			d := make([]uint32, 32)
			w := PairWriter{ks: ks, dst: &d[0], dstride: 128, kb: 2}
			w.Rows(make([]float32, 40), []int{0, 20}, 5) // the second row ends at 41
		}},
		{"2 row offsets for a panel of 3 rows", func() {
			w := PairWriter{ks: &bf16Emu, kb: 3}
			w.Rows(make([]float32, 40), []int{0, 1}, 0)
		}},
	} {
		func() {
			defer func() {
				if r := fmt.Sprint(recover()); !strings.Contains(r, tc.want) {
					t.Errorf("panic %q, want %q", r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}

// bf16FirstDiff is the first index where a and b differ in bits, or -1.
func bf16FirstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestBF16WordsAndPairPanel: the conversions other packages' bf16 kernels
// read (a plane as consecutive bf16s, a 16-column panel as pairs) give
// every float bf16BitsDAZ's bits in the stated place, through the AVX-512
// conversions where HasBF16 and the Go loops elsewhere, odd lengths and
// tails included, on values with ties, denormals, NaNs and infinities.
func TestBF16WordsAndPairPanel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 24))
	special := []float32{0x1p-130, -0x1p-140, float32(math.NaN()), float32(math.Inf(-1)), 1 + 0x1p-8, 1 + 3*0x1p-8, -0, 0x1.fffffep127}
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
			if rng.IntN(5) == 0 {
				v[i] = special[rng.IntN(len(special))]
			}
		}
		return v
	}
	for _, n := range []int{1, 2, 31, 32, 33, 64, 95, 1000} {
		src := vals(n)
		dst := make([]uint32, (n+1)/2)
		BF16Words(dst, src)
		for i, f := range src {
			if got, want := dst[i/2]>>(16*(i%2))&0xffff, bf16BitsDAZ(f); got != want {
				t.Fatalf("BF16Words, %d floats: word %d of %v = %#04x, want %#04x", n, i, f, got, want)
			}
		}
		if n%2 == 1 && dst[n/2]>>16 != 0 {
			t.Fatalf("BF16Words, %d floats: the odd last float's pair is %#04x, want 0", n, dst[n/2]>>16)
		}
	}
	for _, kb := range []int{1, 2, 7, 64, 129} {
		src := vals(16 * kb)
		dst := make([]uint32, 16*((kb+1)/2))
		BF16PairPanel(dst, src, kb)
		for q := 0; q < (kb+1)/2*2; q++ {
			for j := 0; j < 16; j++ {
				var want uint32
				if q < kb {
					want = bf16BitsDAZ(src[16*q+j])
				}
				if got := dst[16*(q/2)+j] >> (16 * (q % 2)) & 0xffff; got != want {
					t.Fatalf("BF16PairPanel, %d rows: row %d column %d = %#04x, want %#04x", kb, q, j, got, want)
				}
			}
		}
	}
}
