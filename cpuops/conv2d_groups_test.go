package cpuops

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Grouped convolution (nn.Conv2d's groups) against a float64 direct
// convolution written from its definition, and against PyTorch's
// F.conv2d(groups=) and its autograd gradients on the same inputs.

type groupedShape struct{ B, Cin, H, W, Cout, K, S, P, G int }

var groupedShapes = []groupedShape{
	{2, 3, 5, 5, 4, 3, 1, 1, 1},      // groups 1
	{3, 4, 7, 5, 6, 3, 1, 1, 2},      // odd sizes
	{2, 8, 9, 7, 8, 3, 2, 1, 4},      // stride 2
	{3, 8, 5, 5, 12, 1, 1, 0, 4},     // 1x1
	{2, 6, 7, 9, 4, 1, 2, 0, 2},      // 1x1 stride 2
	{2, 32, 5, 7, 32, 3, 1, 1, 32},   // depthwise: Cin = Cout = groups
	{3, 32, 7, 7, 64, 3, 2, 1, 32},   // depthwise, 2 outputs per group, stride 2
	{2, 64, 6, 5, 64, 3, 1, 1, 32},   // ResNeXt's 3x3: 2 channels per group
	{37, 8, 5, 5, 8, 3, 1, 1, 4},     // many samples per GEMM, a partial last group
	{2, 4, 20, 20, 4, 3, 1, 1, 2},    // one sample per GEMM, 16-wide runs
	{2, 4, 9, 9, 6, 5, 1, 2, 2},      // 5x5
	{3, 32, 9, 9, 32, 3, 2, 1, 32},   // depthwise stride 2, odd size
	{2, 16, 8, 8, 32, 3, 1, 1, 8},    // 8-wide rows
	{5, 128, 4, 4, 128, 3, 1, 1, 32}, // ResNeXt's 4x4 stage at 4 channels per group
}

// refGrouped is the grouped convolution and its gradients in float64 for
// the output gradient dy, with, for each output, the sum of the absolute
// values of its terms (the rounding bound's scale).
type refGrouped struct {
	y, dx, dw          []float64
	yAbs, dxAbs, dwAbs []float64
	ho, wo             int
}

func refConv2dGroups(s groupedShape, x, w, dy []float64) refGrouped {
	ho, wo := (s.H+2*s.P-s.K)/s.S+1, (s.W+2*s.P-s.K)/s.S+1
	cg, og := s.Cin/s.G, s.Cout/s.G
	r := refGrouped{ho: ho, wo: wo,
		y: make([]float64, s.B*s.Cout*ho*wo), dx: make([]float64, len(x)), dw: make([]float64, len(w))}
	r.yAbs, r.dxAbs, r.dwAbs = make([]float64, len(r.y)), make([]float64, len(x)), make([]float64, len(w))
	for n := 0; n < s.B; n++ {
		for co := 0; co < s.Cout; co++ {
			g := co / og
			for oy := 0; oy < ho; oy++ {
				for ox := 0; ox < wo; ox++ {
					yi := ((n*s.Cout+co)*ho+oy)*wo + ox
					d := dy[yi]
					for j := 0; j < cg; j++ {
						ci := g*cg + j
						for ky := 0; ky < s.K; ky++ {
							for kx := 0; kx < s.K; kx++ {
								iy, ix := oy*s.S-s.P+ky, ox*s.S-s.P+kx
								if iy < 0 || ix < 0 || iy >= s.H || ix >= s.W {
									continue
								}
								wi := ((co*cg+j)*s.K+ky)*s.K + kx
								xi := ((n*s.Cin+ci)*s.H+iy)*s.W + ix
								r.y[yi] += w[wi] * x[xi]
								r.yAbs[yi] += math.Abs(w[wi] * x[xi])
								r.dx[xi] += w[wi] * d
								r.dxAbs[xi] += math.Abs(w[wi] * d)
								r.dw[wi] += x[xi] * d
								r.dwAbs[wi] += math.Abs(x[xi] * d)
							}
						}
					}
				}
			}
		}
	}
	return r
}

// checkBound fails when got[i] is further from want[i] than float32
// summation of terms terms can be in any order: γ(n) = n·u/(1 − n·u) of
// the sum of their absolute values (Higham, Accuracy and Stability, §4.2),
// u = 2⁻²⁴, plus one rounding of each product (n + 1).
func checkBound(t *testing.T, what string, got []float32, want, abs []float64, terms int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	const u = 1.0 / (1 << 24)
	nu := float64(terms+1) * u
	gamma := nu / (1 - nu)
	for i := range got {
		d := math.Abs(float64(got[i]) - want[i])
		if bound := gamma*abs[i] + 1e-30; !(d <= bound) {
			t.Fatalf("%s[%d] = %.9g, want %.9g: off by %.3g, bound %.3g", what, i, got[i], want[i], d, bound)
		}
	}
}

func runGrouped(t *testing.T, s groupedShape, x, w, dy []float32) (y, dx, dw []float32) {
	t.Helper()
	c, err := NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, s.K, s.S, s.P, s.G)
	if err != nil {
		t.Fatal(err)
	}
	y, dx, dw = make([]float32, c.OutLen()), make([]float32, c.InLen()), make([]float32, len(w))
	for _, v := range [][]float32{y, dx, dw} {
		for i := range v {
			v[i] = float32(math.NaN()) // every value must be written
		}
	}
	c.Forward(x, w, y)
	c.BackwardData(w, dy, dx)
	c.BackwardFilter(x, dy, dw)
	return y, dx, dw
}

func groupedInputs(s groupedShape) (x, w, dy []float32) {
	rng := rand.New(rand.NewPCG(uint64(s.B*1000+s.Cin*10+s.G), uint64(s.K*10+s.S)))
	ho, wo := (s.H+2*s.P-s.K)/s.S+1, (s.W+2*s.P-s.K)/s.S+1
	return randF32(rng, s.B*s.Cin*s.H*s.W), randF32(rng, s.Cout*s.Cin/s.G*s.K*s.K), randF32(rng, s.B*s.Cout*ho*wo)
}

// TestConv2dGroupsMatchDirect: forward, input and filter gradients of
// grouped convolutions against the float64 direct convolution, each value
// within the float32 summation bound of its terms.
func TestConv2dGroupsMatchDirect(t *testing.T) {
	for _, s := range groupedShapes {
		x, w, dy := groupedInputs(s)
		y, dx, dw := runGrouped(t, s, x, w, dy)
		r := refConv2dGroups(s, f64(x), f64(w), f64(dy))
		cg, og := s.Cin/s.G, s.Cout/s.G
		name := func(what string) string { return what + " " + shapeName(s) }
		checkBound(t, name("y"), y, r.y, r.yAbs, cg*s.K*s.K)
		checkBound(t, name("dx"), dx, r.dx, r.dxAbs, og*s.K*s.K)
		checkBound(t, name("dw"), dw, r.dw, r.dwAbs, s.B*r.ho*r.wo+filterGroups)
	}
}

func shapeName(s groupedShape) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestConv2dGroupsOneIsUngrouped: groups = 1 is the ungrouped conv, and a
// grouped conv's channel group g is the ungrouped conv of its channels and
// weights alone, bit for bit (the same GEMMs on the same gathers).
func TestConv2dGroupsOneIsUngrouped(t *testing.T) {
	for _, s := range []groupedShape{{3, 8, 7, 5, 6, 3, 1, 1, 2}, {3, 8, 7, 7, 8, 3, 2, 1, 4}, {2, 6, 5, 5, 4, 1, 1, 0, 2}} {
		x, w, dy := groupedInputs(s)
		y, dx, dw := runGrouped(t, s, x, w, dy)
		cg, og := s.Cin/s.G, s.Cout/s.G
		one := groupedShape{s.B, cg, s.H, s.W, og, s.K, s.S, s.P, 1}
		hw := s.H * s.W
		ho, wo := (s.H+2*s.P-s.K)/s.S+1, (s.W+2*s.P-s.K)/s.S+1
		ohw, wl := ho*wo, og*cg*s.K*s.K
		for g := 0; g < s.G; g++ {
			xg, dyg := make([]float32, 0, s.B*cg*hw), make([]float32, 0, s.B*og*ohw)
			for n := 0; n < s.B; n++ {
				xg = append(xg, x[(n*s.Cin+g*cg)*hw:(n*s.Cin+(g+1)*cg)*hw]...)
				dyg = append(dyg, dy[(n*s.Cout+g*og)*ohw:(n*s.Cout+(g+1)*og)*ohw]...)
			}
			y1, dx1, dw1 := runGrouped(t, one, xg, w[g*wl:(g+1)*wl], dyg)
			for n := 0; n < s.B; n++ {
				same := func(a, b []float32) bool {
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							return false
						}
					}
					return true
				}
				if !same(y1[n*og*ohw:(n+1)*og*ohw], y[(n*s.Cout+g*og)*ohw:]) ||
					!same(dx1[n*cg*hw:(n+1)*cg*hw], dx[(n*s.Cin+g*cg)*hw:]) {
					t.Fatalf("%s: group %d sample %d: y or dx differs from the group's conv alone", shapeName(s), g, n)
				}
			}
			for i, v := range dw1 {
				if math.Float32bits(v) != math.Float32bits(dw[g*wl+i]) {
					t.Fatalf("%s: group %d: dw[%d] = %g, the group's conv alone %g", shapeName(s), g, i, dw[g*wl+i], v)
				}
			}
		}
	}
}

func TestConv2dGroupsRefused(t *testing.T) {
	for _, s := range []groupedShape{{2, 6, 5, 5, 4, 3, 1, 1, 4}, {2, 4, 5, 5, 6, 3, 1, 1, 4}, {2, 4, 5, 5, 4, 3, 1, 1, 0}, {2, 4, 5, 5, 4, 3, 1, 1, -2}} {
		_, err := NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, s.K, s.S, s.P, s.G)
		if err == nil || !strings.Contains(err.Error(), "groups=") {
			t.Errorf("%s: error %v, want one naming groups", shapeName(s), err)
		}
	}
}

// torchGroupsScript reads each case's x, w, dy (float32, raw little-endian)
// and writes F.conv2d(x, w, stride, padding, groups)'s y and autograd's dx
// and dw for dy, computed in float64 from the same float32 values.
const torchGroupsScript = `
import json, sys, torch, torch.nn.functional as F
d = sys.argv[1]
for i, c in enumerate(json.load(open(d + "/cases.json"))):
    def load(name, shape):
        b = open("%s/%d.%s" % (d, i, name), "rb").read()
        t = torch.frombuffer(bytearray(b), dtype=torch.float32).to(torch.float64)
        return t.reshape(shape)
    B, Cin, H, W, Cout, K, S, P, G = (c[k] for k in "B Cin H W Cout K S P G".split())
    x = load("x", (B, Cin, H, W)).requires_grad_()
    w = load("w", (Cout, Cin // G, K, K)).requires_grad_()
    y = F.conv2d(x, w, stride=S, padding=P, groups=G)
    dy = load("dy", y.shape)
    y.backward(dy)
    for name, t in (("y", y), ("dx", x.grad), ("dw", w.grad)):
        open("%s/%d.%s.out" % (d, i, name), "wb").write(t.detach().contiguous().numpy().astype("<f8").tobytes())
print("torch", torch.__version__, len(json.load(open(d + "/cases.json"))), "cases")
`

// TestConv2dGroupsMatchPyTorch: the same cases against PyTorch's
// F.conv2d(groups=) forward and autograd backward, in float64 on the same
// float32 inputs, within the same bound. Skipped where /usr/bin/python3
// has no torch, and with -short.
func TestConv2dGroupsMatchPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PyTorch")
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 lacks torch (apt-get install python3-torch): %v: %s", err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	write := func(name string, v []float32) {
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string, n int) []float64 {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 8*n {
			t.Fatalf("%s: %d bytes from PyTorch, want %d", name, len(b), 8*n)
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		return v
	}
	js, _ := json.Marshal(groupedShapes)
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct{ y, dx, dw []float32 }
	results := make([]result, len(groupedShapes))
	for i, s := range groupedShapes {
		x, w, dy := groupedInputs(s)
		write(itoa(i)+".x", x)
		write(itoa(i)+".w", w)
		write(itoa(i)+".dy", dy)
		y, dx, dw := runGrouped(t, s, x, w, dy)
		results[i] = result{y, dx, dw}
	}
	out, err := exec.Command("/usr/bin/python3", "-c", torchGroupsScript, dir).CombinedOutput()
	t.Logf("%s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("PyTorch: %v", err)
	}
	for i, s := range groupedShapes {
		x, w, dy := groupedInputs(s)
		r := refConv2dGroups(s, f64(x), f64(w), f64(dy))
		res := results[i]
		cg, og := s.Cin/s.G, s.Cout/s.G
		name := func(what string) string { return "PyTorch " + what + " " + shapeName(s) }
		checkBound(t, name("y"), res.y, read(itoa(i)+".y.out", len(res.y)), r.yAbs, cg*s.K*s.K)
		checkBound(t, name("dx"), res.dx, read(itoa(i)+".dx.out", len(res.dx)), r.dxAbs, og*s.K*s.K)
		checkBound(t, name("dw"), res.dw, read(itoa(i)+".dw.out", len(res.dw)), r.dwAbs, s.B*r.ho*r.wo+filterGroups)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestConv2dGroupsSameOnAnyCoreCount: a grouped conv gives the same bits
// on 1 and 2 cores.
func TestConv2dGroupsSameOnAnyCoreCount(t *testing.T) {
	for _, s := range []groupedShape{{11, 8, 8, 8, 8, 3, 2, 1, 4}, {11, 32, 6, 6, 32, 3, 1, 1, 32}} {
		x, w, dy := groupedInputs(s)
		run := func(procs int) [3][]float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			y, dx, dw := runGrouped(t, s, x, w, dy)
			return [3][]float32{y, dx, dw}
		}
		one, two := run(1), run(2)
		for i := range one {
			if !slices.Equal(one[i], two[i]) {
				t.Fatalf("%s: output %d differs between 1 and 2 cores", shapeName(s), i)
			}
		}
	}
}
