package cpuops

// Element-wise loops with an AVX2 form on amd64 (vec_amd64.s) where the
// CPU has it; these are the portable forms and the tails.

func addGo(z, x, y []float32) {
	for i := range z {
		z[i] = x[i] + y[i]
	}
}

// addTo adds src to dst element-wise (Add, src + dst: the bits of
// dst + src).
func addTo(dst, src []float32) {
	dst = dst[:len(src)]
	Add(dst, src, dst)
}

// reluMaskGo is reluGrad over slices: d = dy where the ReLU output y > 0.
func reluMaskGo(d, y, dy []float32) {
	d, dy = d[:len(y)], dy[:len(y)]
	for j, v := range y {
		d[j] = reluGrad(v, dy[j])
	}
}

func biasReLUGo(x []float32, b float32) {
	for j, v := range x {
		x[j] = max(v+b, 0)
	}
}

// BatchNorm's loops (norm.go).

func sumSqGo(x []float32) (s, ss float64) {
	for _, v := range x {
		f := float64(v)
		s += f
		ss += f * f
	}
	return s, ss
}

func scaleShiftGo(x, y []float32, scale, shift float32, relu bool) {
	y = y[:len(x)]
	if relu {
		for j, v := range x {
			y[j] = max(v*scale+shift, 0)
		}
		return
	}
	for j, v := range x {
		y[j] = v*scale + shift
	}
}

// scaleShiftAddReLUGo is scaleShiftGo then AddReLU's join: the same two
// roundings, then + s and the ReLU.
func scaleShiftAddReLUGo(x, s, y []float32, scale, shift float32) {
	s, y = s[:len(x)], y[:len(x)]
	for j, v := range x {
		y[j] = max((v*scale+shift)+s[j], 0)
	}
}

func gradSumsGo(x, y, dy []float32, relu bool) (sg, sgx float32) {
	y, dy = y[:len(x)], dy[:len(x)]
	for j, v := range x {
		g := dy[j]
		if relu {
			g = reluGrad(y[j], g)
		}
		sg += g
		sgx += g * v
	}
	return sg, sgx
}

// gradSumsMaskGo is gradSumsGo with the ReLU mask, also storing the
// masked gradient g in d.
func gradSumsMaskGo(x, y, dy, d []float32) (sg, sgx float32) {
	y, dy, d = y[:len(x)], dy[:len(x)], d[:len(x)]
	for j, v := range x {
		g := reluGrad(y[j], dy[j])
		d[j] = g
		sg += g
		sgx += g * v
	}
	return sg, sgx
}

func bnDxGo(x, y, dy, dx []float32, relu bool, a, b, d float32) {
	y, dy, dx = y[:len(x)], dy[:len(x)], dx[:len(x)]
	for j, v := range x {
		g := dy[j]
		if relu {
			g = reluGrad(y[j], g)
		}
		dx[j] = a*g + (b*v + d)
	}
}

// The panel copies of Conv2d's im2col (conv2d.go).

func copyRows16Go(dst, src []float32, offs []int, c int) {
	for q, r := range offs {
		*(*[16]float32)(dst[16*q:]) = *(*[16]float32)(src[r+c:])
	}
}

func copyRows8x2Go(dst, src []float32, offs []int, c0, c1 int) {
	for q, r := range offs {
		d := dst[16*q : 16*q+16]
		*(*[8]float32)(d) = *(*[8]float32)(src[r+c0:])
		*(*[8]float32)(d[8:]) = *(*[8]float32)(src[r+c1:])
	}
}
