package cudaops

import (
	"fmt"
	"math"
	"strings"
)

// buffer is an engine's array: device memory on the GPU, a slice on the CPU.
type buffer any

// engine is the set of kernels kernels.cu holds, one method per kernel. The
// GPU engine (engine_cuda.go) launches them on its stream, in order; the
// GraphEngine and the Backend call it. The tests' CPU mirror
// (engine_cpu_test.go, ref_kernels_test.go) is the kernel parity reference.
type engine interface {
	alloc(n int) (buffer, error)      // n float32s, zeroed
	allocInt32(n int) (buffer, error) // n int32s, zeroed
	allocU8(n int) (buffer, error)    // n bytes, zeroed
	upload(dst buffer, src []float32) error
	uploadInt32(dst buffer, src []int32) error
	uploadU8(dst buffer, src []uint8) error
	download(dst []float32, src buffer) error
	zero(b buffer, off, n int) error // float32s [off, off+n)

	im2col(x, col buffer, B, C, H, W, K, P int) error
	col2im(dcol, dx buffer, B, C, H, W, K, P int) error
	sgemm(tA, tB bool, M, N, Kd int, a, b, c buffer) error
	biasReLU(z, bias, y buffer, B, Cout, HW int) error
	reluBackward(dy, y, dz buffer, B, Cout, HW int) error
	rowSums(a, out buffer, R, N int) error
	colSums(a, out buffer, R, N int) error
	maxPool(x, y, arg buffer, BC, H, W int) error
	maxPoolBackward(dy, arg, dx buffer, BC, H, W int) error
	avgPool(x, y buffer, BC, HW int) error
	avgPoolBackward(dy, dx buffer, BC, HW int) error
	addRows(y, bias buffer, R, N int) error
	softmaxXent(z, labels, loss, dz buffer, B, K, n int) error
	sgd(w, grad, v buffer, n int, lr, mom, wd float32, first bool) error
	normalizeU8(x, y buffer, B, HW int, mean, std [3]float32) error
}

// Normalize is the per-channel normalization of uint8 batches (values
// round(255·v), CHW), done on the engine: (x/255 - Mean[c]) / Std[c], as
// augment.NormalizeU8 does on the host. Float32 batches come normalized.
type Normalize struct{ Mean, Std [3]float32 }

func (nz Normalize) validate() error {
	for c := range 3 {
		m, s := float64(nz.Mean[c]), float64(nz.Std[c])
		if math.IsNaN(m) || math.IsInf(m, 0) || !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("normalize: mean %v, std %v: want finite means and finite stds > 0", nz.Mean, nz.Std)
		}
	}
	return nil
}

func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ptxEntries lists the kernels a PTX module defines, its ".entry NAME("
// lines in order (PTX ISA, "Kernel function declarations").
func ptxEntries(ptx string) []string {
	var names []string
	for _, line := range strings.Split(ptx, "\n") {
		_, rest, ok := strings.Cut(line, ".entry ")
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, "("); ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names
}
