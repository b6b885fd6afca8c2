// Package model is the CNN as a gorgonia expression graph: conv blocks
// (convolution, bias, ReLU, optional max-pool), global average pool, a
// linear head and softmax cross-entropy; SGD with momentum and weight decay;
// and safetensors files for its weights and optimizer state.
//
// It knows nothing of where batches come from: a step takes a float32 NCHW
// slice and int32 labels (TrainStep), or, through the trainer's seam
// (Start, Eval: step.go), an Input holding either that slice or the same
// pixels as uint8, normalized here with Options.Mean and Options.Std.
//
// The graph has a fixed batch size B and is built once, in New, with two
// tape machines over it: one runs every node (forward, loss, backward) for
// TrainStep, the other only the subgraph that computes the logits, for
// EvalStep and Logits. A short last batch is fed as B rows with a target
// that weights the n valid rows 1/n and the padding 0, so the padding adds
// nothing to the loss or the gradients.
//
// gorgonia gives the graph, its shape checks, the symbolic gradients and
// the tape machine; every node that computes is an Op of ours (ops.go),
// forward and gradient alike, whose work is a kernel of package cpuops
// (the op table is in its package comment) and whose output buffer is
// allocated once and reused, so a step allocates only gorgonia's own
// bookkeeping. The matrix multiplies are package gemm's (Kernel names the
// one in use). gorgonia's built-in layers are not used: its Conv2d and
// MaxPool2D are correct but slow (transposes and fresh buffers every run);
// its GlobalAveragePool2D has no gradient and AveragePool2D and two-axis
// Mean are wrong (docs/gorgonia.md).
//
// Files:
//
//	spec.go         Spec, ConvSpec and their validation
//	model.go        the graph, the steps, Close
//	step.go         the trainer's seam: Input, Pending, StepTimes; Start and Eval
//	ops.go          the graph's ops (conv block, global average pool, linear) over cpuops; Kernel
//	loss.go         softmax cross-entropy, forward and gradient
//	params.go       initialisation (PyTorch's defaults), Params/OptimizerState/Load, the SGD update
//	safetensors.go  checkpoint files
//
// The optimizer is ours, in Go, on the parameters' backing arrays
// (PyTorch's torch.optim.SGD semantics).
//
// Two gorgonia traps shape the code: graph nodes are hash-consed and input
// nodes are told apart by name alone, so every input must have a unique
// name (two unnamed inputs of one shape silently become one node), and our
// ops carry a unique id in their hash for the same reason; and a tape
// machine carries a finalizer that keeps it and its graph alive, so Close
// clears it (runtime.SetFinalizer(vm, nil)).
package model
