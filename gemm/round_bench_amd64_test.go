package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkRoundBF16 times the bf16 rounding of the reference path
// (roundSlice at BF16) on each vector loop this CPU runs, side by side, on
// buffers that stay in L1, in L2 and past it, as floats per nanosecond;
// "copy" is the refill of the buffer alone, which every other one
// includes (rounded values would round to themselves):
//
//	go test -run x -bench RoundBF16 ./gemm
func BenchmarkRoundBF16(b *testing.B) {
	b.Logf("cpu: %s", cpuDescription())
	const drop, half, mask, nanMask = 16, 0x7fff, 0xffff0000, 0xffffffff
	loops := []struct {
		name string
		ok   bool
		f    func(s []float32)
	}{
		{"copy", true, func([]float32) {}},
		{"avx2", HasAVX2(), func(s []float32) { roundMantissaAVX2(&s[0], len(s), drop, half, mask, nanMask) }},
		{"avx512", HasAVX512(), func(s []float32) { roundMantissaAVX512(&s[0], len(s), drop, half, mask, nanMask) }},
		{"vcvtne2ps2bf16", roundCvt, func(s []float32) { roundBF16AVX512BF16(&s[0], len(s), nanMask) }},
	}
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		rng := rand.New(rand.NewPCG(5, 6))
		src := randSlice(rng, n)
		s := make([]float32, n)
		for _, l := range loops {
			if !l.ok {
				continue
			}
			b.Run(fmt.Sprintf("%dKiB/%s", n*4>>10, l.name), func(b *testing.B) {
				for b.Loop() {
					copy(s, src)
					l.f(s)
				}
				b.ReportMetric(float64(n)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "floats/ns")
			})
		}
	}
}
