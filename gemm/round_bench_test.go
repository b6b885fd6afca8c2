package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkRoundBF16 times the bf16 rounding of the reference path
// (roundSlice at BF16) on buffers that stay in L1, in L2 and past it,
// as floats per nanosecond:
//
//	go test -run x -bench RoundBF16 ./gemm
func BenchmarkRoundBF16(b *testing.B) {
	b.Logf("cpu: %s", cpuDescription())
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		rng := rand.New(rand.NewPCG(5, 6))
		src := randSlice(rng, n)
		s := make([]float32, n)
		b.Run(fmt.Sprintf("%dKiB", n*4>>10), func(b *testing.B) {
			for b.Loop() {
				copy(s, src) // rounded values would round to themselves: time the work on fresh ones
				roundSlice(BF16, s)
			}
			b.ReportMetric(float64(n)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "floats/ns")
		})
		b.Run(fmt.Sprintf("%dKiB-copy", n*4>>10), func(b *testing.B) {
			for b.Loop() {
				copy(s, src)
			}
			b.ReportMetric(float64(n)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "floats/ns")
		})
	}
}
