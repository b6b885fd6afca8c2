package augment

import "stoke/gemm"

// hasAVX2 is gemm's answer, so that every vector loop of the program
// chooses the same way (AVX2 and FMA, and the OS saving the ymm registers).
var hasAVX2 = gemm.HasAVX2()

// The vector kernels (kernels_amd64.s). n counts values (or outputs, for
// hpassAVX2) and is a positive multiple of 8 where the Go side says so.

//go:noescape
func widenAVX2(dst *float32, src *uint8, n int)

//go:noescape
func hpassAVX2(out, row *float32, start, n *int32, w *float32, k, x0, sw int, flip bool)

//go:noescape
func vpassAVX2(acc, in *float32, off *int, w *float32, taps, n int)

//go:noescape
func storeF32AVX2(dst, src *float32, n int, m, inv float32)

//go:noescape
func storeU8AVX2(dst *uint8, src *float32, n int)

//go:noescape
func brightnessAVX2(p *float32, n int, f float32)

//go:noescape
func contrastAVX2(p *float32, n int, f, m float32)

//go:noescape
func saturationAVX2(rp, gp, bp *float32, n int, f, omf float32, gw *[3]float32)

//go:noescape
func graySumAVX2(rp, gp, bp *float32, n int, s *[8]float64, gw *[3]float32)
