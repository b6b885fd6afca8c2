package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// stateNames lists a model's state_dict names and shapes.
func stateNames(m *Model) map[string][]int {
	out := map[string][]int{}
	for _, t := range m.Params() {
		out[t.Name] = t.Shape
	}
	return out
}

// TestResNetStateDictIsTorchvisions checks names, shapes and counts
// against torchvision's resnet18 and He et al.'s resnet20 (counted from
// torchvision 0.14: resnet18(num_classes=10) has 62 parameters and 60
// buffers, 11,181,642 trainable scalars).
func TestResNetStateDictIsTorchvisions(t *testing.T) {
	m := newModel(t, Spec{Arch: "resnet18", InputSize: 32, Classes: 10}, Options{Batch: 1})
	names := stateNames(m)
	if len(m.params) != 62 || len(m.bns) != 20 || len(names) != 122 {
		t.Fatalf("resnet18: %d params, %d BatchNorms, %d tensors; want 62, 20, 122", len(m.params), len(m.bns), len(names))
	}
	if n := m.NumParams(); n != 11181642 {
		t.Errorf("resnet18 NumParams = %d, want 11181642", n)
	}
	for name, shape := range map[string][]int{
		"conv1.weight":                       {64, 3, 7, 7},
		"bn1.running_var":                    {64},
		"bn1.num_batches_tracked":            {},
		"layer1.0.conv1.weight":              {64, 64, 3, 3},
		"layer2.0.downsample.0.weight":       {128, 64, 1, 1},
		"layer2.0.downsample.1.weight":       {128},
		"layer4.1.bn2.running_mean":          {512},
		"layer4.0.downsample.1.running_mean": {512},
		"fc.weight":                          {10, 512},
		"fc.bias":                            {10},
	} {
		if got, ok := names[name]; !ok || !slices.Equal(got, shape) {
			t.Errorf("resnet18 %s: shape %v (present %v), want %v", name, got, ok, shape)
		}
	}
	if _, ok := names["layer1.0.downsample.0.weight"]; ok {
		t.Error("resnet18 layer1.0 has a downsample; torchvision's has none")
	}

	c := newModel(t, Spec{Arch: "resnet18", Stem: "cifar", InputSize: 32, Classes: 10}, Options{Batch: 1})
	if got := stateNames(c)["conv1.weight"]; !slices.Equal(got, []int{64, 3, 3, 3}) {
		t.Errorf("resnet18 cifar stem conv1.weight %v, want [64 3 3 3]", got)
	}

	r := newModel(t, Spec{Arch: "resnet20", InputSize: 32, Classes: 10}, Options{Batch: 1})
	names = stateNames(r)
	for _, name := range []string{"layer2.0.downsample.0.weight", "layer3.0.downsample.1.num_batches_tracked", "layer3.2.conv2.weight"} {
		if _, ok := names[name]; !ok {
			t.Errorf("resnet20 has no %s", name)
		}
	}
	for _, name := range []string{"layer1.0.downsample.0.weight", "layer4.0.conv1.weight", "layer3.3.conv1.weight"} {
		if _, ok := names[name]; ok {
			t.Errorf("resnet20 has %s", name)
		}
	}
	// He et al.: 0.27M parameters (269,722 with identity shortcuts), plus two 1x1 projections (16·32 + 32·64)
	// and their BatchNorms.
	if n := r.NumParams(); n != 269722+16*32+32*64+2*(32+64) {
		t.Errorf("resnet20 NumParams = %d", n)
	}
}

// TestResNetGradientsMatchFiniteDifferences: the directional derivative of
// the loss along a random direction of every parameter, from the
// gradients, against a central difference of the model's own loss
// (float32, so a large step and a loose tolerance).
func TestResNetGradientsMatchFiniteDifferences(t *testing.T) {
	for _, spec := range []Spec{
		{Arch: "resnet20", InputSize: 8, Classes: 3},
		{Arch: "resnet18", Stem: "cifar", InputSize: 8, Classes: 3},
	} { // the imagenet stem's 7x7 conv and max-pool: scripts/parity_pytorch.py

		t.Run(spec.Arch+spec.Stem, func(t *testing.T) {
			const B = 4
			m := newModel(t, spec, Options{Batch: B, Seed: 3})
			rng := rand.New(rand.NewPCG(4, 4))
			x := randomInput(rng, B*3*spec.InputSize*spec.InputSize)
			labels := []int32{0, 2, 1, 2}
			loss := func() float64 {
				l, _, _, err := m.backwardGrads(x, labels, 3) // one padded row
				if err != nil {
					t.Fatal(err)
				}
				return float64(l)
			}
			_, _, grads, err := m.backwardGrads(x, labels, 3)
			if err != nil {
				t.Fatal(err)
			}
			// A random direction of unit norm: a step of eps along it moves
			// the weights little enough that ReLU kinks rarely matter.
			dir := make([][]float32, len(m.params))
			var norm float64
			for i, p := range m.params {
				dir[i] = randomInput(rng, len(p.data))
				for _, v := range dir[i] {
					norm += float64(v) * float64(v)
				}
			}
			var want float64
			for i := range m.params {
				for j, g := range grads[i] {
					dir[i][j] /= float32(math.Sqrt(norm))
					want += float64(g) * float64(dir[i][j])
				}
			}
			move := func(s float32) {
				for i, p := range m.params {
					for j := range p.data {
						p.data[j] += s * dir[i][j]
					}
				}
			}
			const eps = 1e-3
			move(eps)
			lp := loss()
			move(-2 * eps)
			lm := loss()
			move(eps)
			got := (lp - lm) / (2 * eps)
			if math.Abs(got-want) > 0.05*math.Abs(want)+1e-3 {
				t.Fatalf("directional derivative %.6g by finite differences, %.6g from the gradients", got, want)
			}
		})
	}
}

// TestBatchNormBuffers: a training step moves the running statistics and
// counts num_batches_tracked; evaluation reads them and changes nothing;
// a step whose loss is not finite keeps them.
func TestBatchNormBuffers(t *testing.T) {
	spec := Spec{Arch: "resnet20", InputSize: 8, Classes: 3}
	m := newModel(t, spec, Options{Batch: 2, Seed: 1, Momentum: 0.9})
	rng := rand.New(rand.NewPCG(9, 9))
	x := randomInput(rng, 2*3*8*8)
	labels := []int32{1, 2}
	before := m.bnBuffers()
	if _, err := m.EvalStep(x, labels, 2); err != nil {
		t.Fatal(err)
	}
	if !equalTensors(before, m.bnBuffers()) {
		t.Fatal("EvalStep changed the running statistics")
	}
	if _, err := m.TrainStep(x, labels, 2, 0.01); err != nil {
		t.Fatal(err)
	}
	after := m.bnBuffers()
	if equalTensors(before, after) {
		t.Fatal("TrainStep left the running statistics as they were")
	}
	for _, b := range after {
		if strings.HasSuffix(b.Name, "num_batches_tracked") && b.Data[0] != 1 {
			t.Fatalf("%s = %v after one step, want 1", b.Name, b.Data[0])
		}
	}
	// Eval uses the running statistics: the same image gives the same
	// logits whatever else is in the batch (in training it would not).
	l1, err := m.Logits(Input{X: x, N: 2})
	if err != nil {
		t.Fatal(err)
	}
	y := slices.Clone(x)
	copy(y[3*8*8:], randomInput(rng, 3*8*8))
	l2, err := m.Logits(Input{X: y, N: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l1[:3], l2[:3]) {
		t.Fatalf("eval logits of sample 0 depend on sample 1: %v vs %v", l1[:3], l2[:3])
	}
	bad := slices.Clone(x)
	bad[0] = float32(math.Inf(1))
	if _, err := m.TrainStep(bad, labels, 2, 0.01); err == nil {
		t.Fatal("a non-finite input trained")
	}
	if !equalTensors(after, m.bnBuffers()) {
		t.Fatal("a failed step changed the running statistics")
	}
}

// TestResNetResumeIsExact: for every optimizer, a model restored from
// Params and OptimizerState continues bit-identically.
func TestResNetResumeIsExact(t *testing.T) {
	spec := Spec{Arch: "resnet20", InputSize: 8, Classes: 3}
	for _, opt := range []Options{
		{Batch: 2, Seed: 5, Momentum: 0.9, WeightDecay: 5e-4, Nesterov: true, NoDecayNormAndBias: true, LabelSmoothing: 0.1},
		{Batch: 2, Seed: 5, WeightDecay: 0.05, Optimizer: OptimizerAdamW},
	} {
		rng := rand.New(rand.NewPCG(2, 2))
		batches := make([][]float32, 4)
		for i := range batches {
			batches[i] = randomInput(rng, 2*3*8*8)
		}
		labels := []int32{0, 2}
		a := newModel(t, spec, opt)
		for _, x := range batches[:2] {
			if _, err := a.TrainStep(x, labels, 2, 0.01); err != nil {
				t.Fatal(err)
			}
		}
		b := newModel(t, spec, opt)
		if err := b.Load(a.Params(), a.OptimizerState()); err != nil {
			t.Fatal(err)
		}
		for _, x := range batches[2:] {
			for _, m := range []*Model{a, b} {
				if _, err := m.TrainStep(x, labels, 2, 0.01); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !equalTensors(a.Params(), b.Params()) || !equalTensors(a.OptimizerState(), b.OptimizerState()) {
			t.Fatalf("%+v: the resumed model differs", opt)
		}
		// A file without a buffer, or an SGD state for AdamW, is refused.
		ps := a.Params()
		if err := b.Load(ps[:5], nil); err == nil || !strings.Contains(err.Error(), "bn1.num_batches_tracked") {
			t.Fatalf("loading without bn1's buffers: %v", err)
		}
	}
}

func TestAdamWFormula(t *testing.T) {
	// Two steps of torch.optim.AdamW(lr=0.1, weight_decay=0.5) on w = 1
	// with gradients 2 then -1, worked by hand in float64.
	w, m, v := []float32{1}, []float32{0}, []float32{0}
	AdamWUpdate(w, []float32{2}, m, v, 0.1, 0.9, 0.999, 1e-8, 0.5, 1)
	want := 1*(1-0.05) - 0.1/(1-0.9)*0.2/(math.Sqrt(0.004)/math.Sqrt(1-0.999)+1e-8)
	if math.Abs(float64(w[0])-want) > 1e-6 {
		t.Fatalf("step 1: w = %v, want %v", w[0], want)
	}
	AdamWUpdate(w, []float32{-1}, m, v, 0.1, 0.9, 0.999, 1e-8, 0.5, 2)
	m2, v2 := 0.9*0.2+0.1*-1, 0.999*0.004+0.001*1
	want = want*(1-0.05) - 0.1/(1-0.81)*m2/(math.Sqrt(v2)/math.Sqrt(1-0.999*0.999)+1e-8)
	if math.Abs(float64(w[0])-want) > 1e-6 {
		t.Fatalf("step 2: w = %v, want %v", w[0], want)
	}
}

func TestNesterovFormula(t *testing.T) {
	w, v := []float32{1}, []float32{0}
	SGDNesterovUpdate(w, []float32{2}, v, 0.1, 0.9, 0, true) // v = 2; w -= 0.1·(2 + 1.8)
	SGDNesterovUpdate(w, []float32{1}, v, 0.1, 0.9, 0, false)
	// v = 0.9·2 + 1 = 2.8; w -= 0.1·(1 + 2.52)
	if want := 1 - 0.38 - 0.352; math.Abs(float64(w[0])-want) > 1e-6 {
		t.Fatalf("w = %v, want %v", w[0], want)
	}
}

// TestLabelSmoothingLoss: the loss is PyTorch's CrossEntropyLoss with
// label_smoothing ε, (1−ε)·NLL + ε·mean_k(−log p_k), over the valid rows.
func TestLabelSmoothingLoss(t *testing.T) {
	const eps = 0.2
	m := newModel(t, tinySpec, Options{Batch: 2, Seed: 7, LabelSmoothing: eps})
	rng := rand.New(rand.NewPCG(1, 2))
	x := randomInput(rng, 2*3*6*6)
	labels := []int32{2, 0}
	loss, logits, _, err := m.backwardGrads(x, labels, 2)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for i, y := range labels {
		row := logits[i*3 : (i+1)*3]
		lse := logSumExp(row)
		var mean float64
		for _, z := range row {
			mean += (lse - float64(z)) / 3
		}
		want += ((1-eps)*(lse-float64(row[y])) + eps*mean) / 2
	}
	if math.Abs(float64(loss)-want) > 1e-5 {
		t.Fatalf("loss %v, want %v", loss, want)
	}
}

// TestNoDecayNormAndBias: with weight decay on and a zero learning rate
// for the gradient... decay alone (AdamW's is decoupled) moves conv
// weights and leaves BatchNorm parameters and biases where they were.
func TestNoDecayNormAndBias(t *testing.T) {
	m, moved := decayAlone(t, Spec{Arch: "resnet20", InputSize: 8, Classes: 3})
	for _, p := range m.params {
		same := !moved[p.name]
		if decays := !p.noDecay; same == decays {
			t.Errorf("%s: changed %v, want %v", p.name, !same, decays)
		}
		if strings.Contains(p.name, "bn") != p.noDecay && !strings.HasSuffix(p.name, ".bias") && !strings.Contains(p.name, "downsample.1") {
			t.Errorf("%s: noDecay %v", p.name, p.noDecay)
		}
	}
}
