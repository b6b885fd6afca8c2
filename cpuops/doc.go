// Package cpuops is the model's layer kernels on the CPU: float32 NCHW
// tensors as flat slices, work split across GOMAXPROCS cores, scratch owned
// by each op and reused, so that a step in steady state allocates nothing.
//
// The kernels behind model.CPUEngine; a device engine (cudaops's
// GraphEngine) implements the same layers, model.Engine's Layers, with its
// own. B is the batch, shapes are row-major, "·" is matrix product:
//
//	op              inputs                         output          saved / notes
//	Conv2d          x (B,Cin,H,W), w (Cout,Cin,K,K) y (B,Cout,Ho,Wo) no bias, stride S, pad P; BackwardData,
//	                                                               BackwardFilter
//	NewConvBlock: the cnn's conv block, a Conv2d with the bias + ReLU (+ pool) epilogue:
//	ForwardBlock    x (B,Cin,H,W), w, b (Cout)     y (B,Cout,H,W)  y = ReLU(conv(x, w) + b); stride 1, pad K/2;
//	                                                               with pool, y (B,Cout,H/2,W/2) max-pooled,
//	                                                               the argmax kept
//	BackwardDataBlock   w, y, dy (as y)            dx (B,Cin,H,W)  y > 0 is the ReLU mask; with pool, dy goes
//	                                                               through the argmax first
//	BackwardFilterBlock x, y, dy                   dw, db          summed over the batch
//	BatchNorm       x (B,C,HW), γ, β (C)           y (B,C,HW)      batch statistics of the n valid rows in
//	                                                               training (running ones updated), running
//	                                                               ones in evaluation; ReLU fused, or with
//	                                                               ForwardAdd the residual add + ReLU
//	MaxPool         x (B,C,H,W)                    y (B,C,Ho,Wo)   KxK stride S pad P; keeps argmax
//	AvgPoolForward  x (B,C,H,W)                    y (B,C)         global mean
//	AvgPoolBackward dy (B,C)                       dx (B,C,H,W)    dy / (H·W)
//	LinearForward   h (B,C), w (C,N), b (N)        z (B,N)         z = h·w + b
//	LinearBackward  h, w, dz                       dh, dw, db
//	XentForward     z (B,N), t (B,N)               loss (scalar)   Σ t·(logsumexp(z) − z), float64 sums
//	XentBackward    z, t, g (scalar)               dz (B,N)        g·(softmax(z)·Σt − t)
//
// Convolution never transposes: a group of samples' im2col matrix
// (Cin·K·K, one column per output pixel) is gathered straight into the
// GEMM's packed panels, never stored, and multiplies the weights (Cout,
// Cin·K·K) into NCHW output; where 16 output pixels read 16 consecutive
// inputs (a stride-1 row of 16 or more), the AVX-512 kernels read them in
// the padded input itself, not packed at all (gemm.RunPanels); the backward pass is two more GEMMs (w^T·dy
// then col2im, or at stride 1 a convolution with the flipped kernel; and
// dy·col^T) on the matrix gathered again (conv2d.go). A 3x3 filter
// gradient at stride 1 or 2 of up to 128 output channels is instead
// dw^T = col·dy^T on kernels of its own (filter.go, filter_amd64.s) that
// broadcast col's values from the padded input where they lie and
// transpose only dy, with the GEMM's bits; at bf16 on VDPBF16PS (stride 1,
// rows of an even width, up to 256 channels) the same on pairs of steps,
// the input in bf16, with the VDPBF16PS GEMM's bits. With SetWinograd (train.winograd)
// a 3x3 stride-1 conv of enough channels takes Winograd's F(2x2, 3x3)
// for all three passes instead (winograd.go, winograd_filter.go,
// winograd_amd64.s): 16 GEMMs of transformed tiles, 2.25 times fewer
// multiply-adds, another float rounding. Work is split by groups of
// samples, each cut into tiles of output channels or pixels
// when the groups alone would load the cores unevenly; the filter
// gradient is summed in groups of samples fixed by the shape and then
// over groups in order, so results are bit-identical whatever the number
// of cores.
//
// A pass's items go to the calling goroutine and helper goroutines
// (parallel.go), which after a pass spin briefly for the next one rather
// than park: waking a parked goroutine on another core took about 20 µs
// here, against passes of a few hundred.
package cpuops
