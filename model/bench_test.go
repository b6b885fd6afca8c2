package model

import (
	"math/rand/v2"
	"testing"
)

// quickstartSpec is the quickstart-like model: 32 px, conv 16 pool, 32 pool, 64.
var quickstartSpec = Spec{InputSize: 32, Classes: 10, Conv: []ConvSpec{
	{Channels: 16, Kernel: 3, Pool: true}, {Channels: 32, Kernel: 3, Pool: true}, {Channels: 64, Kernel: 3},
}}

// BenchmarkTrainStep reports ms/step, img/s, and the process RSS after the
// first step and after the last (run with -benchtime=50x for "after 50").
func BenchmarkTrainStep(b *testing.B) {
	const batch = 64
	m := newModel(b, quickstartSpec, Options{Batch: batch, Seed: 1, Momentum: 0.9, WeightDecay: 1e-4})
	rng := rand.New(rand.NewPCG(1, 1))
	x := randomInput(rng, batch*3*32*32)
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(rng.IntN(10))
	}
	if _, err := m.TrainStep(x, labels, batch, 0.01); err != nil {
		b.Fatal(err)
	}
	rss1 := rssBytes()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.TrainStep(x, labels, batch, 0.01); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	perStep := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perStep*1e3, "ms/step")
	b.ReportMetric(batch/perStep, "img/s")
	b.ReportMetric(mib(rss1), "MiB-RSS-after-1")
	b.ReportMetric(mib(rssBytes()), "MiB-RSS-after-N")
}

func BenchmarkEvalStep(b *testing.B) {
	const batch = 64
	m := newModel(b, quickstartSpec, Options{Batch: batch, Seed: 1})
	x := randomInput(rand.New(rand.NewPCG(1, 1)), batch*3*32*32)
	labels := make([]int32, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.EvalStep(x, labels, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1e3, "ms/step")
}
