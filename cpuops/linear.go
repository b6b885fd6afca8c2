package cpuops

import (
	"fmt"
	"math"

	"stoke/gemm"
)

// LinearForward computes z = h·w + b for h (B,C), w (C,N), b (N), z (B,N).
func LinearForward(B, C, N int, h, w, b, z []float32) {
	LinearForwardPrec(gemm.FP32, B, C, N, h, w, b, z)
}

// LinearForwardPrec is LinearForward with h and w rounded to p in the
// GEMM (gemm.SgemmPrec); b and the sums stay float32.
func LinearForwardPrec(p gemm.Precision, B, C, N int, h, w, b, z []float32) {
	if len(h) != B*C || len(w) != C*N || len(b) != N || len(z) != B*N {
		panic(fmt.Sprintf("cpuops.LinearForward: sizes h %d, w %d, b %d, z %d for B=%d C=%d N=%d", len(h), len(w), len(b), len(z), B, C, N))
	}
	for i := 0; i < B; i++ {
		copy(z[i*N:(i+1)*N], b)
	}
	gemm.SgemmPrec(p, false, false, B, N, C, 1, h, C, w, N, 1, z, N)
}

// LinearBackwardData computes dh = dz·wᵀ.
func LinearBackwardData(B, C, N int, w, dz, dh []float32) {
	LinearBackwardDataPrec(gemm.FP32, B, C, N, w, dz, dh)
}

// LinearBackwardDataPrec is LinearBackwardData with dz and w rounded to p.
func LinearBackwardDataPrec(p gemm.Precision, B, C, N int, w, dz, dh []float32) {
	gemm.SgemmPrec(p, false, true, B, C, N, 1, dz, N, w, N, 0, dh, C)
}

// LinearBackwardWeight computes dw = hᵀ·dz.
func LinearBackwardWeight(B, C, N int, h, dz, dw []float32) {
	LinearBackwardWeightPrec(gemm.FP32, B, C, N, h, dz, dw)
}

// LinearBackwardWeightPrec is LinearBackwardWeight with h and dz rounded
// to p.
func LinearBackwardWeightPrec(p gemm.Precision, B, C, N int, h, dz, dw []float32) {
	gemm.SgemmPrec(p, true, false, C, N, B, 1, h, C, dz, N, 0, dw, N)
}

// LinearBackwardBias computes db = Σ over rows of dz.
func LinearBackwardBias(B, N int, dz, db []float32) {
	clear(db)
	for i := 0; i < B; i++ {
		addTo(db, dz[i*N:(i+1)*N])
	}
}

// XentForward is softmax cross-entropy against a weighted target (B,N):
// Σ_i Σ_k t_ik·(logsumexp(z_i) − z_ik), summed in float64. Rows whose
// target is all zero (padding) are skipped, whatever their logits hold.
func XentForward(B, N int, z, t []float32) float64 {
	var loss float64
	for i := 0; i < B; i++ {
		row, trow := z[i*N:(i+1)*N], t[i*N:(i+1)*N]
		if rowSum(trow) == 0 {
			continue
		}
		lse := LogSumExp(row)
		for j, v := range trow {
			if v != 0 {
				loss += float64(v) * (lse - float64(row[j]))
			}
		}
	}
	return loss
}

// XentBackward computes dz = g·(softmax(z)·Σ_k t_k − t) row by row; padded
// rows get 0.
func XentBackward(B, N int, z, t []float32, g float32, dz []float32) {
	for i := 0; i < B; i++ {
		row, trow, drow := z[i*N:(i+1)*N], t[i*N:(i+1)*N], dz[i*N:(i+1)*N]
		w := rowSum(trow)
		if w == 0 {
			clear(drow)
			continue
		}
		lse := LogSumExp(row)
		for j := range drow {
			p := math.Exp(float64(row[j]) - lse)
			drow[j] = float32(float64(g) * (p*w - float64(trow[j])))
		}
	}
}

func rowSum(r []float32) float64 {
	var s float64
	for _, v := range r {
		s += float64(v)
	}
	return s
}

// LogSumExp is log Σ exp(row), stable: the row max is taken out first.
func LogSumExp(row []float32) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}
