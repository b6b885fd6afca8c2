//go:build !amd64

package augment

// No vector kernels off amd64: the dispatchers in kernels.go never call
// these, as hasAVX2 is false.
const hasAVX2 = false

func widenAVX2(dst *float32, src *uint8, n int) { panic("unreachable") }
func hpassAVX2(out, row *float32, start, n *int32, w *float32, k, x0, sw int, flip bool) {
	panic("unreachable")
}
func vpassAVX2(acc, in *float32, off *int, w *float32, taps, n int)             { panic("unreachable") }
func storeF32AVX2(dst, src *float32, n int, m, inv float32)                     { panic("unreachable") }
func storeU8AVX2(dst *uint8, src *float32, n int)                               { panic("unreachable") }
func brightnessAVX2(p *float32, n int, f float32)                               { panic("unreachable") }
func contrastAVX2(p *float32, n int, f, m float32)                              { panic("unreachable") }
func saturationAVX2(rp, gp, bp *float32, n int, f, omf float32, gw *[3]float32) { panic("unreachable") }
func graySumAVX2(rp, gp, bp *float32, n int, s *[8]float64, gw *[3]float32)     { panic("unreachable") }
