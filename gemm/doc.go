// Package gemm is single-precision general matrix multiply (BLAS SGEMM) for
// row-major matrices: C = alpha·op(A)·op(B) + beta·C.
//
// It follows the BLIS/GotoBLAS design (Van Zee & van de Geijn, "BLIS: A
// Framework for Rapidly Instantiating BLAS Functionality", 2015): op(B) is
// packed into kc×nr column panels and op(A) into mr×kc row panels, so that
// transposes cost nothing beyond the packing, and a register-blocked
// micro-kernel multiplies one mr×kc panel by one kc×nr panel into an mr×nr
// tile of C. The micro-kernel is Go assembly with AVX2 and FMA on amd64
// (6×16 tile: 12 ymm accumulators), chosen at run time from CPUID; where
// the CPU and OS have AVX-512F, a 12×32 kernel (24 zmm accumulators) takes
// the tiles it covers, reading the same packed panels two at a time, and
// gives every element the bits the 6×16 kernel would (the same FMAs in the
// same order), and row kernels of 1 to 5 rows by 32 take a last row panel
// of fewer than 6 (16 channels leave 4) with the bits a partial tile gets
// through the scratch tile and addTile; $STOKE_GEMM=avx2 holds Sgemm to AVX2. Other CPUs and
// architectures use a pure-Go kernel of the 6×16 shape, so a machine with
// only Go builds and runs.
//
// SgemmBF16, SgemmPanelsBF16 and the pre-packed PackABF16/SgemmPackedBF16
// are the same products with op(A) and op(B) rounded to bfloat16 and fp32
// sums (bf16.go states the error bound). Where the CPU has AVX512_BF16
// (HasBF16) they run VDPBF16PS micro-kernels (12x32 tile), with B
// converted by VCVTNE2PS2BF16 after packing, or as it is gathered for the
// panels a PairPanels source writes itself (a convolution's im2col runs);
// BF16Name says which path runs. Go 1.26's assembler has neither instruction, and they are written
// in Go assembly as EVEX bytes (gen_bf16.go) rather than in C with gcc's
// intrinsics behind cgo: the kernels then build with cgo off, cross-build
// and run like the fp32 ones, with no per-call cgo cost (a micro-kernel
// call on a small conv tile is shorter than a cgo call) and no C
// toolchain; the price is an encoder for the register forms, checked
// against GNU as for all 32×32×32 register triples of both instructions
// when it was written, and for every encoding in the generated file by
// TestBF16EncodingsMatchGNUAs.
// Elsewhere the inputs are rounded while packing and Sgemm's kernels do
// the product.
//
// Sgemm runs on the calling goroutine: callers split work across cores
// (the model's ops split the batch), which keeps each core on its own
// packed panels with no synchronisation. Scratch buffers come from a
// sync.Pool, so steady-state calls allocate nothing.
//
// SgemmPrec, SgemmPanelsPrec and PackAPrec multiply at a Precision: TF32
// or bf16 round op(A) and op(B) (round to nearest, ties to even: RoundTF32,
// RoundBF16) block by block as they are packed, and sum in float32 as
// FP32 does, so that a product at a precision is, bit for bit, the FP32
// product of inputs rounded beforehand: the semantics of PyTorch's
// allow_tf32 and of autocast's bf16 conv and matmul inputs, and of the
// cuBLAS stand-in's rounding (cudaops/cudasim/fp.h). Sgemm and the rest
// are FP32, unchanged. A Panels source that rounds its values itself, once
// for many uses (RoundedPanels), is packed without a second rounding.
//
// A Panels source whose panels are runs of one array already (RunPanels:
// a stride-1 convolution's im2col matrix, 16 output pixels along a row
// reading 16 consecutive inputs) is not packed where the AVX-512 kernels
// run and it needs no rounding (FP32, or a RoundedPanels): the direct kernels read each row of B at its offset in the
// array (gen_avx512.go), the same FMAs in the same order, so the same bits.
//
// Files:
//
//	gemm.go          Sgemm, PackA and SgemmPacked (A packed once, reused), the blocking loops, packing, Name
//	runs.go          RunPanels and the direct kernels' blocking loop (multiplyRuns)
//	precision.go     Precision, RoundTF32 and RoundBF16: the inputs' rounding at TF32 and bf16
//	kernel_amd64.s   the AVX2/FMA micro-kernel and CPUID
//	kernel_avx512_amd64.s  the AVX-512F micro-kernels, packed and direct, written by gen_avx512.go
//	kernel_amd64.go  run-time kernel choice on amd64 (CPUID, XCR0, $STOKE_GEMM)
//	kernel_other.go  the choice elsewhere (pure Go)
//	kernel_go.go     the pure-Go micro-kernel
//	bf16.go          SgemmBF16 and its variants, bf16 packing, the fallback, BF16Name
//	bf16_amd64.s     the VDPBF16PS micro-kernels and the bf16 conversion, written by gen_bf16.go
//	bf16_amd64.go    their declarations and HasBF16's CPUID test (bf16_other.go elsewhere)
//	round_amd64.s    AVX2 and AVX-512 rounding to TF32 or bf16, and bf16 by VCVTNE2PS2BF16 (roundSlice, the bf16 fallback)
//	packa_amd64.s    packA's row panels by masked VPERMPS where the AVX-512 kernels run (packa_other.go elsewhere)
package gemm
