package gemm

// packA6AVX512 writes a row panel of rows (1..6) rows of A for 16·blocks
// columns (packa_amd64.s): dst[6q+i] = a[i·lda+q], zero for i >= rows.
//
//go:noescape
func packA6AVX512(dst, a *float32, lda, rows, blocks int)

// packRowsVec writes the first columns of a row panel (packA's layout,
// rows mm of its mr rows from a[base:], row stride lda, kb columns) by
// packA6AVX512 where the AVX-512 kernels run, and returns how many: a
// multiple of 16, 0 without AVX-512. A filter gradient's A is dy, whose
// panels were a scalar six-way interleave in Go (6% of a resnet20 step on
// an Intel Xeon of family 6 model 207).
func packRowsVec(p, a []float32, base, lda, mm, kb int) int {
	blocks := kb / 16
	if !HasAVX512() || blocks == 0 {
		return 0
	}
	_ = a[base+(mm-1)*lda+16*blocks-1] // the last row's last column read
	_ = p[mr*16*blocks-1]
	packA6AVX512(&p[0], &a[base], lda, mm, blocks)
	return 16 * blocks
}
