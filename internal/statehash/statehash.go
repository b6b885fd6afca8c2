// Package statehash pins what training does, bit for bit: the state after 3
// steps of a fixed set of archs and optimizers (issue 22's list), hashed,
// against a golden file. model's TestStateHashesUnchanged runs it on the CPU
// engine (per kernel path), cudaops's TestGPUStateHashesUnchanged on the GPU
// engine; both use these cases, batches, hash and file handling, so the two
// engines are pinned by the same rules.
package statehash

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"stoke/model"
)

// Case is one arch and optimizer, trained at LR.
type Case struct {
	Name string
	Spec model.Spec
	Opt  model.Options
	LR   float32
}

// Cases: the cnn, the cnn with AdamW, resnet20, resnet20 with AdamW,
// resnet18 with both stems, and Nesterov with the no-decay and smoothing
// options on the cnn and resnet20.
var Cases = []Case{
	{"cnn", model.Spec{InputSize: 12, Classes: 5, Conv: []model.ConvSpec{{Channels: 6, Kernel: 3, Pool: true}, {Channels: 8, Kernel: 3, Pool: false}, {Channels: 10, Kernel: 1, Pool: true}}}, model.Options{Momentum: 0.9, WeightDecay: 5e-4}, 0.05},
	{"cnn-adamw", model.Spec{InputSize: 12, Classes: 5, Conv: []model.ConvSpec{{Channels: 6, Kernel: 3, Pool: true}, {Channels: 8, Kernel: 3, Pool: false}}}, model.Options{Optimizer: model.OptimizerAdamW, WeightDecay: 0.05}, 1e-3},
	{"cnn-nesterov", model.Spec{InputSize: 12, Classes: 5, Conv: []model.ConvSpec{{Channels: 6, Kernel: 3, Pool: true}, {Channels: 8, Kernel: 3, Pool: false}}}, model.Options{Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, NoDecayNormAndBias: true, LabelSmoothing: 0.1}, 0.05},
	{"resnet20", model.Spec{Arch: "resnet20", InputSize: 8, Classes: 5}, model.Options{Momentum: 0.9, WeightDecay: 5e-4}, 0.05},
	{"resnet20-adamw", model.Spec{Arch: "resnet20", InputSize: 8, Classes: 5}, model.Options{Optimizer: model.OptimizerAdamW, WeightDecay: 0.05, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6}, 1e-3},
	{"resnet20-nesterov", model.Spec{Arch: "resnet20", InputSize: 8, Classes: 5}, model.Options{Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4, NoDecayNormAndBias: true, LabelSmoothing: 0.1}, 0.05},
	{"resnet18-imagenet", model.Spec{Arch: "resnet18", Stem: model.StemImageNet, InputSize: 16, Classes: 5}, model.Options{Momentum: 0.9, WeightDecay: 5e-4}, 0.05},
	{"resnet18-cifar", model.Spec{Arch: "resnet18", Stem: model.StemCIFAR, InputSize: 8, Classes: 5}, model.Options{Momentum: 0.9, WeightDecay: 5e-4}, 0.05},
}

// Options is c's optimizer options with the batch (4) and seed (7) every
// engine trains the case with.
func (c Case) Options() model.Options {
	o := c.Opt
	o.Batch, o.Seed = 4, 7
	return o
}

// Train runs the case's 3 steps through step, on fixed batches (the third
// with 3 of its 4 rows valid).
func (c Case) Train(t *testing.T, step func(in model.Input, lr float32) error) {
	t.Helper()
	opt := c.Options()
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, opt.Batch*3*c.Spec.InputSize*c.Spec.InputSize)
	labels := make([]int32, opt.Batch)
	for i, n := range []int{4, 4, 3} {
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		for j := range labels {
			labels[j] = int32(rng.IntN(c.Spec.Classes))
		}
		if err := step(model.Input{X: x, Labels: labels, N: n}, c.LR); err != nil {
			t.Fatalf("%s: step %d: %v", c.Name, i, err)
		}
	}
}

// Hash is every name, shape and float's bits of the parameters and
// buffers, then of the optimizer state, in their order.
func Hash(params, optState []model.NamedTensor) string {
	h := sha256.New()
	for _, ts := range [][]model.NamedTensor{params, optState} {
		for _, nt := range ts {
			fmt.Fprintf(h, "%s%v;", nt.Name, nt.Shape)
			for _, v := range nt.Data {
				_ = binary.Write(h, binary.LittleEndian, math.Float32bits(v))
			}
		}
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Golden is a golden file: one set of hashes per key (a kernel path, a
// device).
type Golden struct {
	File string
	sets map[string]map[string]string
}

// ReadGolden reads file; a missing file is an error unless update.
func ReadGolden(t *testing.T, file string, update bool) *Golden {
	t.Helper()
	g := &Golden{File: file, sets: map[string]map[string]string{}}
	b, err := os.ReadFile(file)
	if err != nil {
		if !update {
			t.Fatal(err)
		}
		return g
	}
	if err := json.Unmarshal(b, &g.sets); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return g
}

// Has says whether the file holds hashes for key.
func (g *Golden) Has(key string) bool { _, ok := g.sets[key]; return ok }

// Write replaces key's hashes with got and rewrites the file.
func (g *Golden) Write(t *testing.T, key string, got map[string]string) {
	t.Helper()
	g.sets[key] = got
	b, _ := json.MarshalIndent(g.sets, "", "  ")
	if err := os.MkdirAll(filepath.Dir(g.File), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.File, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Compare fails t for each case whose hash differs from key's.
func (g *Golden) Compare(t *testing.T, key string, got map[string]string) {
	t.Helper()
	want := g.sets[key]
	for _, c := range Cases {
		if got[c.Name] != want[c.Name] {
			t.Errorf("%s: state hash after 3 steps %s, want %s", c.Name, got[c.Name], want[c.Name])
		}
	}
}
