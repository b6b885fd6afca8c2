// Package cpuops is the model's layer kernels on the CPU: float32 NCHW
// tensors as flat slices, work split across GOMAXPROCS cores, scratch owned
// by each op and reused, so that a step in steady state allocates nothing.
//
// The kernels behind model.CPUEngine; a device engine (cudaops's
// GraphEngine) implements the same layers, model.Engine's Layers, with its
// own. B is the batch, shapes are row-major, "·" is matrix product:
//
//	op              inputs                         output          saved / notes
//	Conv.Forward    x (B,Cin,H,W), w (Cout,Cin,K,K), b (Cout)
//	                                               y (B,Cout,H,W)  y = ReLU(conv(x, w) + b); stride 1, pad K/2;
//	                                                               with Pool, y (B,Cout,H/2,W/2) max-pooled,
//	                                                               the argmax kept
//	Conv.BackwardData   w, y, dy (as y)            dx (B,Cin,H,W)  y > 0 is the ReLU mask; with Pool, dy goes
//	                                                               through the argmax first
//	Conv.BackwardFilter x, y, dy                   dw, db          summed over the batch
//	MaxPool.Forward x (B,C,H,W)                    y (B,C,H/2,W/2) 2x2 stride 2, floor; keeps argmax
//	MaxPool.Backward    dy                         dx (B,C,H,W)    routes dy to the argmax
//	AvgPoolForward  x (B,C,H,W)                    y (B,C)         global mean
//	AvgPoolBackward dy (B,C)                       dx (B,C,H,W)    dy / (H·W)
//	LinearForward   h (B,C), w (C,N), b (N)        z (B,N)         z = h·w + b
//	LinearBackward  h, w, dz                       dh, dw, db
//	XentForward     z (B,N), t (B,N)               loss (scalar)   Σ t·(logsumexp(z) − z), float64 sums
//	XentBackward    z, t, g (scalar)               dz (B,N)        g·(softmax(z)·Σt − t)
//
// and the ResNets' (conv2d.go, norm.go):
//
//	Conv2d          x (B,Cin,H,W), w (Cout,Cin,K,K) y (B,Cout,Ho,Wo) no bias, stride S, pad P; BackwardData,
//	                                                               BackwardFilter
//	BatchNorm       x (B,C,HW), γ, β (C)           y (B,C,HW)      batch statistics of the n valid rows in
//	                                                               training (running ones updated), running
//	                                                               ones in evaluation; ReLU fused, or with
//	                                                               ForwardAdd the residual add + ReLU
//	MaxPoolK        x (B,C,H,W)                    y (B,C,Ho,Wo)   KxK stride S pad P; keeps argmax
//
// Convolution never transposes: each sample's im2col matrix (Cin·K·K,
// H·W) multiplies the weights (Cout, Cin·K·K) into that sample's NCHW
// output directly; the backward pass is two more GEMMs per sample (w^T·dy
// then col2im; dy·col^T) on the im2col matrix recomputed, not stored. Work
// is split by sample; the filter gradient is summed in fixed groups of
// samples and then over groups in order, so results are bit-identical
// whatever the number of cores.
package cpuops
