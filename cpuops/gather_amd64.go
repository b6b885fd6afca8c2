package cpuops

import "stoke/gemm"

// gatherRows16AVX512 fills n rows of 16 floats at dst: row r, column j gets
// base[r+offs[j]] (gather_amd64.s). Every element it reads must exist.
//
//go:noescape
func gatherRows16AVX512(dst, base *float32, offs *[16]int32, n int)

// useAVX512 chooses the AVX-512 loops as gemm chooses its kernel (not
// under STOKE_GEMM=avx2 nor the build tag stokepurego).
var useAVX512 = gemm.HasAVX512()
