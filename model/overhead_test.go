package model

import (
	"testing"

	G "gorgonia.org/gorgonia"
)

// nopEngine is the CPU engine with every layer a no-op: a step on it costs
// what the graph itself costs on the host (gorgonia's tape machine, our ops'
// dispatch, the input copy and scoring), which a GPU step must absorb.
type nopEngine struct{ cpuEngine }

type nopConv struct{}

func (nopConv) Forward(_, _, _, _ G.Value) error           { return nil }
func (nopConv) BackwardData(_, _, _, _ G.Value) error      { return nil }
func (nopConv) BackwardFilter(_, _, _, _, _ G.Value) error { return nil }

func (nopEngine) NewConv(B, Cin, H, W, Cout, K int, pool bool) (ConvKernel, error) {
	return nopConv{}, nil
}

type nopLayer struct{}

func (nopLayer) Forward(_, _ G.Value) error                   { return nil }
func (nopLayer) Backward(_, _ G.Value) error                  { return nil }
func (nopLayer) BackwardData(_, _, _ G.Value) error           { return nil }
func (nopLayer) BackwardWeight(_, _, _ G.Value) error         { return nil }
func (nopLayer) BackwardBias(_, _ G.Value) error              { return nil }
func (nopEngine) NewAvgPool(_, _ int) (AvgPoolKernel, error)  { return nopLayer{}, nil }
func (nopEngine) NewLinear(_, _, _ int) (LinearKernel, error) { return nopLinear{}, nil }
func (nopEngine) NewXent(_, _ int) (XentKernel, error)        { return nopXent{}, nil }

type nopLinear struct{ nopLayer }

func (nopLinear) Forward(_, _, _, _ G.Value) error { return nil }

type nopXent struct{}

func (nopXent) Forward(_, _ G.Value) (float64, error)             { return 1, nil }
func (nopXent) Backward(_, _ G.Value, _ float32, _ G.Value) error { return nil }

// BenchmarkGraphOverhead: a training step of the quickstart's graph (3 conv
// blocks, pooled, pooled, not) with no arithmetic in its layers, on tiny
// tensors. go test -run - -bench GraphOverhead ./model
func BenchmarkGraphOverhead(b *testing.B) {
	spec := Spec{InputSize: 8, Classes: 10, Conv: []ConvSpec{
		{Channels: 2, Kernel: 3, Pool: true}, {Channels: 2, Kernel: 3, Pool: true}, {Channels: 2, Kernel: 3}}}
	m, err := NewOn(engineOf(nopEngine{}), spec, Options{Batch: 32, Momentum: 0.9})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	x := make([]float32, 32*3*8*8)
	labels := make([]int32, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := m.TrainStep(x, labels, 32, 0.01); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNopEngineRunsTheGraph(t *testing.T) {
	spec := Spec{InputSize: 8, Classes: 3, Conv: []ConvSpec{{Channels: 2, Kernel: 3}}}
	m, err := NewOn(engineOf(nopEngine{}), spec, Options{Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, err := m.TrainStep(make([]float32, 2*3*8*8), []int32{0, 1}, 2, 0.1)
	if err != nil || r.Loss != 1 {
		t.Fatalf("a step on the no-op engine: %+v, %v; want the engine's loss 1", r, err)
	}
}
