package cpuops

import "stoke/gemm"

// useAVX512 chooses the AVX-512 loops as gemm chooses its kernel (not
// under STOKE_GEMM=avx2 nor the build tag stokepurego).
var useAVX512 = gemm.HasAVX512()

// pool2x2RowAVX512 computes 16n outputs of one output row of pool2x2 and
// their argmax from input rows r0 and r1 (pool_amd64.s), as its Go loop.
//
//go:noescape
func pool2x2RowAVX512(r0, r1, out *float32, arg *uint8, n int)

// gatherRows16AVX512 sets dst[16q+j] = src[offs[q]+idx[j]] for q < n and
// the lanes j set in mask, 0 in the others (gather_amd64.s); the caller
// has checked that every index read lies in src.
//
//go:noescape
func gatherRows16AVX512(dst, src *float32, offs *int, n int, idx *int32, mask uint16)

// padRowsAVX512 writes the inner rows of a padded plane (pad_amd64.s):
// for r < rows, dst[r·wp:][:w] = src[r·w:][:w] and the 2P floats after
// it 0, where gap has the low 2P bits set (2P <= 16) and tail the low
// w%16; the caller has checked both slices' lengths.
//
//go:noescape
func padRowsAVX512(dst, src *float32, rows, w, wp int, tail, gap uint16)

// transpose16x8AVX512 sets dst[16i+j] = src[offs[j]+i] for i < 8, j < 16
// (gather_amd64.s); the caller has checked that every row lies in src.
//
//go:noescape
func transpose16x8AVX512(dst, src *float32, offs *int)

// addStride2RowsAVX512 sets dst[r·ld+2i] += src[r·srcLd+i] for r < rows,
// i < w (pad_amd64.s), touching no odd float of a row of dst; tail has
// the low w%8 bits set. The caller has checked both slices' lengths.
//
//go:noescape
func addStride2RowsAVX512(dst, src *float32, w, rows, ld, srcLd int, tail uint8)

// The filter gradient's kernels on the padded input where it lies
// (filter_amd64.s, gen_filter.go): a tile of dwᵀ of 9·ch rows, the 3x3
// taps of ch input channels (src + c·chanStride + ky·rowStride + kx),
// by 16·cb output channels (cb dyᵀ panels of 16, bstride floats apart),
// summed over the steps of segs (nseg pairs: offset, count) and stored
// at c (row stride ldc), or added to beta·C where beta != 0. The caller
// has checked that every value read and written lies in its slice.
//
//go:generate go run gen_filter.go
//go:noescape
func filter18x16AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32)

//go:noescape
func filter9x16AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32)

//go:noescape
func filter9x32AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32)

// The same kernels at stride 2: the steps of a run are 2 floats apart.
//
//go:noescape
func filter18x16s2AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32)

//go:noescape
func filter9x16s2AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32)

//go:noescape
func filter9x32s2AVX512(segs *int, nseg int, src *float32, chanStride, rowStride int, b *float32, bstride int, c *float32, ldc int, beta float32)

// The same kernels at bf16 on VDPBF16PS (AVX512_BF16: where
// gemm.FastBF16), stride 1: src is the padded input in bf16, b dyᵀ's
// panels of 16 output channels in pairs of steps (bstride dwords apart),
// and every count in segs is even (a kernel step is a pair of steps).
//
//go:noescape
func filterBF16x18x16AVX512(segs *int, nseg int, src *uint16, chanStride, rowStride int, b *uint32, bstride int, c *float32, ldc int, beta float32)

//go:noescape
func filterBF16x9x16AVX512(segs *int, nseg int, src *uint16, chanStride, rowStride int, b *uint32, bstride int, c *float32, ldc int, beta float32)

//go:noescape
func filterBF16x9x32AVX512(segs *int, nseg int, src *uint16, chanStride, rowStride int, b *uint32, bstride int, c *float32, ldc int, beta float32)

// copyRows16s2AVX512 sets dst[16q+i] = src[offs[q]+c0+2i] and
// dst[16q+8+i] = src[offs[q]+c1+2i] for q < n, i < 8 (gather_amd64.s;
// idx is evenLanes); the caller has checked that every row lies in src.
//
//go:noescape
func copyRows16s2AVX512(dst, src *float32, offs *int, n, c0, c1 int, idx *int32)

// winoInAVX512 and winoOutAVX512 are winoIn's and winoOut's transforms
// (winograd_amd64.s), 16 tiles a step; idx is winoLanes. The callers
// have checked every slice's length.
//
//go:noescape
func winoInAVX512(dst *float32, stride int, src *float32, wp, n, rows int, idx *int32)

//go:noescape
func winoOutAVX512(dst *float32, w int, src *float32, stride, n, rows int, idx *int32)

//go:noescape
func winoWeightsAVX512(v *float32, stride int, w *float32, n, ls, flip int, idx *int32)

//go:noescape
func winoInGAVX512(dst *float32, stride int, src *float32, offs *int32, wp, n int)

//go:noescape
func winoDyAVX512(dst *float32, stride int, src *float32, plane, w, n, rows, cnt int, idx *int32)

//go:noescape
func winoDwAVX512(dw *float32, dwStride int, src *float32, stride, cstride, n, cnt int, idx *int32)

//go:noescape
func winoOutSAVX512(dst *float32, w int, src *float32, stride int, offs *int32, n int)
