package model

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// A float64 reference of the network, written directly from the layer
// definitions (PyTorch's Conv2d, MaxPool2d(2), AdaptiveAvgPool2d(1), Linear,
// CrossEntropyLoss) and sharing no code with the graph.

type refTensor struct {
	c, h, w int
	v       []float64
}

func (t refTensor) at(c, y, x int) float64 { return t.v[(c*t.h+y)*t.w+x] }

func refConv(in refTensor, w, b []float64, cout, k int) refTensor {
	p := k / 2
	out := refTensor{cout, in.h, in.w, make([]float64, cout*in.h*in.w)}
	for co := 0; co < cout; co++ {
		for y := 0; y < in.h; y++ {
			for x := 0; x < in.w; x++ {
				s := b[co]
				for ci := 0; ci < in.c; ci++ {
					for ky := 0; ky < k; ky++ {
						for kx := 0; kx < k; kx++ {
							iy, ix := y+ky-p, x+kx-p
							if iy < 0 || ix < 0 || iy >= in.h || ix >= in.w {
								continue
							}
							s += w[((co*in.c+ci)*k+ky)*k+kx] * in.at(ci, iy, ix)
						}
					}
				}
				out.v[(co*in.h+y)*in.w+x] = s
			}
		}
	}
	return out
}

func refReLU(t refTensor) refTensor {
	for i, v := range t.v {
		t.v[i] = math.Max(v, 0)
	}
	return t
}

func refMaxPool(in refTensor) refTensor {
	h, w := in.h/2, in.w/2
	out := refTensor{in.c, h, w, make([]float64, in.c*h*w)}
	for c := 0; c < in.c; c++ {
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				m := math.Inf(-1)
				for dy := 0; dy < 2; dy++ {
					for dx := 0; dx < 2; dx++ {
						m = math.Max(m, in.at(c, 2*y+dy, 2*x+dx))
					}
				}
				out.v[(c*h+y)*w+x] = m
			}
		}
	}
	return out
}

// refLogits computes one sample's logits; params are in PyTorch layout.
func refLogits(spec Spec, params map[string][]float64, x []float64) []float64 {
	S := spec.InputSize
	t := refTensor{3, S, S, x}
	for i, c := range spec.Conv {
		in := t
		t = refReLU(refConv(t, params[nameOf("conv", i, "weight")], params[nameOf("conv", i, "bias")], c.Channels, c.Kernel))
		if spec.skips(i) {
			for j := range t.v {
				t.v[j] += in.v[j]
			}
		}
		if c.Pool {
			t = refMaxPool(t)
		}
	}
	h := make([]float64, t.c)
	for c := range h {
		for i := 0; i < t.h*t.w; i++ {
			h[c] += t.v[c*t.h*t.w+i]
		}
		h[c] /= float64(t.h * t.w)
	}
	W, b := params["fc.weight"], params["fc.bias"]
	out := make([]float64, spec.Classes)
	for k := range out {
		out[k] = b[k]
		for c, v := range h {
			out[k] += W[k*t.c+c] * v
		}
	}
	return out
}

// refLoss is the mean cross-entropy over the first n samples of x.
func refLoss(spec Spec, params map[string][]float64, x []float32, labels []int32, n int) float64 {
	per := 3 * spec.InputSize * spec.InputSize
	var sum float64
	for i := 0; i < n; i++ {
		xi := make([]float64, per)
		for j := range xi {
			xi[j] = float64(x[i*per+j])
		}
		z := refLogits(spec, params, xi)
		m := math.Inf(-1)
		for _, v := range z {
			m = math.Max(m, v)
		}
		var s float64
		for _, v := range z {
			s += math.Exp(v - m)
		}
		sum += m + math.Log(s) - z[labels[i]]
	}
	return sum / float64(n)
}

func nameOf(prefix string, i int, field string) string {
	return fmt.Sprintf("%s%d.%s", prefix, i, field)
}

func toRef(ts []NamedTensor) map[string][]float64 {
	m := make(map[string][]float64, len(ts))
	for _, t := range ts {
		v := make([]float64, len(t.Data))
		for i, f := range t.Data {
			v[i] = float64(f)
		}
		m[t.Name] = v
	}
	return m
}

func randomInput(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}
