package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var tinySpec = Spec{InputSize: 6, Classes: 3, Conv: []ConvSpec{{Channels: 4, Kernel: 3, Pool: true}, {Channels: 6, Kernel: 3}}}

// skipSpec has a residual block (ConvSpec.Skip): conv1's input feeds conv1
// and the skip's Add, so its gradient is the sum of two (fan-out).
var skipSpec = Spec{InputSize: 6, Classes: 3, Conv: []ConvSpec{{Channels: 4, Kernel: 3, Pool: true}, {Channels: 4, Kernel: 3}, {Channels: 5, Kernel: 1}}, Skip: []int{1}}

func newModel(t testing.TB, spec Spec, opt Options) *Model {
	t.Helper()
	m, err := New(spec, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestGradientsMatchFiniteDifferences checks every parameter's gradient
// against a central difference of the float64 reference loss. Row 1 of the
// batch is padding (n = 1 < B = 2) with a label that would pull the
// gradients elsewhere: if the mask leaked, the gradients would not match.
// The skip spec's residual block checks the fan-out's summed gradient.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		n    int
	}{{"full batch", tinySpec, 2}, {"padded row", tinySpec, 1}, {"skip connection", skipSpec, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			tinySpec := tc.spec
			m := newModel(t, tinySpec, Options{Batch: 2, Seed: 7})
			rng := rand.New(rand.NewPCG(1, 2))
			x := randomInput(rng, 2*3*6*6)
			labels := []int32{2, 0}
			_, _, grads, err := m.backwardGrads(x, labels, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			params := m.Params()
			ref := toRef(params)
			const eps = 1e-6
			for pi, p := range m.params {
				g := p.get(grads[pi]) // PyTorch layout, as ref
				v := ref[p.name]
				var worst float64
				for i := range v {
					orig := v[i]
					v[i] = orig + eps
					lp := refLoss(tinySpec, ref, x, labels, tc.n)
					v[i] = orig - eps
					lm := refLoss(tinySpec, ref, x, labels, tc.n)
					v[i] = orig
					fd := (lp - lm) / (2 * eps)
					diff := math.Abs(float64(g[i]) - fd)
					worst = math.Max(worst, diff)
					if diff > 1e-6+1e-4*math.Abs(fd) {
						t.Errorf("%s[%d]: gradient %.7g, finite difference %.7g", p.name, i, g[i], fd)
					}
				}
				t.Logf("%s: worst |grad - fd| = %.2g", p.name, worst)
			}
		})
	}
}

// TestLogitsMatchReference compares a hand-built one-conv model (odd input
// size, so the pool floors) with the float64 reference forward.
func TestLogitsMatchReference(t *testing.T) {
	spec := Spec{InputSize: 5, Classes: 4, Conv: []ConvSpec{{Channels: 3, Kernel: 3, Pool: true}}}
	m := newModel(t, spec, Options{Batch: 3})
	rng := rand.New(rand.NewPCG(3, 4))
	params := m.Params()
	for i := range params {
		params[i].Data = randomInput(rng, len(params[i].Data))
	}
	if err := m.Load(params, nil); err != nil {
		t.Fatal(err)
	}
	x := randomInput(rng, 3*3*5*5)
	got, err := m.Logits(Input{X: x, N: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*4 {
		t.Fatalf("got %d logits, want 8", len(got))
	}
	ref := toRef(params)
	for i := 0; i < 2; i++ {
		xi := make([]float64, 75)
		for j := range xi {
			xi[j] = float64(x[i*75+j])
		}
		want := refLogits(spec, ref, xi)
		for k, w := range want {
			if d := math.Abs(float64(got[i*4+k]) - w); d > 1e-5*(1+math.Abs(w)) {
				t.Errorf("sample %d logit %d: got %.7g, want %.7g", i, k, got[i*4+k], w)
			}
		}
	}
}

func TestSGDLowersLoss(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 4, Seed: 1, Momentum: 0.9, WeightDecay: 1e-4})
	rng := rand.New(rand.NewPCG(5, 6))
	x := randomInput(rng, 4*3*6*6)
	labels := []int32{0, 1, 2, 1}
	var first, last float64
	for i := 0; i < 20; i++ {
		r, err := m.TrainStep(x, labels, 4, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r.Loss
		}
		last = r.Loss
	}
	if !(last < 0.7*first) {
		t.Errorf("loss went from %.4f to %.4f in 20 steps on one batch; want it clearly lower", first, last)
	}
	e, err := m.EvalStep(x, labels, 4)
	if err != nil {
		t.Fatal(err)
	}
	if e.Top5 != 4 || e.Top1 < e.Top5-4 {
		t.Errorf("eval %+v: with 3 classes every sample is in the top 5", e)
	}
}

// TestSGDFormula checks the update against PyTorch's SGD worked by hand:
// lr 0.1, momentum 0.9, weight decay 0.01, two steps with gradient (0.5, 0.25).
func TestSGDFormula(t *testing.T) {
	w := []float32{1, -2}
	v := make([]float32, 2)
	grad := []float32{0.5, 0.25}
	SGDUpdate(w, grad, v, 0.1, 0.9, 0.01, true)
	// g = 0.5 + 0.01·1 = 0.51 = v; w = 1 − 0.051. g = 0.25 − 0.02 = 0.23.
	want := [][]float32{{0.949, -2.023}, {0.51, 0.23}}
	checkClose(t, "step 1 w", w, want[0], 1e-6)
	checkClose(t, "step 1 v", v, want[1], 1e-6)
	SGDUpdate(w, grad, v, 0.1, 0.9, 0.01, false)
	// g = 0.5 + 0.00949 = 0.50949; v = 0.459 + 0.50949 = 0.96849; w = 0.949 − 0.096849.
	// g = 0.25 − 0.02023 = 0.22977; v = 0.207 + 0.22977 = 0.43677; w = −2.023 − 0.043677.
	checkClose(t, "step 2 w", w, []float32{0.852151, -2.066677}, 1e-6)
	checkClose(t, "step 2 v", v, []float32{0.96849, 0.43677}, 1e-6)

	// Without momentum: plain w −= lr·(grad + wd·w).
	w = []float32{1}
	SGDUpdate(w, []float32{0.5}, []float32{0}, 0.1, 0, 0.01, false)
	checkClose(t, "no momentum", w, []float32{0.949}, 1e-6)
}

// TestTrainStepAppliesSGD checks that a model step applies exactly the
// formula to the gradients the graph computed, on all parameters.
func TestTrainStepAppliesSGD(t *testing.T) {
	const lr, mom, wd = 0.05, 0.9, 0.01
	m := newModel(t, tinySpec, Options{Batch: 2, Seed: 3, Momentum: mom, WeightDecay: wd})
	rng := rand.New(rand.NewPCG(7, 8))
	x := randomInput(rng, 2*3*6*6)
	labels := []int32{1, 2}
	var v [][]float32
	for step := 0; step < 2; step++ {
		before := m.Params()
		_, _, grads, err := m.backwardGrads(x, labels, 2)
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			v = make([][]float32, len(grads))
		}
		want := make([][]float32, len(grads))
		for i, p := range m.params {
			g := p.get(grads[i])
			want[i] = make([]float32, len(g))
			if v[i] == nil {
				v[i] = make([]float32, len(g))
			}
			for j := range g {
				gj := g[j] + wd*before[i].Data[j]
				if step == 0 {
					v[i][j] = gj
				} else {
					v[i][j] = mom*v[i][j] + gj
				}
				want[i][j] = before[i].Data[j] - lr*v[i][j]
			}
		}
		if _, err := m.TrainStep(x, labels, 2, lr); err != nil {
			t.Fatal(err)
		}
		after := m.Params()
		state := m.OptimizerState()
		for i := range after {
			checkClose(t, after[i].Name, after[i].Data, want[i], 1e-6)
			checkClose(t, state[i].Name, state[i].Data, v[i], 1e-6)
		}
	}
}

func checkClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i])-float64(want[i])) > tol*(1+math.Abs(float64(want[i]))) {
			t.Errorf("%s[%d] = %.8g, want %.8g", what, i, got[i], want[i])
			return
		}
	}
}

func TestDeterministicInit(t *testing.T) {
	a := newModel(t, tinySpec, Options{Batch: 1, Seed: 42}).Params()
	b := newModel(t, tinySpec, Options{Batch: 3, Seed: 42}).Params()
	c := newModel(t, tinySpec, Options{Batch: 1, Seed: 43}).Params()
	if !equalTensors(a, b) {
		t.Error("same seed gave different parameters")
	}
	if equalTensors(a, c) {
		t.Error("different seeds gave the same parameters")
	}
	// PyTorch's default bound: U(−1/√fan_in, 1/√fan_in), zero-mean.
	for _, p := range a {
		fanIn := map[string]float64{"conv0": 27, "conv1": 36, "fc": 6}[strings.Split(p.Name, ".")[0]]
		bound := 1 / math.Sqrt(fanIn)
		var maxAbs float64
		for _, v := range p.Data {
			maxAbs = math.Max(maxAbs, math.Abs(float64(v)))
		}
		if maxAbs > bound || maxAbs < bound/4 {
			t.Errorf("%s: max |w| = %.4f, want within (%.4f/4, %.4f]", p.Name, maxAbs, bound, bound)
		}
	}
	wantNames := []string{"conv0.weight", "conv0.bias", "conv1.weight", "conv1.bias", "fc.weight", "fc.bias"}
	wantShapes := [][]int{{4, 3, 3, 3}, {4}, {6, 4, 3, 3}, {6}, {3, 6}, {3}}
	for i, p := range a {
		if p.Name != wantNames[i] || !slices.Equal(p.Shape, wantShapes[i]) {
			t.Errorf("param %d: %s %v, want %s %v", i, p.Name, p.Shape, wantNames[i], wantShapes[i])
		}
	}
	if n := newModel(t, tinySpec, Options{Batch: 1}).NumParams(); n != 112+222+21 {
		t.Errorf("NumParams = %d, want %d", n, 112+222+21)
	}
}

func equalTensors(a, b []NamedTensor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !slices.Equal(a[i].Shape, b[i].Shape) || !slices.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// TestResumeIsExact trains, checkpoints through a safetensors file, loads
// into a model with other weights, and checks both continue bit for bit.
func TestResumeIsExact(t *testing.T) {
	opt := Options{Batch: 2, Seed: 1, Momentum: 0.9, WeightDecay: 5e-4}
	a := newModel(t, tinySpec, opt)
	rng := rand.New(rand.NewPCG(9, 10))
	x := randomInput(rng, 2*3*6*6)
	labels := []int32{0, 2}
	for i := 0; i < 3; i++ {
		if _, err := a.TrainStep(x, labels, 2, 0.05); err != nil {
			t.Fatal(err)
		}
	}
	path := t.TempDir() + "/ckpt.safetensors"
	if err := WriteSafetensors(path, append(a.Params(), a.OptimizerState()...), map[string]string{"epoch": "3"}); err != nil {
		t.Fatal(err)
	}
	all, _, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	var params, state []NamedTensor
	for _, t := range all {
		if strings.HasSuffix(t.Name, MomentumSuffix) || t.Name == StepName {
			state = append(state, t)
		} else {
			params = append(params, t)
		}
	}
	opt.Seed = 99
	b := newModel(t, tinySpec, opt)
	if err := b.Load(params, state); err != nil {
		t.Fatal(err)
	}
	la, _ := a.Logits(Input{X: x, N: 2})
	lb, _ := b.Logits(Input{X: x, N: 2})
	if !slices.Equal(la, lb) {
		t.Fatalf("logits differ after Load: %v vs %v", la, lb)
	}
	for i := 0; i < 2; i++ {
		ra, _ := a.TrainStep(x, labels, 1, 0.05)
		rb, _ := b.TrainStep(x, labels, 1, 0.05)
		if ra != rb {
			t.Errorf("step %d after resume: %+v vs %+v", i, ra, rb)
		}
	}
	if !equalTensors(a.Params(), b.Params()) || !equalTensors(a.OptimizerState(), b.OptimizerState()) {
		t.Error("resumed model diverged from the original")
	}
}

func TestLoadErrors(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 1, Momentum: 0.9})
	params, state := m.Params(), m.OptimizerState()
	drop := func(ts []NamedTensor, name string) []NamedTensor {
		return slices.DeleteFunc(slices.Clone(ts), func(t NamedTensor) bool { return t.Name == name })
	}
	reshape := func(ts []NamedTensor, name string, shape []int) []NamedTensor {
		ts = slices.Clone(ts)
		for i := range ts {
			if ts[i].Name == name {
				ts[i].Shape = shape
			}
		}
		return ts
	}
	for _, tc := range []struct {
		name          string
		params, state []NamedTensor
		want          string
	}{
		{"missing param", drop(params, "conv1.bias"), state, `missing tensor "conv1.bias"`},
		{"missing buffer", params, drop(state, "fc.weight.momentum_buffer"), `missing tensor "fc.weight.momentum_buffer"`},
		{"missing step", params, drop(state, StepName), `missing tensor "optimizer.step"`},
		{"wrong shape", reshape(params, "fc.weight", []int{6, 3}), state, `"fc.weight" has shape [6 3], want [3 6]`},
		{"extra", append(slices.Clone(params), NamedTensor{Name: "bn.weight", Shape: []int{1}, Data: []float32{1}}), state, `unexpected tensor "bn.weight"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Load(tc.params, tc.state)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want an error containing %s", err, tc.want)
			}
		})
	}
	if !equalTensors(params, m.Params()) {
		t.Error("a failed Load changed the parameters")
	}
}

func TestSpecValidation(t *testing.T) {
	ok := ConvSpec{Channels: 4, Kernel: 3}
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{InputSize: 0, Classes: 3, Conv: []ConvSpec{ok}}, "model.input_size"},
		{Spec{InputSize: 8, Classes: 1, Conv: []ConvSpec{ok}}, "model.classes"},
		{Spec{InputSize: 8, Classes: 3}, "model.conv"},
		{Spec{InputSize: 8, Classes: 3, Conv: []ConvSpec{ok, {Channels: 0, Kernel: 3}}}, "model.conv[1].channels"},
		{Spec{InputSize: 8, Classes: 3, Conv: []ConvSpec{ok, {Channels: 4, Kernel: 4}}}, "model.conv[1].kernel"},
		{Spec{InputSize: 8, Classes: 3, Conv: []ConvSpec{{Channels: 4, Kernel: 0}}}, "model.conv[0].kernel"},
		{Spec{InputSize: 5, Classes: 3, Conv: []ConvSpec{{4, 3, true}, {4, 3, true}, {4, 3, true}}}, "model.conv[2].pool"},
	} {
		_, err := New(tc.spec, Options{Batch: 1})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want+":") {
			t.Errorf("New(%+v): %v, want an error naming %s", tc.spec, err, tc.want)
		}
	}
	if _, err := New(tinySpec, Options{Batch: 0}); err == nil || !strings.Contains(err.Error(), "model.options.batch") {
		t.Errorf("Batch 0: %v", err)
	}
	// The smallest legal net: 1 px after the last pool.
	if _, err := New(Spec{InputSize: 4, Classes: 2, Conv: []ConvSpec{{2, 1, true}, {2, 3, true}}}, Options{Batch: 1}); err != nil {
		t.Errorf("4 px, two pools: %v", err)
	}
}

func TestBadInputIsAnError(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 2})
	x := make([]float32, 2*3*6*6)
	before := m.Params()
	for _, tc := range []struct {
		name   string
		x      []float32
		labels []int32
		n      int
		lr     float32
	}{
		{"short x", x[1:], []int32{0, 0}, 2, 0.1},
		{"n = 0", x, []int32{0, 0}, 0, 0.1},
		{"n > B", x, []int32{0, 0, 0}, 3, 0.1},
		{"few labels", x, []int32{0}, 2, 0.1},
		{"label too big", x, []int32{0, 3}, 2, 0.1},
		{"negative label", x, []int32{-1}, 1, 0.1},
		{"nil labels", x, nil, 1, 0.1},
		{"NaN lr", x, []int32{0, 0}, 2, float32(math.NaN())},
	} {
		if _, err := m.TrainStep(tc.x, tc.labels, tc.n, tc.lr); err == nil {
			t.Errorf("TrainStep %s: no error", tc.name)
		}
		if tc.lr == 0.1 && tc.labels != nil {
			if _, err := m.EvalStep(tc.x, tc.labels, tc.n); err == nil {
				t.Errorf("EvalStep %s: no error", tc.name)
			}
		}
	}
	if _, err := m.Logits(Input{X: x, N: 3}); err == nil {
		t.Error("Logits n > B: no error")
	}
	// Non-finite input gives a non-finite loss: refused, weights kept.
	bad := slices.Clone(x)
	bad[5] = float32(math.Inf(1))
	if _, err := m.TrainStep(bad, []int32{0, 1}, 2, 0.1); err == nil {
		t.Error("TrainStep with Inf input: no error")
	}
	if !equalTensors(before, m.Params()) {
		t.Error("a refused step changed the parameters")
	}
	// Padding rows may hold anything: they are not read.
	bad[5], bad[3*36+5] = 0, float32(math.NaN())
	if _, err := m.TrainStep(bad, []int32{0}, 1, 0.1); err != nil {
		t.Errorf("NaN in a padded row: %v", err)
	}
	m.Close()
	if _, err := m.TrainStep(x, []int32{0, 0}, 2, 0.1); err == nil {
		t.Error("TrainStep after Close: no error")
	}
}

func TestEvalMetrics(t *testing.T) {
	spec := Spec{InputSize: 4, Classes: 7, Conv: []ConvSpec{{Channels: 2, Kernel: 1}}}
	m := newModel(t, spec, Options{Batch: 3})
	// Zero weights and chosen fc biases make the logits the biases.
	params := m.Params()
	for i := range params {
		clear(params[i].Data)
	}
	bias := []float32{6, 5, 4, 3, 2, 1, 0}
	params[len(params)-1].Data = bias
	if err := m.Load(params, nil); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 3*3*16)
	r, err := m.EvalStep(x, []int32{0, 4, 5}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	lse := logSumExp(bias)
	for _, y := range []int{0, 4, 5} {
		want += lse - float64(bias[y])
	}
	if r.Top1 != 1 || r.Top5 != 2 || math.Abs(r.LossSum-want) > 1e-5 {
		t.Errorf("EvalStep = %+v, want Top1 1, Top5 2, LossSum %.6f", r, want)
	}
}
