//go:build stokecuda

package cudaops

import (
	"math"
	"strings"
	"testing"

	"stoke/cpuops"
)

// TestGPUConv2dGroups: forward, backward-data and backward-filter of
// grouped convolutions (ResNeXt's 3x3s, depthwise, strided, 1x1) against
// cpuops.Conv2d with the same groups, and bad groups refused.
func TestGPUConv2dGroups(t *testing.T) {
	withKernels(t, 3, func(kb *kernelBench) {
		for _, s := range []convShape{
			{B: 2, Cin: 8, H: 7, W: 5, Cout: 6, K: 3, Stride: 1, Pad: 1, Groups: 2},    // odd sizes
			{B: 3, Cin: 8, H: 9, W: 7, Cout: 8, K: 3, Stride: 2, Pad: 1, Groups: 4},    // stride 2
			{B: 2, Cin: 8, H: 5, W: 5, Cout: 12, K: 1, Stride: 1, Pad: 0, Groups: 4},   // 1x1
			{B: 2, Cin: 32, H: 5, W: 6, Cout: 32, K: 3, Stride: 1, Pad: 1, Groups: 32}, // depthwise
			{B: 2, Cin: 32, H: 7, W: 7, Cout: 64, K: 3, Stride: 2, Pad: 1, Groups: 32}, // ResNeXt's strided 3x3, 2 outputs per group
			{B: 2, Cin: 4, H: 32, W: 32, Cout: 4, K: 3, Stride: 1, Pad: 1, Groups: 2},  // B·H·W = 2048: sgemm splits dw's inner dimension
		} {
			c, err := cpuops.NewConv2d(s.B, s.Cin, s.H, s.W, s.Cout, s.K, s.Stride, s.Pad, s.Groups)
			kb.must("NewConv2d", err)
			if c.OutLen() != s.OutLen() || s.WLen() != s.Cout*s.Cin/s.Groups*s.K*s.K {
				t.Fatalf("%+v: OutLen %d (cpuops %d), WLen %d", s, s.OutLen(), c.OutLen(), s.WLen())
			}
			x, w, dy := kb.rnd(s.InLen(), 0, 1), kb.rnd(s.WLen(), 0, 0.3), kb.rnd(s.OutLen(), 0, 1)
			y, dx, dw := make([]float32, s.OutLen()), make([]float32, s.InLen()), make([]float32, s.WLen())
			c.Forward(x, w, y)
			c.BackwardData(w, dy, dx)
			c.BackwardFilter(x, dy, dw)
			ws, err := kb.g.alloc(s.Workspace())
			kb.must("alloc", err)
			gx, gw, gdy := kb.put(x), kb.put(w), kb.put(dy)
			gy, gdx, gdw := kb.put(kb.rnd(len(y), 5, 1)), kb.put(kb.rnd(len(dx), 5, 1)), kb.put(kb.rnd(len(dw), 5, 1))
			kb.must("conv2dForward", kb.g.conv2dForward(s, gx, gw, gy, ws, nil))
			kb.must("conv2dBackwardData", kb.g.conv2dBackwardData(s, gw, gdy, gdx, ws))
			kb.must("conv2dBackwardFilter", kb.g.conv2dBackwardFilter(s, gx, gdy, gdw, ws, nil))
			name := func(what string) string {
				return what + " " + itoa(s.K) + "x" + itoa(s.K) + "/" + itoa(s.Stride) + " groups " + itoa(s.Groups)
			}
			ho, wo := s.Out()
			terms := func(k int) float64 { return 1e-6 * math.Sqrt(float64(k)) }
			kb.check(name("conv forward"), gy, y, terms(s.gkk()))
			kb.check(name("conv backward data"), gdx, dx, terms(s.og()*s.K*s.K))
			kb.check(name("conv backward filter"), gdw, dw, terms(s.B*ho*wo))
		}
		for _, s := range []convShape{
			{B: 1, Cin: 6, H: 4, W: 4, Cout: 4, K: 3, Stride: 1, Pad: 1, Groups: 4},
			{B: 1, Cin: 4, H: 4, W: 4, Cout: 6, K: 3, Stride: 1, Pad: 1, Groups: 4},
			{B: 1, Cin: 4, H: 4, W: 4, Cout: 4, K: 3, Stride: 1, Pad: 1, Groups: -1},
		} {
			if err := s.validate(); err == nil || !strings.Contains(err.Error(), "groups=") {
				t.Errorf("%+v: error %v, want one naming groups", s, err)
			}
		}
	})
}
