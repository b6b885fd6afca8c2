package cudaops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"stoke/augment"
	"stoke/model"
)

// The CPU engine runs the GPU's sequence of kernels with ref.go's mirrors of
// their index arithmetic; here it must agree with the gorgonia model on the
// same weights and batch: logits, loss, and the weights and momentum after
// SGD steps (which checks every gradient).

var refSpec = model.Spec{InputSize: 10, Classes: 4, Conv: []model.ConvSpec{
	{Channels: 4, Kernel: 3, Pool: true},  // 10 -> 5
	{Channels: 6, Kernel: 5, Pool: true},  // 5 -> 2 (floor: the last row and column are dropped)
	{Channels: 5, Kernel: 1, Pool: false}, // 1x1
}}

var imageNet = Normalize{Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}

func randBatch(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func close32(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %v, want %v (|diff| %.2g)", what, i, got[i], want[i], d)
		}
	}
}

func TestNetMatchesModel(t *testing.T) {
	opt := model.Options{Batch: 5, Seed: 7, Momentum: 0.9, WeightDecay: 1e-3}
	m, err := model.New(refSpec, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	nt, err := newNet(cpuEngine{}, refSpec, opt, imageNet)
	if err != nil {
		t.Fatal(err)
	}
	if err := nt.load(m.Params(), m.OptimizerState()); err != nil {
		t.Fatal(err)
	}
	if nt.numParams() != m.NumParams() {
		t.Fatalf("numParams %d, model %d", nt.numParams(), m.NumParams())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	S := refSpec.InputSize
	for step, n := range []int{5, 3, 4} {
		x := randBatch(rng, opt.Batch*3*S*S)
		for i := n * 3 * S * S; i < len(x); i++ {
			x[i] = float32(math.NaN()) // padding must not matter
		}
		labels := []int32{int32(rng.IntN(4)), int32(rng.IntN(4)), int32(rng.IntN(4)), int32(rng.IntN(4)), int32(rng.IntN(4))}

		want, err := m.Logits(x, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := nt.logitsOf(x, labels, n)
		if err != nil {
			t.Fatal(err)
		}
		close32(t, "logits", got, want, 1e-5)

		wr, err := m.TrainStep(x, labels, n, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		gr, err := nt.trainStep(x, labels, n, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(gr.Loss-wr.Loss) > 1e-5 || gr.Correct != wr.Correct {
			t.Fatalf("step %d: got %+v, model %+v", step, gr, wr)
		}
		gp, err := nt.readParams(false)
		if err != nil {
			t.Fatal(err)
		}
		gv, err := nt.readParams(true)
		if err != nil {
			t.Fatal(err)
		}
		wp, wv := m.Params(), m.OptimizerState()
		for i := range wp {
			close32(t, "step "+string(rune('0'+step))+" "+wp[i].Name, gp[i].Data, wp[i].Data, 1e-5)
		}
		for i := range wv {
			if wv[i].Name != gv[i].Name {
				t.Fatalf("optimizer state %d is %s, model %s", i, gv[i].Name, wv[i].Name)
			}
			close32(t, wv[i].Name, gv[i].Data, wv[i].Data, 1e-4)
		}
	}
	var labels = []int32{0, 1, 2, 3, 0}
	x := randBatch(rng, opt.Batch*3*S*S)
	if _, err := nt.logitsOf(x, labels, 5); err != nil {
		t.Fatal(err)
	}
	logits, _ := nt.logitsOf(x, labels, 5)
	want, _ := m.EvalStep(x, labels, 5)
	got := scoreEval(logits, labels, 5, 4)
	if math.Abs(got.LossSum-want.LossSum) > 1e-4 || got.Top1 != want.Top1 || got.Top5 != want.Top5 {
		t.Fatalf("eval: got %+v, model %+v", got, want)
	}
}

// col2im must be im2col's adjoint: <im2col(x), c> = <x, col2im(c)>.
func TestCol2imIsAdjoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, g := range []struct{ B, C, H, W, K int }{{2, 3, 5, 5, 3}, {1, 2, 4, 6, 5}, {3, 1, 7, 3, 1}} {
		x := randBatch(rng, g.B*g.C*g.H*g.W)
		c := randBatch(rng, g.C*g.K*g.K*g.B*g.H*g.W)
		col, dx := make([]float32, len(c)), make([]float32, len(x))
		refIm2col(x, col, g.B, g.C, g.H, g.W, g.K, g.K/2)
		refCol2im(c, dx, g.B, g.C, g.H, g.W, g.K, g.K/2)
		var a, b float64
		for i := range col {
			a += float64(col[i]) * float64(c[i])
		}
		for i := range x {
			b += float64(x[i]) * float64(dx[i])
		}
		if math.Abs(a-b) > 1e-3*(1+math.Abs(a)) {
			t.Errorf("%+v: <im2col x, c> = %v, <x, col2im c> = %v", g, a, b)
		}
	}
}

// im2col + GEMM is a direct "same" convolution.
func TestIm2colConv(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	B, C, H, W, K, Co := 2, 3, 6, 5, 3, 4
	x, w := randBatch(rng, B*C*H*W), randBatch(rng, Co*C*K*K)
	col, z := make([]float32, C*K*K*B*H*W), make([]float32, Co*B*H*W)
	refIm2col(x, col, B, C, H, W, K, 1)
	refSgemm(false, false, Co, B*H*W, C*K*K, w, col, z)
	for b := range B {
		for o := range Co {
			for i := range H {
				for j := range W {
					var s float64
					for c := range C {
						for kh := range K {
							for kw := range K {
								ih, iw := i+kh-1, j+kw-1
								if ih >= 0 && ih < H && iw >= 0 && iw < W {
									s += float64(w[((o*C+c)*K+kh)*K+kw]) * float64(x[((b*C+c)*H+ih)*W+iw])
								}
							}
						}
					}
					if got := z[o*B*H*W+b*H*W+i*W+j]; math.Abs(float64(got)-s) > 1e-4 {
						t.Fatalf("conv b%d o%d (%d,%d) = %v, want %v", b, o, i, j, got, s)
					}
				}
			}
		}
	}
}

func TestNormalizeU8(t *testing.T) {
	x := []uint8{0, 255, 128, 10, 20, 30}
	y := make([]float32, len(x))
	mean, std := [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
	refNormalizeU8(x, y, 1, 2, mean, std)
	for i, v := range x {
		c := i / 2
		if want := (float32(v)/255 - mean[c]) / std[c]; y[i] != want {
			t.Errorf("y[%d] = %v, want %v", i, y[i], want)
		}
	}
}

// The normalize mirror (normalize_u8's index arithmetic: channel =
// (i/(S*S))%3 over B rows of CHW) against augment.NormalizeU8, which the
// trainer uses on the host: every byte value in every channel, several
// batch rows and image sizes, and a per-channel mean and std that differ
// enough to catch a wrong channel.
func TestNormalizeU8MatchesAugment(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	norm := Normalize{Mean: [3]float32{0.1, 0.5, 0.9}, Std: [3]float32{0.2, 0.7, 1.3}}
	for _, g := range []struct{ B, S int }{{1, 1}, {3, 2}, {2, 5}, {4, 16}} {
		x := make([]uint8, g.B*3*g.S*g.S)
		for i := range x {
			x[i] = uint8(rng.IntN(256))
		}
		if g.S == 16 { // every value in every channel of row 0
			for i := range 3 * 256 {
				x[i] = uint8(i % 256)
			}
		}
		got, want := make([]float32, len(x)), make([]float32, len(x))
		refNormalizeU8(x, got, g.B, g.S*g.S, norm.Mean, norm.Std)
		augment.NormalizeU8(want, x, g.S, norm.Mean, norm.Std)
		close32(t, fmt.Sprintf("B=%d S=%d", g.B, g.S), got, want, 1e-6)
	}
	// B below the buffer's rows (the padded batch): rows from B on untouched.
	x, y := []uint8{255, 255, 255, 255, 255, 255}, []float32{7, 7, 7, 7, 7, 7}
	refNormalizeU8(x, y, 1, 1, norm.Mean, norm.Std)
	for i, v := range y {
		if (i < 3) == (v == 7) {
			t.Fatalf("B=1 of 2 rows: y = %v", y)
		}
	}
}

// A uint8 step through the CPU engine (upload the bytes, normalize_u8's
// mirror, then the float network) gives what the float32 step gives on the
// same batch normalized by augment.NormalizeU8 (the trainer's host path):
// logits, loss, hits, every weight and momentum buffer after each step, and
// eval; with full and padded batches (padding rows of garbage bytes must not
// matter, like NaN padding in the float path).
func TestNetU8MatchesFloat(t *testing.T) {
	opt := model.Options{Batch: 5, Seed: 9, Momentum: 0.9, WeightDecay: 1e-3}
	norm := Normalize{Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}
	n32, err1 := newNet(cpuEngine{}, refSpec, opt, norm)
	n8, err2 := newNet(cpuEngine{}, refSpec, opt, norm)
	m, err3 := model.New(refSpec, opt)
	if err := first(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, nt := range []*net{n32, n8} {
		if err := nt.load(m.Params(), m.OptimizerState()); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 8))
	S, K := refSpec.InputSize, refSpec.Classes
	per := 3 * S * S
	for step, n := range []int{5, 2, 4, 5} {
		u8 := make([]uint8, opt.Batch*per)
		for i := range u8 {
			u8[i] = uint8(rng.IntN(256))
		}
		if step == 2 {
			clear(u8[n*per:]) // as the loader pads
		}
		x := make([]float32, len(u8))
		augment.NormalizeU8(x, u8, S, norm.Mean, norm.Std)
		labels := make([]int32, opt.Batch)
		for i := range labels {
			labels[i] = int32(rng.IntN(K))
		}
		what := fmt.Sprintf("step %d (n=%d)", step, n)

		want, err1 := n32.logitsOf(x, labels, n)
		got, err2 := n8.logitsOfU8(u8, labels, n)
		if err := first(err1, err2); err != nil {
			t.Fatal(err)
		}
		close32(t, what+" logits", got, want, 1e-5)

		wr, err1 := n32.trainStep(x, labels, n, 0.1)
		gr, err2 := n8.trainStepU8(u8, labels, n, 0.1)
		if err := first(err1, err2); err != nil {
			t.Fatal(err)
		}
		if math.Abs(gr.Loss-wr.Loss) > 1e-5 || gr.Correct != wr.Correct {
			t.Fatalf("%s: uint8 %+v, float32 %+v", what, gr, wr)
		}
		for _, momentum := range []bool{false, true} {
			wp, err1 := n32.readParams(momentum)
			gp, err2 := n8.readParams(momentum)
			if err := first(err1, err2); err != nil {
				t.Fatal(err)
			}
			for i := range wp {
				close32(t, what+" "+wp[i].Name, gp[i].Data, wp[i].Data, 1e-5)
			}
		}
		// The normalized input itself, padding rows zeroed.
		wantX := append([]float32(nil), x...)
		clear(wantX[n*per:])
		close32(t, what+" input", n8.x.([]float32), wantX, 1e-6)
	}
	u8 := make([]uint8, opt.Batch*per)
	for i := range u8 {
		u8[i] = uint8(rng.IntN(256))
	}
	x := make([]float32, len(u8))
	augment.NormalizeU8(x, u8, S, norm.Mean, norm.Std)
	labels := []int32{0, 1, 2, 3, 0}
	l32, err1 := n32.logitsOf(x, labels, 3)
	l8, err2 := n8.logitsOfU8(u8, labels, 3)
	if err := first(err1, err2); err != nil {
		t.Fatal(err)
	}
	w, g := scoreEval(l32, labels, 3, K), scoreEval(l8, labels, 3, K)
	if math.Abs(g.LossSum-w.LossSum) > 1e-4 || g.Top1 != w.Top1 || g.Top5 != w.Top5 {
		t.Fatalf("eval: uint8 %+v, float32 %+v", g, w)
	}
}

func TestNetU8Checks(t *testing.T) {
	opt := model.Options{Batch: 2, Seed: 1}
	nt, err := newNet(cpuEngine{}, refSpec, opt, imageNet)
	if err != nil {
		t.Fatal(err)
	}
	S := refSpec.InputSize
	ok := make([]uint8, 2*3*S*S)
	for _, c := range []struct {
		x      []uint8
		labels []int32
		n      int
		want   string
	}{
		{ok[1:], []int32{0, 0}, 2, "bytes, want"},
		{ok, []int32{0, 9}, 2, "labels[1] = 9"},
		{ok, []int32{0}, 2, "1 labels for n = 2"},
		{ok, nil, 1, "labels are missing"},
		{ok, []int32{0, 0}, 3, "n = 3"},
		{ok, []int32{0, 0}, 0, "n = 0"},
	} {
		if _, err := nt.trainStepU8(c.x, c.labels, c.n, 0.1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("trainStepU8(len %d, %v, n=%d) = %v, want an error with %q", len(c.x), c.labels, c.n, err, c.want)
		}
	}
	for _, norm := range []Normalize{{}, {Std: [3]float32{1, 1, float32(math.Inf(1))}}, {Mean: [3]float32{float32(math.NaN()), 0, 0}, Std: [3]float32{1, 1, 1}}} {
		if _, err := newNet(cpuEngine{}, refSpec, opt, norm); err == nil {
			t.Errorf("newNet accepted %+v", norm)
		}
	}
}
