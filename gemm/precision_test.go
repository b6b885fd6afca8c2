package gemm

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// roundRef is the rounding by its definition, not by bit tricks: the
// nearest multiple, ties to even, of the quantum of x's binade with keep
// mantissa bits (the subnormals' quantum below float32's smallest normal
// binade), computed exactly in float64; past float32's range, ±Inf. A NaN
// becomes the same NaN with its quiet bit set.
func roundRef(x float32, keep int) float32 {
	f := float64(x)
	switch {
	case math.IsNaN(f):
		return math.Float32frombits(math.Float32bits(x) | 0x00400000)
	case math.IsInf(f, 0), f == 0:
		return x
	}
	e := max(math.Ilogb(f), -126)
	q := math.Ldexp(1, e-keep)
	r := math.RoundToEven(f/q) * q
	if math.Abs(r) >= math.Ldexp(1, 128) {
		return float32(math.Copysign(math.Inf(1), f))
	}
	return float32(r) // exact: keep+1 significant bits within float32's exponent range
}

// roundEdges are the bit patterns where rounding goes wrong if it does:
// zeros, subnormals and their ties, the smallest normal, ties at 1 for both
// widths, the largest finite (which rounds to Inf), the largest that does
// not, infinities and NaNs, signalling and quiet, of both signs.
func roundEdges() []uint32 {
	var e []uint32
	for _, u := range []uint32{
		0, 1, 2, 0x0000_1000, 0x0000_0fff, 0x0000_1fff, 0x0000_2000, 0x0000_3000, 0x0000_8000, 0x0001_8000, 0x0000_7fff,
		0x007f_ffff, 0x0080_0000, 0x0080_1000, 0x0080_3000, 0x0080_8000, 0x0081_8000,
		0x3f80_0000, 0x3f80_1000, 0x3f80_3000, 0x3f80_1001, 0x3f80_0fff, 0x3f80_8000, 0x3f81_8000, 0x3f80_8001, 0x3f80_7fff,
		0x7f7f_ffff, 0x7f7f_efff, 0x7f7f_f000, 0x7f7f_7fff, 0x7f7f_8000, 0x7f7e_ffff,
		0x7f80_0000, 0x7f80_0001, 0x7fa0_0000, 0x7fc0_0000, 0x7fff_ffff, 0x7f80_ffff,
	} {
		e = append(e, u, u|0x8000_0000)
	}
	return e
}

func roundPatterns(n int) []uint32 {
	rng := rand.New(rand.NewPCG(23, 24))
	p := roundEdges()
	for range n {
		p = append(p, rng.Uint32())
	}
	return p
}

func randomPatterns() int {
	if testing.Short() {
		return 1 << 20
	}
	return 4 << 20
}

// TestRoundMatchesDefinition: RoundTF32 and RoundBF16 give roundRef's bits
// on the edge cases and a few million random bit patterns.
func TestRoundMatchesDefinition(t *testing.T) {
	for _, u := range roundPatterns(randomPatterns()) {
		x := math.Float32frombits(u)
		for _, c := range []struct {
			name  string
			round func(float32) float32
			keep  int
		}{{"RoundTF32", RoundTF32, 10}, {"RoundBF16", RoundBF16, 7}} {
			got, want := math.Float32bits(c.round(x)), math.Float32bits(roundRef(x, c.keep))
			if got != want {
				t.Fatalf("%s(%#08x = %g) = %#08x, want %#08x", c.name, u, x, got, want)
			}
		}
	}
	// Spot checks of the rule itself, so that roundRef cannot be wrong alike.
	for _, c := range []struct {
		in, tf32, bf16 uint32
	}{
		{0x3f80_1000, 0x3f80_0000, 0x3f80_0000}, // 1 + half a TF32 ulp: a tie, to even (1)
		{0x3f80_3000, 0x3f80_4000, 0x3f80_0000}, // 1 + 1.5 TF32 ulps: a tie, to even (up)
		{0x3f81_8000, 0x3f81_8000, 0x3f82_0000}, // 1 + 1.5 bf16 ulps: a tie, up to even
		{0x7f7f_ffff, 0x7f80_0000, 0x7f80_0000}, // the largest float32: past both, Inf
		{0x7f80_0001, 0x7fc0_0001, 0x7fc0_0001}, // a signalling NaN: quiet, payload kept
		{0x0000_0001, 0x0000_0000, 0x0000_0000}, // the smallest subnormal: to 0
		{0x8000_3000, 0x8000_4000, 0x8000_0000}, // a subnormal tie, sign kept
	} {
		x := math.Float32frombits(c.in)
		if g := math.Float32bits(RoundTF32(x)); g != c.tf32 {
			t.Errorf("RoundTF32(%#08x) = %#08x, want %#08x", c.in, g, c.tf32)
		}
		if g := math.Float32bits(RoundBF16(x)); g != c.bf16 {
			t.Errorf("RoundBF16(%#08x) = %#08x, want %#08x", c.in, g, c.bf16)
		}
	}
}

// TestRoundMatchesCudasim: the conversions of the cuBLAS stand-in
// (cudaops/cudasim/fp.h), compiled here, give the same bits as RoundTF32
// and RoundBF16: the CPU engine is the reference the GPU's tf32 and bf16
// steps are checked against, so the two must round alike.
func TestRoundMatchesCudasim(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to build cudasim's fp.h")
	}
	hdr, err := filepath.Abs("../cudaops/cudasim/fp.h")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hdr); err != nil {
		t.Skipf("no %s: %v", hdr, err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "round.cc")
	prog := `#include "` + hdr + `"
#include <cstdio>
// Reads little-endian float32 bit patterns on stdin; writes each one's
// round_mantissa(x, 10) and round_mantissa(x, 7) on stdout.
int main() {
	float x, out[2];
	while (fread(&x, 4, 1, stdin) == 1) {
		out[0] = cudasim::round_mantissa(x, 10);
		out[1] = cudasim::round_mantissa(x, 7);
		fwrite(out, 4, 2, stdout);
	}
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "round")
	if out, err := exec.Command(cxx, "-O1", "-std=c++17", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	pats := roundPatterns(randomPatterns())
	in := make([]byte, 4*len(pats))
	for i, u := range pats {
		binary.LittleEndian.PutUint32(in[4*i:], u)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	if len(out) != 8*len(pats) {
		t.Fatalf("fp.h program wrote %d bytes for %d patterns, want %d", len(out), len(pats), 8*len(pats))
	}
	for i, u := range pats {
		x := math.Float32frombits(u)
		tf, bf := binary.LittleEndian.Uint32(out[8*i:]), binary.LittleEndian.Uint32(out[8*i+4:])
		if g := math.Float32bits(RoundTF32(x)); g != tf {
			t.Fatalf("RoundTF32(%#08x) = %#08x, fp.h round_mantissa(x, 10) = %#08x", u, g, tf)
		}
		if g := math.Float32bits(RoundBF16(x)); g != bf {
			t.Fatalf("RoundBF16(%#08x) = %#08x, fp.h round_mantissa(x, 7) = %#08x", u, g, bf)
		}
	}
}

func TestParsePrecision(t *testing.T) {
	for _, p := range Precisions {
		got, err := ParsePrecision(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	for _, s := range []string{"", "fp16", "FP32", "bf16 ", "auto", "float32"} {
		if _, err := ParsePrecision(s); err == nil {
			t.Errorf("ParsePrecision(%q): no error", s)
		} else if want := "fp32, tf32, bf16"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("ParsePrecision(%q): %q does not name the choices %q", s, err, want)
		}
	}
}

func rounded(p Precision, s []float32) []float32 {
	r := slices.Clone(s)
	RoundSlice(p, r)
	return r
}

// TestSgemmPrecIsSgemmOfRoundedInputs: at every precision each entry point
// gives, bit for bit, Sgemm's (FP32) result on inputs rounded beforehand:
// the rounding happens on every packed block, A's and B's, on both kernel
// paths, and nothing else changes (the FP32 sums are untouched). The
// shapes pack A and B in several pieces (packARounded, packBRounded), of
// one panel and of many, the last one partial.
func TestSgemmPrecIsSgemmOfRoundedInputs(t *testing.T) {
	defer SetFastBF16(SetFastBF16(false)) // the reference: rounding while packing, bit for bit
	rng := rand.New(rand.NewPCG(5, 6))
	defer func(k kernelFunc, w wideKernel) { kernel, wide = k, w }(kernel, wide)
	var pa PackedA
	for name, kf := range kernels() {
		kernel, wide = kf.k, kf.w
		for _, s := range [][3]int{{1, 1, 1}, {7, 17, 5}, {13, 33, 2*kc + 1}, {mc + 7, 40, 9}, {30, 70, 300}, {20, 500, 9}, {200, 17, 40}} {
			m, n, k := s[0], s[1], s[2]
			for _, p := range Precisions {
				for _, ta := range []bool{false, true} {
					for _, tb := range []bool{false, true} {
						lda, ldb, ldc := k+1, n+3, n+1
						if ta {
							lda = m + 2
						}
						if tb {
							ldb = k + 2
						}
						a, b := randSlice(rng, (m+k)*lda), randSlice(rng, (k+n)*ldb)
						c0 := randSlice(rng, m*ldc)
						want := slices.Clone(c0)
						Sgemm(ta, tb, m, n, k, 0.75, rounded(p, a), lda, rounded(p, b), ldb, 0.5, want, ldc)
						got := map[string][]float32{}
						run := func(what string, f func(c []float32)) {
							c := slices.Clone(c0)
							f(c)
							got[what] = c
						}
						run("SgemmPrec", func(c []float32) { SgemmPrec(p, ta, tb, m, n, k, 0.75, a, lda, b, ldb, 0.5, c, ldc) })
						run("SgemmPanelsPrec", func(c []float32) {
							SgemmPanelsPrec(p, ta, m, n, k, 0.75, a, lda, &matrixB{b, ldb, tb}, 0.5, c, ldc)
						})
						PackAPrec(&pa, p, ta, m, k, a, lda)
						if pa.Precision() != p {
							t.Fatalf("PackAPrec(%v): packed at %v", p, pa.Precision())
						}
						run("SgemmPacked", func(c []float32) { SgemmPacked(&pa, tb, n, 0.75, b, ldb, 0.5, c, ldc) })
						run("SgemmPackedPanels", func(c []float32) { SgemmPackedPanels(&pa, n, 0.75, &matrixB{b, ldb, tb}, 0.5, c, ldc) })
						for what, c := range got {
							if !slices.Equal(c, want) {
								t.Fatalf("%s kernel, %v, m=%d n=%d k=%d transA=%v transB=%v: %s differs from Sgemm on rounded inputs",
									name, p, m, n, k, ta, tb, what)
							}
						}
					}
				}
			}
		}
	}
}

// TestSgemmPrecErrorBound: at each precision the product is within the
// float32 accumulation bound of the exact (float64) product of the rounded
// inputs, and at tf32 and bf16 it is not the product of the unrounded
// ones. The bound: C = alpha·Σ_p a_p·b_p + beta·c is k products summed and
// two more operations, each rounding once with unit roundoff u = 2⁻²⁴ (an
// FMA rounds once for two), so |Ĉ − C| ≤ γ(k+2)·(|alpha|·Σ|a_p·b_p| +
// |beta·c|), γ(n) = n·u/(1 − n·u) (Higham, Accuracy and Stability of
// Numerical Algorithms, §3.1); the products of rounded inputs are exact in
// float64 (at most 24+24 significant bits).
func TestSgemmPrecErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const u = 1.0 / (1 << 24)
	gamma := func(n int) float64 { return float64(n) * u / (1 - float64(n)*u) }
	for _, s := range [][3]int{{6, 16, 7}, {13, 33, 2*kc + 1}, {40, 50, 700}} {
		m, n, k := s[0], s[1], s[2]
		a, b, c0 := randSlice(rng, m*k), randSlice(rng, k*n), randSlice(rng, m*n)
		alpha, beta := float32(1.25), float32(-0.5)
		abs := func(s []float32) []float32 {
			r := make([]float32, len(s))
			for i, v := range s {
				r[i] = float32(math.Abs(float64(v)))
			}
			return r
		}
		var fp32 []float32
		for _, p := range Precisions {
			ar, br := rounded(p, a), rounded(p, b)
			exact := naive(false, false, m, n, k, alpha, ar, k, br, n, beta, c0, n)
			mag := naive(false, false, m, n, k, float32(math.Abs(float64(alpha))), abs(ar), k, abs(br), n, float32(math.Abs(float64(beta))), abs(c0), n)
			unrounded := naive(false, false, m, n, k, alpha, a, k, b, n, beta, c0, n)
			c := slices.Clone(c0)
			SgemmPrec(p, false, false, m, n, k, alpha, a, k, b, n, beta, c, n)
			outside := 0 // elements beyond the bound around the unrounded product
			for i := range c {
				bound := gamma(k+2) * mag[i]
				if d := math.Abs(float64(c[i]) - exact[i]); d > bound {
					t.Fatalf("%v, m=%d n=%d k=%d: C[%d] = %v is %g from the exact product of rounded inputs %v, bound %g", p, m, n, k, i, c[i], d, exact[i], bound)
				}
				if math.Abs(float64(c[i])-unrounded[i]) > bound {
					outside++
				}
			}
			switch {
			case p == FP32:
				fp32 = c
			case outside == 0 || slices.Equal(c, fp32):
				t.Errorf("%v, m=%d n=%d k=%d: every element is within fp32's bound of the unrounded product: the inputs were not rounded", p, m, n, k)
			}
		}
	}
}

// TestChooseFastBF16: the VDPBF16PS kernels are the bf16 default on AMD
// only (they measured 0.55x of the fp32 kernels on an Intel Xeon), and
// $STOKE_GEMM_BF16 overrides that either way; a bad value is named and
// ignored.
func TestChooseFastBF16(t *testing.T) {
	for _, c := range []struct {
		env, vendor string
		fast        bool
		why         string
	}{
		{"", "AuthenticAMD", true, ""},
		{"auto", "AuthenticAMD", true, ""},
		{"", "GenuineIntel", false, "(GenuineIntel) the VDPBF16PS kernels measured slower"},
		{"vdpbf16ps", "GenuineIntel", true, ""},
		{"reference", "AuthenticAMD", false, "STOKE_GEMM_BF16=reference"},
		{"fast", "AuthenticAMD", true, `STOKE_GEMM_BF16="fast" ignored`},
	} {
		fast, why := chooseFastBF16(c.env, c.vendor)
		if fast != c.fast || !strings.Contains(why, c.why) || (c.why == "" && why != "") {
			t.Errorf("STOKE_GEMM_BF16=%q on %s: fast=%v why %q; want fast=%v and %q", c.env, c.vendor, fast, why, c.fast, c.why)
		}
	}
	if HasBF16() && FastBF16() != (fastBF16Default && fastBF16.Load()) {
		t.Errorf("FastBF16() = %v with the default %v", FastBF16(), fastBF16Default)
	}
}

// claimedPanels is a stored op(B) that says it is rounded to prec.
type claimedPanels struct {
	matrixB
	prec Precision
}

func (c *claimedPanels) RoundedTo() Precision { return c.prec }

// TestRoundedPanelsAreNotRoundedAgain: a RoundedPanels at the product's
// precision is packed as it is (B values it claims rounded but are not
// stay unrounded: the product is Sgemm's on rounded A and that B), one at
// another precision is rounded as any Panels is; on B rounded beforehand
// both give the bits of plain Panels.
func TestRoundedPanelsAreNotRoundedAgain(t *testing.T) {
	defer SetFastBF16(SetFastBF16(false))
	rng := rand.New(rand.NewPCG(11, 12))
	m, n, k := 13, 70, 300
	a, b := randSlice(rng, m*k), randSlice(rng, k*n)
	var pa PackedA
	for _, p := range []Precision{TF32, BF16} {
		other := TF32
		if p == TF32 {
			other = BF16
		}
		products := func(b Panels) map[string][]float32 {
			out := map[string][]float32{}
			c := make([]float32, m*n)
			SgemmPanelsPrec(p, false, m, n, k, 1, a, k, b, 0, c, n)
			out["SgemmPanelsPrec"] = c
			PackAPrec(&pa, p, false, m, k, a, k)
			c = make([]float32, m*n)
			SgemmPackedPanels(&pa, n, 1, b, 0, c, n)
			out["SgemmPackedPanels"] = c
			return out
		}
		for _, c := range []struct {
			name    string
			b       []float32
			claim   Precision
			wantB   []float32
			rounded bool
		}{
			{"unrounded B claimed at the product's precision", b, p, b, false},
			{"unrounded B claimed at another precision", b, other, rounded(p, b), false},
			{"rounded B claimed", rounded(p, b), p, rounded(p, b), true},
		} {
			want := make([]float32, m*n)
			Sgemm(false, false, m, n, k, 1, rounded(p, a), k, c.wantB, n, 0, want, n)
			for what, got := range products(&claimedPanels{matrixB{c.b, n, false}, c.claim}) {
				if !slices.Equal(got, want) {
					t.Errorf("%v, %s: %s is not Sgemm's on rounded A and that B", p, c.name, what)
				}
			}
			if c.rounded {
				for what, got := range products(&matrixB{c.b, n, false}) {
					if !slices.Equal(got, want) {
						t.Errorf("%v, %s: %s differs from plain Panels", p, c.name, what)
					}
				}
			}
		}
	}
}
