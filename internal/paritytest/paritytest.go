// Package paritytest is the parity check of stoke's ResNets with PyTorch
// that model's and cudaops's tests share: on any engine, one training step
// of a model on known weights and a batch, written out beside the branch
// the step took at every ReLU and max-pool, and checked by
// scripts/parity_pytorch.py, which recomputes it all in float64 (see its
// docstring for why on stoke's branch, and what proves that branch honest).
package paritytest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"stoke/model"
)

// Tolerance is the largest error allowed between stoke (float32) and
// PyTorch's float64 recomputation on stoke's branch, per tensor, as a
// fraction of the tensor's largest magnitude.
const Tolerance = 1e-4

// Band is how close to a ReLU's kink (or a max-pool's tie), in units of
// PyTorch's own largest float32 error at that site, a value may be for
// stoke's side of it to count as rounding: outside it stoke's branch must be
// float64's.
const Band = 4

// Case is one model and batch size to check.
type Case struct {
	Spec      model.Spec
	Batch     int
	Smoothing float32
	// Tolerance replaces the package's Tolerance for this case when > 0.
	Tolerance float64
}

func (c Case) String() string {
	return fmt.Sprintf("%s-%s-%dpx-batch%d-smoothing%g", c.Spec.Arch, c.Spec.Stem, c.Spec.InputSize, c.Batch, c.Smoothing)
}

// Cases are the archs and stems the parity check covers, at the batch
// sizes both engines are checked at.
func Cases() []Case {
	r20 := model.Spec{Arch: "resnet20", InputSize: 32, Classes: 10}
	return []Case{
		{r20, 8, 0, 0},
		{r20, 8, 0.1, 0},
		{model.Spec{Arch: "resnet18", Stem: model.StemCIFAR, InputSize: 32, Classes: 10}, 4, 0, 0},
		{model.Spec{Arch: "resnet18", Stem: model.StemCIFAR, InputSize: 16, Classes: 10}, 4, 0, 0},
		{model.Spec{Arch: "resnet18", Stem: model.StemImageNet, InputSize: 64, Classes: 10}, 4, 0, 0},
	}
}

// BottleneckTolerance is Tolerance for resnet50's 161 gradients through 53
// convs at batch 2: PyTorch's own float32 step, on the same weights, batch
// and branch, is up to 7.9e-4 of max|ref| from float64 (stoke's CPU engine
// 5.3e-4) at 64 px, imagenet stem; 4.8e-4 (stoke 2.7e-4) at 16 px, cifar
// stem (layer4.2.conv3's and conv2's filter gradients, the deepest).
const BottleneckTolerance = 1e-3

// BottleneckCases are the Bottleneck ResNets the parity check covers:
// resnet50 with each stem, at the smallest sizes whose last stage keeps
// 2x2 px (a BatchNorm over more than the batch's two values a channel).
// Apart from Cases: each takes a resnet50's weights (25M) through PyTorch.
func BottleneckCases() []Case {
	return []Case{
		{model.Spec{Arch: "resnet50", Stem: model.StemImageNet, InputSize: 64, Classes: 10}, 2, 0, BottleneckTolerance},
		{model.Spec{Arch: "resnet50", Stem: model.StemCIFAR, InputSize: 16, Classes: 10}, 2, 0.1, BottleneckTolerance},
	}
}

// Skip skips t where /usr/bin/python3 lacks torch and torchvision, and with
// -short.
func Skip(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the PyTorch parity check takes ~20 s a case")
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch, torchvision").CombinedOutput(); err != nil {
		t.Skipf("/usr/bin/python3 lacks torch/torchvision (apt-get install python3-torch python3-torchvision): %v: %s", err, strings.TrimSpace(string(out)))
	}
}

// Run checks c on eng, a subtest of t. What stoke computes is read through
// the model's public API: eval logits from Logits on running statistics set
// away from (0, 1); then one training step at lr 0 with momentum and no
// weight decay, after which each momentum buffer is the gradient itself
// (SGD's first step: v = g) and State holds the updated running statistics;
// the train-mode logits are the tap's (Tap.Logits). STOKE_PARITY_KEEP=DIR keeps each case's files in
// DIR/<case>, to rerun the script by hand.
func Run(t *testing.T, eng model.Engine, c Case) {
	t.Run(c.String(), func(t *testing.T) {
		dir := CaseDir(t, c.String())
		tap := &Tap{Engine: eng}
		m, err := model.NewOn(tap.Tapped(), c.Spec, model.Options{Batch: c.Batch, Seed: 11, Momentum: 0.9, LabelSmoothing: c.Smoothing})
		must(t, err)
		defer m.Close()
		rng := rand.New(rand.NewPCG(12, 13))
		state, _, err := m.State()
		must(t, err)
		for _, b := range state {
			switch {
			case strings.HasSuffix(b.Name, ".running_mean"):
				for i := range b.Data {
					b.Data[i] = float32(rng.NormFloat64() * 0.1)
				}
			case strings.HasSuffix(b.Name, ".running_var"):
				for i := range b.Data {
					b.Data[i] = float32(0.5 + rng.Float64())
				}
			case strings.HasSuffix(b.Name, ".num_batches_tracked"):
				b.Data[0] = 7
			}
		}
		must(t, m.Load(state, nil))
		S, K := c.Spec.InputSize, c.Spec.Classes
		x := make([]float32, c.Batch*3*S*S)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		labels := make([]int32, c.Batch)
		fl := make([]float32, c.Batch)
		for i := range labels {
			labels[i] = int32(rng.IntN(K))
			fl[i] = float32(labels[i])
		}
		evalLogits, err := m.Logits(model.Input{X: x, N: c.Batch})
		must(t, err)
		out, err := Step(m, tap, x, labels, c.Batch)
		if err != nil {
			t.Fatal(err)
		}
		out = append([]model.NamedTensor{{Name: "eval_logits", Shape: []int{c.Batch, K}, Data: evalLogits}}, out...)
		must(t, model.WriteSafetensors(filepath.Join(dir, "state.safetensors"), state, nil))
		must(t, model.WriteSafetensors(filepath.Join(dir, "batch.safetensors"), []model.NamedTensor{
			{Name: "x", Shape: []int{c.Batch, 3, S, S}, Data: x},
			{Name: "labels", Shape: []int{c.Batch}, Data: fl},
		}, nil))
		must(t, model.WriteSafetensors(filepath.Join(dir, "out.safetensors"), out, nil))
		must(t, model.WriteSafetensors(filepath.Join(dir, "branch.safetensors"), tap.Branch, nil))
		tol := Tolerance
		if c.Tolerance > 0 {
			tol = c.Tolerance
		}
		js, _ := json.Marshal(map[string]any{"arch": c.Spec.Arch, "stem": c.Spec.Stem, "classes": K,
			"tolerance": tol, "band": Band, "label_smoothing": c.Smoothing})
		must(t, os.WriteFile(filepath.Join(dir, "case.json"), js, 0o644))
		RunScript(t, "parity_pytorch.py", dir)
	})
}

// Step takes one training step at lr 0 on m, a fresh SGD model with
// momentum and no weight decay built on tap (model.NewOn(tap.Tapped())), whose first step
// leaves each momentum buffer holding the gradient itself (v = g), and
// returns what scripts/parity_pytorch.py checks: the train-mode logits
// ("train_logits"), the loss, each parameter's gradient ("grad.<name>") and
// the BatchNorm buffers after the step ("after.<name>"); tap.Branch then
// holds the step's branch. Load the weights with a nil optimizer state
// before each Step to keep the optimizer fresh.
func Step(m *model.Model, tap *Tap, x []float32, labels []int32, n int) ([]model.NamedTensor, error) {
	tap.Record(true)
	r, err := TrainStep(m, x, labels, n, 0)
	tap.Record(false)
	if err != nil {
		return nil, err
	}
	if tap.Err != nil {
		return nil, fmt.Errorf("reading the branch: %w", tap.Err)
	}
	logits := tap.Logits
	after, opt, err := m.State()
	if err != nil {
		return nil, err
	}
	K := m.Spec().Classes
	out := []model.NamedTensor{
		{Name: "train_logits", Shape: []int{len(logits) / K, K}, Data: logits},
		{Name: "loss", Shape: []int{1}, Data: []float32{float32(r.Loss)}},
	}
	for _, v := range opt {
		if p, ok := strings.CutSuffix(v.Name, model.MomentumSuffix); ok {
			out = append(out, model.NamedTensor{Name: "grad." + p, Shape: v.Shape, Data: v.Data})
		}
	}
	for _, b := range after {
		if strings.Contains(b.Name, ".running_") || strings.HasSuffix(b.Name, ".num_batches_tracked") {
			b.Name = "after." + b.Name
			out = append(out, b)
		}
	}
	return out, nil
}

// CaseDir is the folder a case's files go to: a fresh temporary one, or
// with STOKE_PARITY_KEEP=DIR, DIR/name, kept to rerun the script by hand.
func CaseDir(t *testing.T, name string) string {
	t.Helper()
	keep := os.Getenv("STOKE_PARITY_KEEP")
	if keep == "" {
		return t.TempDir()
	}
	dir := filepath.Join(keep, name)
	must(t, os.MkdirAll(dir, 0o755))
	return dir
}

// RunScript runs scripts/NAME on a case folder with /usr/bin/python3, logs
// what it prints and fails t when it exits non-zero (a tensor past the
// tolerance).
func RunScript(t *testing.T, name, dir string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", name)
	res, err := exec.Command("/usr/bin/python3", script, dir).CombinedOutput()
	t.Logf("%s", strings.TrimSpace(string(res)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// Tap wraps an engine's Layers (a model built on Tapped) and, while
// recording, keeps the branch each non-smooth layer took: the mask (1 where
// open) of every ReLU it runs — the BatchNorms with a fused ReLU (training
// forward) and the residual add+ReLUs — as relu.<k>, and every max-pool's
// input as maxpool.<k>, k counting each kind in call order; and the logits
// of the head's linear layer (Logits: a training step's are the train-mode
// ones, which Model.Logits cannot give). Everything else is the wrapped
// engine.
//
// With Follow set (to a Raw tap that recorded the same step on another
// engine), a Raw tap makes its engine take Follow's side of every ReLU where
// the two differ and the open side's value is within Within of the site's
// largest output (rounding): it writes Follow's value (0 where Follow's is
// shut) into its own output before anything reads it, and counts it in
// Followed. A difference beyond that is an error (Err): not rounding.
type Tap struct {
	model.Engine
	Raw      bool // keep each ReLU's output itself, not its mask
	Follow   *Tap
	Within   float64
	Followed int
	Branch   []model.NamedTensor
	Logits   []float32 // the last linear layer's output while recording, all B rows
	Err      error     // the first failed read, or a branch Follow's beyond rounding
	on       bool
	relus    int
	pools    int
}

// Tapped is the engine with t as its Layers: what a tapped model is built
// on (model.NewOn).
func (t *Tap) Tapped() model.Engine {
	e := t.Engine
	e.Layers = t
	return e
}

// TrainStep is one training step on a float32 batch, run to its end.
func TrainStep(m *model.Model, x []float32, labels []int32, n int, lr float32) (model.StepResult, error) {
	p, err := m.Start(model.Input{X: x, Labels: labels, N: n}, lr)
	if err != nil {
		return model.StepResult{}, err
	}
	r, _, err := p.Wait()
	return r, err
}

// Record starts (clearing what was kept) or stops recording.
func (t *Tap) Record(on bool) {
	if on {
		t.Branch, t.Logits, t.Err, t.relus, t.pools, t.Followed = nil, nil, nil, 0, 0, 0
	}
	t.on = on
}

// read is a copy of v's values on the host.
func (t *Tap) read(v G.Value) ([]float32, error) {
	d, err := t.Read(nil, v)
	return slices.Clone(d), err
}

func (t *Tap) keep(kind string, k *int, v G.Value, relu bool) {
	if !t.on || t.Err != nil {
		return
	}
	d, err := t.read(v)
	if err != nil {
		t.Err = err
		return
	}
	name := fmt.Sprintf("%s.%d", kind, *k)
	if relu && t.Follow != nil {
		if err := t.follow(name, d, v); err != nil {
			t.Err = err
			return
		}
	}
	if relu && !t.Raw {
		for i, y := range d {
			if y > 0 {
				d[i] = 1
			} else {
				d[i] = 0
			}
		}
	}
	t.Branch = append(t.Branch, model.NamedTensor{Name: name, Shape: []int{len(d)}, Data: d})
	*k++
}

// follow puts d (v's values) on Follow's branch for site name.
func (t *Tap) follow(name string, d []float32, v G.Value) error {
	n := len(t.Branch)
	if n >= len(t.Follow.Branch) || t.Follow.Branch[n].Name != name || len(t.Follow.Branch[n].Data) != len(d) {
		return fmt.Errorf("%s: the followed engine ran no such ReLU", name)
	}
	ref := t.Follow.Branch[n].Data
	var top float64
	for _, y := range ref {
		top = max(top, float64(y))
	}
	moved := false
	for i, y := range d {
		r := ref[i]
		if (y > 0) == (r > 0) {
			continue
		}
		if open := float64(max(y, r)); open > t.Within*top {
			return fmt.Errorf("%s[%d] is %g on one engine and %g on the other (largest output %.3g): the engines disagree beyond rounding", name, i, y, r, top)
		}
		d[i] = max(r, 0)
		t.Followed++
		moved = true
	}
	if moved {
		return t.Upload(v, d)
	}
	return nil
}

// NewLinear taps the head: its output, the logits, is kept in Logits.
func (t *Tap) NewLinear(B, C, N int) (model.LinearKernel, error) {
	k, err := t.Engine.NewLinear(B, C, N)
	if err != nil {
		return nil, err
	}
	return tapLinear{k, t}, nil
}

type tapLinear struct {
	model.LinearKernel
	t *Tap
}

func (l tapLinear) Forward(h, w, b, z G.Value) error {
	err := l.LinearKernel.Forward(h, w, b, z)
	if t := l.t; err == nil && t.on && t.Err == nil {
		t.Logits, t.Err = t.read(z)
	}
	return err
}

// NewBatchNormAddReLU taps a BasicBlock's end, ReLU(BatchNorm(x) + s): its
// ReLU is kept as the block's residual one.
func (t *Tap) NewBatchNormAddReLU(B, C, HW int) (model.BatchNormAddReLUKernel, error) {
	k, err := t.Engine.NewBatchNormAddReLU(B, C, HW)
	if err != nil {
		return nil, err
	}
	return tapBNAdd{k, t}, nil
}

type tapBNAdd struct {
	model.BatchNormAddReLUKernel
	t *Tap
}

func (b tapBNAdd) Forward(x, gamma, beta, s, y, runMean, runVar G.Value, n int, training bool) error {
	err := b.BatchNormAddReLUKernel.Forward(x, gamma, beta, s, y, runMean, runVar, n, training)
	if err == nil {
		b.t.keep("relu", &b.t.relus, y, true)
	}
	return err
}

func (t *Tap) NewBatchNorm(B, C, HW int, relu bool) (model.BatchNormKernel, error) {
	k, err := t.Engine.NewBatchNorm(B, C, HW, relu)
	if err != nil || !relu {
		return k, err
	}
	return tapBN{k, t}, nil
}

type tapBN struct {
	model.BatchNormKernel
	t *Tap
}

func (b tapBN) Forward(x, gamma, beta, y, runMean, runVar G.Value, n int, training bool) error {
	err := b.BatchNormKernel.Forward(x, gamma, beta, y, runMean, runVar, n, training)
	if err == nil && training {
		b.t.keep("relu", &b.t.relus, y, true)
	}
	return err
}

func (t *Tap) NewMaxPool(B, C, H, W, K, stride, pad int) (model.MaxPoolKernel, error) {
	k, err := t.Engine.NewMaxPool(B, C, H, W, K, stride, pad)
	if err != nil {
		return nil, err
	}
	return tapPool{k, t}, nil
}

type tapPool struct {
	model.MaxPoolKernel
	t *Tap
}

func (p tapPool) Forward(x, y G.Value) error {
	err := p.MaxPoolKernel.Forward(x, y)
	if err == nil {
		p.t.keep("maxpool", &p.t.pools, x, false)
	}
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
