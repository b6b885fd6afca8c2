package gemm

import "unsafe"

// kernelGo is the portable micro-kernel: the same 6×16 tile as the
// assembly one, computed as 2×4 sub-tiles whose eight sums stay in
// registers over the whole k loop (a 6×16 array of sums would be loaded
// and stored at every step: 4x slower, measured).
func kernelGo(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	ap := unsafe.Slice(a, k*mr)
	bp := unsafe.Slice(b, k*nr)
	cs := unsafe.Slice(c, (mr-1)*ldc+nr)
	for i := 0; i < mr; i += 2 {
		for j := 0; j < nr; j += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			for p := 0; p < k; p++ {
				av := (*[2]float32)(ap[p*mr+i : p*mr+i+2])
				bv := (*[4]float32)(bp[p*nr+j : p*nr+j+4])
				a0, a1 := av[0], av[1]
				b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
			}
			r0 := (*[4]float32)(cs[i*ldc+j : i*ldc+j+4])
			r1 := (*[4]float32)(cs[(i+1)*ldc+j : (i+1)*ldc+j+4])
			if beta == 0 {
				*r0 = [4]float32{alpha * c00, alpha * c01, alpha * c02, alpha * c03}
				*r1 = [4]float32{alpha * c10, alpha * c11, alpha * c12, alpha * c13}
				continue
			}
			*r0 = [4]float32{beta*r0[0] + alpha*c00, beta*r0[1] + alpha*c01, beta*r0[2] + alpha*c02, beta*r0[3] + alpha*c03}
			*r1 = [4]float32{beta*r1[0] + alpha*c10, beta*r1[1] + alpha*c11, beta*r1[2] + alpha*c12, beta*r1[3] + alpha*c13}
		}
	}
}
