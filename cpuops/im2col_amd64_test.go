package cpuops

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkColTPack packs the filter-gradient GEMM's colᵀ of the reference
// CNN's conv1 (32 planes of 32×32, 3×3: k = 1024 pixels, n = 288 taps, in
// k blocks of 256) with the scalar gathers and with VGATHERDPS, side by
// side (-count N alternates them); ns-cpu is per pack, by process CPU time.
func BenchmarkColTPack(b *testing.B) {
	const planes, H, W, K = 32, 32, 32, 3
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, planes*H*W)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	ct := &colTPanels{&Conv{H: H, W: W, K: K, taps: makeTaps(planes, H, W, K)}, x}
	dst := make([]float32, 256*288)
	for r := 1; r <= 3; r++ { // rounds alternate the two (-count repeats each back to back)
		for _, v := range []struct {
			name string
			avx  bool
		}{{"go", false}, {"avx512", true}} {
			b.Run(fmt.Sprintf("r%d/%s", r, v.name), func(b *testing.B) {
				if v.avx && !useAVX512 {
					b.Skip("no AVX-512")
				}
				defer func(u bool) { useAVX512 = u }(useAVX512)
				useAVX512 = v.avx
				cpu0 := cpuTime()
				for b.Loop() {
					for pc := 0; pc < H*W; pc += 256 {
						ct.PackB(dst, pc, 0, 256, 288)
					}
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "ns-cpu/op")
			})
		}
	}
}
