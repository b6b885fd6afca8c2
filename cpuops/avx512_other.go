//go:build !amd64

package cpuops

const useAVX512 = false

func pool2x2RowAVX512(r0, r1, out *float32, arg *uint8, n int) {
	panic("cpuops: pool2x2RowAVX512 without AVX-512")
}

func gatherRows16AVX512(dst, src *float32, offs *int, n int, idx *int32, mask uint16) {
	panic("cpuops: gatherRows16AVX512 without AVX-512")
}

func padRowsAVX512(dst, src *float32, rows, w, wp int, tail, gap uint16) {
	panic("cpuops: padRowsAVX512 without AVX-512")
}

func transpose16x8AVX512(dst, src *float32, offs *int) {
	panic("cpuops: transpose16x8AVX512 without AVX-512")
}

func addStride2RowsAVX512(dst, src *float32, w, rows, ld, srcLd int, tail uint8) {
	panic("cpuops: addStride2RowsAVX512 without AVX-512")
}

func filter18x16AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filter18x16AVX512 without AVX-512")
}

func filter9x16AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filter9x16AVX512 without AVX-512")
}

func filter9x32AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filter9x32AVX512 without AVX-512")
}

func filter18x16s2AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filter18x16s2AVX512 without AVX-512")
}

func filter9x16s2AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filter9x16s2AVX512 without AVX-512")
}

func filter9x32s2AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filter9x32s2AVX512 without AVX-512")
}

func filterBF16x18x16AVX512(segs *int, nseg int, src *uint16, chanStride, rowStride int, b *uint32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filterBF16x18x16AVX512 without AVX-512")
}

func filterBF16x9x16AVX512(segs *int, nseg int, src *uint16, chanStride, rowStride int, b *uint32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filterBF16x9x16AVX512 without AVX-512")
}

func filterBF16x9x32AVX512(segs *int, nseg int, src *uint16, chanStride, rowStride int, b *uint32, bstride int, c *float32, ldc int, beta float32) {
	panic("cpuops: filterBF16x9x32AVX512 without AVX-512")
}

func copyRows16s2AVX512(dst, src *float32, offs *int, n, c0, c1 int, idx *int32) {
	panic("cpuops: copyRows16s2AVX512 without AVX-512")
}

func winoInAVX512(dst *float32, stride int, src *float32, wp, n, rows int, idx *int32) {
	panic("cpuops: winoInAVX512 without AVX-512")
}

func winoOutAVX512(dst *float32, w int, src *float32, stride, n, rows int, idx *int32) {
	panic("cpuops: winoOutAVX512 without AVX-512")
}

func winoWeightsAVX512(v *float32, stride int, w *float32, n, ls, flip int, idx *int32) {
	panic("cpuops: winoWeightsAVX512 without AVX-512")
}

func winoDyAVX512(dst *float32, stride int, src *float32, plane, w, n, rows, cnt int, idx *int32) {
	panic("cpuops: winoDyAVX512 without AVX-512")
}

func winoDwAVX512(dw *float32, dwStride int, src *float32, stride, cstride, n, cnt int, idx *int32) {
	panic("cpuops: winoDwAVX512 without AVX-512")
}

func winoInGAVX512(dst *float32, stride int, src *float32, offs *int32, wp, n int) {
	panic("cpuops: winoInGAVX512 without AVX-512")
}

func winoOutSAVX512(dst *float32, w int, src *float32, stride int, offs *int32, n int) {
	panic("cpuops: winoOutSAVX512 without AVX-512")
}
