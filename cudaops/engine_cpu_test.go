package cudaops

import (
	"fmt"

	"stoke/model"
)

// cpuEngine runs ref_kernels_test.go's kernel mirrors on slices: the CPU reference of
// the GPU engine, for the tests that every machine runs.
type cpuEngine struct{}

var (
	_ memory      = cpuEngine{}
	_ gemmKernels = cpuEngine{}
	_ poolKernels = cpuEngine{}
	_ stepKernels = cpuEngine{}
)

func (cpuEngine) alloc(n int) (buffer, error)      { return make([]float32, n), nil }
func (cpuEngine) allocInt32(n int) (buffer, error) { return make([]int32, n), nil }
func (cpuEngine) allocU8(n int) (buffer, error)    { return make([]uint8, n), nil }

func (cpuEngine) upload(dst buffer, src []float32) error {
	d := dst.([]float32)
	if len(src) != len(d) {
		return fmt.Errorf("cudaops: upload of %d floats into %d", len(src), len(d))
	}
	copy(d, src)
	return nil
}

func (cpuEngine) uploadInt32(dst buffer, src []int32) error {
	copy(dst.([]int32), src)
	return nil
}

func (cpuEngine) uploadU8(dst buffer, src []uint8) error {
	d := dst.([]uint8)
	if len(src) != len(d) {
		return fmt.Errorf("cudaops: upload of %d bytes into %d", len(src), len(d))
	}
	copy(d, src)
	return nil
}

func (cpuEngine) download(dst []float32, src buffer) error {
	copy(dst, src.([]float32))
	return nil
}

func (cpuEngine) zero(b buffer, off, n int) error {
	clear(b.([]float32)[off : off+n])
	return nil
}

func f(b buffer) []float32 { return b.([]float32) }

func (cpuEngine) sgemm(tA, tB bool, M, N, Kd int, a, b, c buffer) error {
	refSgemm(tA, tB, M, N, Kd, f(a), f(b), f(c))
	return nil
}

func (cpuEngine) biasReLU(z, bias, y buffer, B, Cout, HW int) error {
	refBiasReLU(f(z), f(bias), f(y), B, Cout, HW)
	return nil
}

func (cpuEngine) rowSums(a, out buffer, R, N int) error {
	refRowSums(f(a), f(out), R, N)
	return nil
}

func (cpuEngine) colSums(a, out buffer, R, N int) error {
	refColSums(f(a), f(out), R, N)
	return nil
}

func (cpuEngine) avgPool(x, y buffer, BC, HW int) error {
	refAvgPool(f(x), f(y), BC, HW)
	return nil
}

func (cpuEngine) avgPoolBackward(dy, dx buffer, BC, HW int) error {
	refAvgPoolBackward(f(dy), f(dx), BC, HW)
	return nil
}

func (cpuEngine) addRows(y, bias buffer, R, N int) error {
	refAddRows(f(y), f(bias), R, N)
	return nil
}

func (cpuEngine) softmaxXent(z, labels, loss, dz buffer, B, K, n int) error {
	refSoftmaxXent(f(z), labels.([]int32), f(loss), f(dz), B, K, n)
	return nil
}

func (cpuEngine) sgd(w, grad, v buffer, n int, lr, mom, wd float32, first bool) error {
	model.SGDUpdate(f(w), f(grad), f(v), lr, mom, wd, first)
	return nil
}

func (cpuEngine) normalizeU8(x, y buffer, B, HW int, mean, std [3]float32) error {
	refNormalizeU8(x.([]uint8), f(y), B, HW, mean, std)
	return nil
}
