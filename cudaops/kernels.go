package cudaops

import (
	"fmt"
	"math"
	"strings"
)

// buffer is an engine's array: device memory on the GPU, a slice on the CPU.
type buffer any

// The GPU engine (engine_cuda.go, kernels_resnet.go) launches kernels.cu's
// kernels on its stream, in order; the GraphEngine and the Backend call it.
// Its kernels whose index arithmetic the tests mirror on the CPU
// (engine_cpu_test.go, ref_kernels_test.go: the kernel parity reference)
// are these small interfaces, by role, which both implement; the ResNets'
// kernels (kernels_resnet.go) are checked against cpuops instead.

// memory is an engine's buffers and their copies to and from the host.
type memory interface {
	alloc(n int) (buffer, error)      // n float32s, zeroed
	allocInt32(n int) (buffer, error) // n int32s, zeroed
	allocU8(n int) (buffer, error)    // n bytes, zeroed
	upload(dst buffer, src []float32) error
	uploadInt32(dst buffer, src []int32) error
	uploadU8(dst buffer, src []uint8) error
	download(dst []float32, src buffer) error
	zero(b buffer, off, n int) error // float32s [off, off+n)
}

// gemmKernels are the matrix products and what a linear layer or the cnn's
// conv epilogue adds to them: the bias, the ReLU, the bias gradients.
type gemmKernels interface {
	sgemm(tA, tB bool, M, N, Kd int, a, b, c buffer) error
	biasReLU(z, bias, y buffer, B, Cout, HW int) error
	addRows(y, bias buffer, R, N int) error
	rowSums(a, out buffer, R, N int) error
	colSums(a, out buffer, R, N int) error
}

// poolKernels are the global average pool and its gradient.
type poolKernels interface {
	avgPool(x, y buffer, BC, HW int) error
	avgPoolBackward(dy, dx buffer, BC, HW int) error
}

// stepKernels are what a step does around the network: the uint8 input's
// normalization, the loss and SGD's update.
type stepKernels interface {
	normalizeU8(x, y buffer, B, HW int, mean, std [3]float32) error
	softmaxXent(z, labels, loss, dz buffer, B, K, n int) error
	sgd(w, grad, v buffer, n int, lr, mom, wd float32, first bool) error
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
