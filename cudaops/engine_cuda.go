//go:build stokecuda

package cudaops

import (
	_ "embed"
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"

	"stoke/gemm"
)

// kernelsPTX is kernels.cu compiled for compute_80 by scripts/gen-ptx.sh;
// the driver JIT-compiles it for the device at load (sm_80 and newer).
//
//go:embed kernels.ptx
var kernelsPTX string

// kernelNames is the kernel table: every .entry of the PTX, which
// scripts/gen-ptx.sh makes from kernels.cu's __global__ functions
// (TestKernelTableIsKernelsCU checks that the two agree).
var kernelNames = ptxEntries(kernelsPTX)

// devBuf is n 4-byte elements of device memory.
type devBuf struct {
	p cu.DevicePtr
	n int
}

// gpuEngine launches kernels.cu's kernels on one stream, in order. The
// caller has made the context current on a locked OS thread.
type gpuEngine struct {
	mod    cu.Module
	fn     map[string]cu.Function
	s      cu.Stream
	allocs []cu.DevicePtr
	args   [12]uint64
	ptrs   [12]unsafe.Pointer

	// flag is the device int that xent_loss sets at the first step whose
	// loss is not finite; while it is set, the update kernels (sgd,
	// sgd_nesterov, adamw) and copyUnless do nothing. The engine's own
	// (never set: a GraphEngine of its own computes the loss on the host)
	// until a Backend points it into its step ring.
	flag cu.DevicePtr

	// sargs is the step's arguments in device memory (kernels.cu's sa,
	// stepArgs), which sgd, sgd_nesterov, adamw and xent_loss read instead
	// of launch arguments, so that a step captured as a CUDA Graph replays
	// with the next step's. An engine of its own writes them (set_step_args,
	// in stream order) when a launch wants other values; a Backend's
	// engine (argsByBackend) has them copied into place before each step
	// and checks that every launch wants what was copied.
	sargs         cu.DevicePtr
	cur           stepArgs
	curSet        bool
	argsByBackend bool

	blas     *Cublas        // the GEMMs on cuBLAS (selectGemm), or nil: our own sgemm
	prec     gemm.Precision // the GEMMs' input rounding
	gemmInfo GemmInfo
}

var (
	_ memory      = (*gpuEngine)(nil)
	_ gemmKernels = (*gpuEngine)(nil)
	_ poolKernels = (*gpuEngine)(nil)
	_ stepKernels = (*gpuEngine)(nil)
)

func newGPUEngine(s cu.Stream) (*gpuEngine, error) {
	mod, err := cu.LoadData(kernelsPTX)
	if err != nil {
		return nil, fmt.Errorf("cudaops: loading the kernels' PTX (compute_80; needs an Ampere or newer GPU and a driver for CUDA >= 11.8): %w", err)
	}
	e := &gpuEngine{mod: mod, fn: map[string]cu.Function{}, s: s}
	for _, name := range kernelNames {
		if e.fn[name], err = mod.Function(name); err != nil {
			return nil, fmt.Errorf("cudaops: kernel %s: %w", name, err)
		}
	}
	for i := range e.ptrs {
		e.ptrs[i] = unsafe.Pointer(&e.args[i])
	}
	f, err := e.allocInt32(1)
	if err != nil {
		e.free()
		return nil, err
	}
	e.flag = f.(devBuf).p
	a, err := e.alloc(stepArgsLen)
	if err != nil {
		e.free()
		return nil, err
	}
	e.sargs = a.(devBuf).p
	return e, nil
}

// stepArgs are one training step's arguments in device memory, in
// kernels.cu's sa layout: the learning rate, AdamW's bias-corrected step
// lr/(1−β1^t) and √(1−β2^t) (model.AdamWScalars), the step's slot in a
// Backend's result ring, and the step's number.
type stepArgs struct {
	lr, adamStep, adamSq float32
	slot, step           int32
}

// stepArgsLen is sa's length in 4-byte words.
const stepArgsLen = 5

// words is a in sa's layout.
func (a stepArgs) words() [stepArgsLen]uint32 {
	return [stepArgsLen]uint32{math.Float32bits(a.lr), math.Float32bits(a.adamStep), math.Float32bits(a.adamSq), uint32(a.slot), uint32(a.step)}
}

// The fields of stepArgs a launch reads (want's mask).
const (
	argLR   = 1 << iota // lr
	argAdam             // adamStep, adamSq
	argSlot             // slot, step
)

// want makes sure the device's step arguments hold w's fields in mask
// when the next launch on the stream runs. An engine of its own queues
// set_step_args if they differ; a Backend's must already hold them.
func (e *gpuEngine) want(mask int, w stepArgs) error {
	a := e.cur
	if mask&argLR != 0 {
		a.lr = w.lr
	}
	if mask&argAdam != 0 {
		a.adamStep, a.adamSq = w.adamStep, w.adamSq
	}
	if mask&argSlot != 0 {
		a.slot, a.step = w.slot, w.step
	}
	if e.curSet && a.words() == e.cur.words() {
		return nil
	}
	if e.argsByBackend {
		return fmt.Errorf("cudaops: the step's arguments on the device are %+v; a launch of this step wants %+v", e.cur, a)
	}
	if err := e.launch("set_step_args", 1, 1, 1, 1, uint64(e.sargs), fl(a.lr), fl(a.adamStep), fl(a.adamSq), i(int(a.slot)), i(int(a.step))); err != nil {
		return err
	}
	e.cur, e.curSet = a, true
	return nil
}

func (e *gpuEngine) free() {
	if e.blas != nil {
		e.blas.Close()
		e.blas = nil
	}
	for _, p := range e.allocs {
		cu.MemFree(p)
	}
	e.allocs = nil
	e.mod.Unload()
}

func (e *gpuEngine) alloc(n int) (buffer, error) {
	p, err := cu.MemAlloc(int64(max(n, 1)) * 4)
	if err != nil {
		return nil, fmt.Errorf("cudaops: cuMemAlloc of %d bytes: %w", n*4, err)
	}
	e.allocs = append(e.allocs, p)
	if err := cu.MemsetD32Async(p, 0, int64(max(n, 1)), e.s); err != nil {
		return nil, err
	}
	return devBuf{p, n}, nil
}

func (e *gpuEngine) allocInt32(n int) (buffer, error) { return e.alloc(n) }

// allocU8 is n bytes, rounded up to whole 4-byte elements.
func (e *gpuEngine) allocU8(n int) (buffer, error) { return e.alloc((n + 3) / 4) }

func (e *gpuEngine) upload(dst buffer, src []float32) error {
	d := dst.(devBuf)
	if len(src) != d.n {
		return fmt.Errorf("cudaops: upload of %d floats into %d", len(src), d.n)
	}
	return cu.MemcpyHtoDAsync(d.p, unsafe.Pointer(unsafe.SliceData(src)), int64(4*len(src)), e.s)
}

func (e *gpuEngine) uploadInt32(dst buffer, src []int32) error {
	d := dst.(devBuf)
	return cu.MemcpyHtoDAsync(d.p, unsafe.Pointer(unsafe.SliceData(src)), int64(4*min(len(src), d.n)), e.s)
}

// uploadU8 copies bytes into a buffer from allocU8 of len(src) bytes.
func (e *gpuEngine) uploadU8(dst buffer, src []uint8) error {
	d := dst.(devBuf)
	if (len(src)+3)/4 != d.n {
		return fmt.Errorf("cudaops: upload of %d bytes into %d", len(src), 4*d.n)
	}
	return cu.MemcpyHtoDAsync(d.p, unsafe.Pointer(unsafe.SliceData(src)), int64(len(src)), e.s)
}

// download waits for the stream: the result is complete when it returns.
func (e *gpuEngine) download(dst []float32, src buffer) error {
	s := src.(devBuf)
	if err := cu.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(dst)), s.p, int64(4*min(len(dst), s.n)), e.s); err != nil {
		return err
	}
	return e.s.Synchronize()
}

func (e *gpuEngine) zero(b buffer, off, n int) error {
	if n == 0 {
		return nil
	}
	return cu.MemsetD32Async(b.(devBuf).p+cu.DevicePtr(4*off), 0, int64(n), e.s)
}

// launch runs a kernel on grid x block threads with arguments of 8 bytes
// each (cu copies 8 bytes per argument; the kernel reads its own width from
// the low bytes, little-endian).
func (e *gpuEngine) launch(name string, gx, gy, gz, block int, args ...uint64) error {
	copy(e.args[:], args)
	if err := e.fn[name].Launch(gx, gy, gz, block, 1, 1, 0, e.s, e.ptrs[:len(args)]); err != nil {
		return fmt.Errorf("cudaops: launching %s: %w", name, err)
	}
	return nil
}

// launch1D covers total elements with grid-stride loops of 256 threads.
func (e *gpuEngine) launch1D(name string, total int, args ...uint64) error {
	blocks := min((total+255)/256, 1<<16)
	return e.launch(name, max(blocks, 1), 1, 1, 256, args...)
}

func p(b buffer) uint64 { return uint64(b.(devBuf).p) }
func i(n int) uint64    { return uint64(uint32(int32(n))) }
func fl(v float32) uint64 {
	return uint64(math.Float32bits(v))
}
func bl(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// ownSgemm is our own kernel (sgemm, kernels.cu) at the engine's precision.
// It splits a long inner dimension over gridDim.z when the output alone
// gives too few blocks to fill the GPU (the weight gradients: Cout x C·K·K
// outputs over B·H·W products); the slices add into a zeroed C.
func (e *gpuEngine) ownSgemm(tA, tB bool, M, N, Kd int, a, b, c buffer) error {
	gx, gy := (N+63)/64, (M+63)/64
	split := 1
	if blocks := gx * gy; blocks < 256 && Kd >= 2048 {
		split = min(Kd/1024, (512+blocks-1)/blocks, 1024)
	}
	if split > 1 {
		if err := e.zero(c, 0, M*N); err != nil {
			return err
		}
	}
	return e.launch("sgemm", gx, gy, split, 256, bl(tA), bl(tB), i(M), i(N), i(Kd), p(a), p(b), p(c), i(int(e.prec)))
}

func (e *gpuEngine) biasReLU(z, bias, y buffer, B, Cout, HW int) error {
	return e.launch1D("bias_relu", B*Cout*HW, p(z), p(bias), p(y), i(B), i(Cout), i(HW))
}

func (e *gpuEngine) rowSums(a, out buffer, R, N int) error {
	return e.launch("row_sums", R, 1, 1, 256, p(a), p(out), i(R), i(N))
}

func (e *gpuEngine) colSums(a, out buffer, R, N int) error {
	return e.launch1D("col_sums", N, p(a), p(out), i(R), i(N))
}

func (e *gpuEngine) avgPool(x, y buffer, BC, HW int) error {
	return e.launch1D("avg_pool", BC, p(x), p(y), i(BC), i(HW))
}

func (e *gpuEngine) avgPoolBackward(dy, dx buffer, BC, HW int) error {
	return e.launch1D("avg_pool_backward", BC*HW, p(dy), p(dx), i(BC), i(HW))
}

func (e *gpuEngine) addRows(y, bias buffer, R, N int) error {
	return e.launch1D("add_rows", R*N, p(y), p(bias), i(R), i(N))
}

func (e *gpuEngine) softmaxXent(z, labels, loss, dz buffer, B, K, n int) error {
	return e.launch1D("softmax_xent", B, p(z), p(labels), p(loss), p(dz), i(B), i(K), i(n))
}

func (e *gpuEngine) sgd(w, grad, v buffer, n int, lr, mom, wd float32, first bool) error {
	if err := e.want(argLR, stepArgs{lr: lr}); err != nil {
		return err
	}
	return e.launch1D("sgd", n, p(w), p(grad), p(v), i(n), uint64(e.sargs), fl(mom), fl(wd), bl(first), uint64(e.flag))
}

// scaleUnless is x·(1−a) (x − a·x) on n floats unless the flag is set.
func (e *gpuEngine) scaleUnless(x buffer, n int, a float32) error {
	if n == 0 {
		return nil
	}
	return e.launch1D("scale_unless", n, p(x), i(n), fl(a), uint64(e.flag))
}

// xentLoss writes the loss of logits z (B, K) against the weighted target
// of labels (n valid rows, label smoothing eps; model/loss.go) and its
// top-1 hits into slot of ring (two floats a slot), and sets the engine's
// flag to step+1 if the loss is not finite and the flag is not set yet.
func (e *gpuEngine) xentLoss(z, labels, ring buffer, B, K, n int, eps float32, slot, step int) error {
	if err := e.want(argSlot, stepArgs{slot: int32(slot), step: int32(step)}); err != nil {
		return err
	}
	return e.launch("xent_loss", 1, 1, 1, 256, p(z), p(labels), i(B), i(K), i(n), fl(eps), p(ring), uint64(e.sargs), uint64(e.flag))
}

// xentGrad is the loss's gradient, g·(softmax(z)·Σt − t), into dz.
func (e *gpuEngine) xentGrad(z, labels, dz buffer, B, K, n int, eps, g float32) error {
	return e.launch1D("xent_grad", B, p(z), p(labels), p(dz), i(B), i(K), i(n), fl(eps), fl(g))
}

// copyUnless is copyD2D unless the flag is set.
func (e *gpuEngine) copyUnless(src, dst buffer, n int) error {
	if n == 0 {
		return nil
	}
	return e.launch1D("copy_f32_unless", n, p(src), p(dst), i(n), uint64(e.flag))
}

// normalizeU8 turns the first B rows of a uint8 CHW batch on the device
// (x, from allocU8) into the network's float input y: (x/255 - mean[c]) / std[c].
func (e *gpuEngine) normalizeU8(x, y buffer, B, HW int, mean, std [3]float32) error {
	return e.launch1D("normalize_u8", B*3*HW, p(x), p(y), i(B), i(HW),
		fl(mean[0]), fl(mean[1]), fl(mean[2]), fl(std[0]), fl(std[1]), fl(std[2]))
}
