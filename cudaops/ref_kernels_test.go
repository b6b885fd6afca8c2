package cudaops

import "math"

// The CPU mirror of kernels.cu: one function per kernel, with the same
// index arithmetic, each looping over what would be the CUDA thread index i.
// The CPU engine (engine_cpu_test.go) runs them; TestGPUKernelParity checks
// every kernel against it, on a GPU or under the stand-in.

// refSgemm is C = op(A)·op(B) as the sgemm kernel computes it (its tiling
// only changes the order of the float32 sums).
func refSgemm(tA, tB bool, M, N, Kd int, A, B, C []float32) {
	for m := range M {
		for n := range N {
			var s float32
			for k := range Kd {
				a := A[m*Kd+k]
				if tA {
					a = A[k*M+m]
				}
				b := B[k*N+n]
				if tB {
					b = B[n*Kd+k]
				}
				s += a * b
			}
			C[m*N+n] = s
		}
	}
}

func refBiasReLU(z, bias, y []float32, B, Cout, HW int) {
	for i := range B * Cout * HW {
		p, c, b := i%HW, (i/HW)%Cout, i/(Cout*HW)
		v := z[c*B*HW+b*HW+p] + bias[c]
		y[i] = max(v, 0)
	}
}

func refRowSums(a, out []float32, R, N int) {
	for r := range R {
		var s float32
		for _, v := range a[r*N : (r+1)*N] {
			s += v
		}
		out[r] = s
	}
}

func refColSums(a, out []float32, R, N int) {
	for j := range N {
		var s float32
		for r := range R {
			s += a[r*N+j]
		}
		out[j] = s
	}
}

func refAvgPool(x, y []float32, BC, HW int) {
	for i := range BC {
		var s float32
		for p := range HW {
			s += x[i*HW+p]
		}
		y[i] = s / float32(HW)
	}
}

func refAvgPoolBackward(dy, dx []float32, BC, HW int) {
	for i := range BC * HW {
		dx[i] = dy[i/HW] / float32(HW)
	}
}

func refAddRows(y, bias []float32, R, N int) {
	for i := range R * N {
		y[i] += bias[i%N]
	}
}

func refSoftmaxXent(z []float32, labels []int32, loss, dz []float32, B, K, n int) {
	for r := range B {
		row, d := z[r*K:(r+1)*K], dz[r*K:(r+1)*K]
		if r >= n {
			loss[r] = 0
			clear(d)
			continue
		}
		m := row[0]
		for _, v := range row[1:] {
			m = max(m, v)
		}
		var s float32
		for _, v := range row {
			s += exp32(v - m)
		}
		y := int(labels[r])
		loss[r] = m + float32(math.Log(float64(s))) - row[y]
		for j, v := range row {
			oh := float32(0)
			if j == y {
				oh = 1
			}
			d[j] = (exp32(v-m)/s - oh) / float32(n)
		}
	}
}

// refNormalizeU8 mirrors normalize_u8: (x/255 - mean[c]) / std[c], CHW.
func refNormalizeU8(x []uint8, y []float32, B, HW int, mean, std [3]float32) {
	for i := range B * 3 * HW {
		c := (i / HW) % 3
		y[i] = (float32(x[i])/255 - mean[c]) / std[c]
	}
}

func exp32(x float32) float32 { return float32(math.Exp(float64(x))) }
