package model

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// copyValues is the CPU's memory made to behave as a device's: a value
// made from a host slice (ValueOf) is a copy of it, Read copies into the
// caller's buffer and Upload copies back, so a model on it must make every
// Upload and Read a GPU engine needs. Its kernels are the CPU's: its
// results must be the CPU model's, bit for bit.
type copyValues struct{ cpuEngine }

func (copyValues) ValueOf(data []float32, shape tensor.Shape) (*tensor.Dense, error) {
	v, err := cpuEngine{}.NewValue(shape)
	if err == nil {
		copy(v.Float32s(), data)
	}
	return v, err
}

func (copyValues) Read(buf []float32, src G.Value) ([]float32, error) {
	s, err := f32(src)
	if err != nil {
		return nil, err
	}
	if buf == nil {
		buf = make([]float32, len(s))
	}
	if len(buf) != len(s) {
		return nil, fmt.Errorf("read of %d floats into %d", len(s), len(buf))
	}
	copy(buf, s)
	return buf, nil
}

func copyEngine() Engine {
	e := CPUEngine()
	e.Values = copyValues{}
	return e
}

// TestModelOnCopyingValues: the cnn and resnet20, SGD and AdamW, with and
// without a GradSync (its first step without samples, as a rank's empty
// slice of a short batch), on an engine whose values are not the model's
// host slices: every step, eval, logits and state are the CPU model's, bit
// for bit, and so is a model Loaded with the CPU model's state. A missing
// Upload or Read (a host-only shortcut) would leave one side stale.
func TestModelOnCopyingValues(t *testing.T) {
	r20 := Spec{Arch: "resnet20", InputSize: 8, Classes: 3}
	sgd := Options{Batch: 4, Seed: 3, Momentum: 0.9, WeightDecay: 1e-3}
	adamw := Options{Batch: 4, Seed: 3, Optimizer: OptimizerAdamW, WeightDecay: 1e-2}
	for _, tc := range []struct {
		name string
		spec Spec
		opt  Options
		sync bool
	}{
		{"cnn-sgd", tinySpec, sgd, false},
		{"cnn-sgd-sync", tinySpec, sgd, true},
		{"resnet20-adamw", r20, adamw, false},
		{"resnet20-sgd-sync", r20, sgd, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu := newModel(t, tc.spec, tc.opt)
			dev, err := NewOn(copyEngine(), tc.spec, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			ns := []int{4, 3}
			if tc.sync {
				cpu.SetGradSync(&scaleSync{t: t})
				dev.SetGradSync(&scaleSync{t: t})
				ns = []int{0, 4, 3}
			}
			S := tc.spec.InputSize
			rng := rand.New(rand.NewPCG(5, 6))
			for k, n := range ns {
				in := Input{X: randomInput(rng, 4*3*S*S), Labels: []int32{0, 1, 2, int32(k % 3)}, N: n}
				want, err1 := startWait(cpu, in)
				got, err2 := startWait(dev, in)
				if err := errors.Join(err1, err2); err != nil {
					t.Fatalf("step %d: %v", k, err)
				}
				if got != want {
					t.Fatalf("step %d (n = %d): %+v on copying values, %+v on the CPU", k, n, got, want)
				}
				if n == 0 {
					continue
				}
				we, err1 := cpu.Eval(in)
				ge, err2 := dev.Eval(in)
				wl, err3 := cpu.Logits(in)
				gl, err4 := dev.Logits(in)
				if err := errors.Join(err1, err2, err3, err4); err != nil {
					t.Fatal(err)
				}
				if ge.LossSum != we.LossSum || ge.Top1 != we.Top1 || !slices.Equal(gl, wl) {
					t.Fatalf("step %d: eval %+v, logits %v on copying values; %+v, %v on the CPU", k, ge, gl, we, wl)
				}
			}
			wp, wo := mustState(t, cpu)
			gp, gov := mustState(t, dev)
			if !equalTensors(gp, wp) || !equalTensors(gov, wo) {
				t.Fatal("the state on copying values differs from the CPU model's")
			}
			// Load goes the other way: a fresh model on copying values,
			// loaded with the CPU's state, takes the CPU's next step.
			o := tc.opt
			o.Seed++
			fresh, err := NewOn(copyEngine(), tc.spec, o)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			if err := fresh.Load(wp, wo); err != nil {
				t.Fatal(err)
			}
			in := Input{X: randomInput(rng, 4*3*S*S), Labels: []int32{2, 1, 0, 1}, N: 4}
			cpu.SetGradSync(nil)
			want, err1 := startWait(cpu, in)
			got, err2 := startWait(fresh, in)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			fp, fo := mustState(t, fresh)
			wp, wo = mustState(t, cpu)
			if got != want || !equalTensors(fp, wp) || !equalTensors(fo, wo) {
				t.Fatalf("after Load: step %+v against the CPU's %+v, or the states differ", got, want)
			}
		})
	}
}

func startWait(m *Model, in Input) (StepResult, error) {
	p, err := m.Start(in, 0.05)
	if err != nil {
		return StepResult{}, err
	}
	r, _, err := p.Wait()
	return r, err
}

func mustState(t *testing.T, m *Model) (params, optState []NamedTensor) {
	t.Helper()
	p, o, err := m.State()
	if err != nil {
		t.Fatal(err)
	}
	return p, o
}

// TestEvalWithoutLabels: Eval on a batch without labels is an error naming
// them, not an index panic.
func TestEvalWithoutLabels(t *testing.T) {
	m := newModel(t, tinySpec, Options{Batch: 2, Seed: 1})
	_, err := m.Eval(Input{X: make([]float32, 2*3*6*6), N: 2})
	if err == nil || !strings.Contains(err.Error(), "labels are missing") {
		t.Fatalf("Eval without labels: %v, want an error saying the labels are missing", err)
	}
}

// TestLogitsOfU8: Logits takes every kind of Input; a uint8 batch gives
// the logits of the same pixels normalized on the host.
func TestLogitsOfU8(t *testing.T) {
	opt := Options{Batch: 2, Seed: 1, Mean: [3]float32{0.5, 0.4, 0.3}, Std: [3]float32{0.2, 0.25, 0.3}}
	m := newModel(t, tinySpec, opt)
	rng := rand.New(rand.NewPCG(3, 4))
	u8 := make([]uint8, 2*3*6*6)
	x := make([]float32, len(u8))
	for i := range u8 {
		u8[i] = uint8(rng.IntN(256))
		c := i / 36 % 3
		x[i] = (float32(u8[i])/255 - opt.Mean[c]) / opt.Std[c]
	}
	want, err1 := m.Logits(Input{X: x, N: 2})
	got, err2 := m.Logits(Input{U8: u8, N: 2})
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "logits of the uint8 batch", got, want, 1e-5)
}
