// Package model is the CNN as a gorgonia expression graph: conv blocks
// (convolution, bias, ReLU, optional max-pool), global average pool, a
// linear head and softmax cross-entropy; SGD with momentum and weight decay;
// and safetensors files for its weights and optimizer state.
//
// It knows nothing of where batches come from: a step takes a float32 NCHW
// slice and int32 labels.
//
// The graph has a fixed batch size B and is built once, in New, with two
// tape machines over it: one runs every node (forward, loss, backward) for
// TrainStep, the other only the subgraph that computes the logits, for
// EvalStep and Logits. A short last batch is fed as B rows with a target
// that weights the n valid rows 1/n and the padding 0, so the padding adds
// nothing to the loss or the gradients.
//
// Files:
//
//	spec.go         Spec, ConvSpec and their validation
//	model.go        the graph, the steps, Close
//	loss.go         softmax cross-entropy, our own gorgonia Op (forward and gradient)
//	params.go       initialisation (PyTorch's defaults), Params/OptimizerState/Load, the SGD update
//	safetensors.go  checkpoint files
//
// gorgonia v0.9.18, as used here: Conv2d, MaxPool2D (2x2 stride 2, floor
// like PyTorch), BroadcastAdd, Rectify, Reshape + one-axis Mean, and Mul
// are checked against float64 references by finite differences in the
// tests. GlobalAveragePool2D (no gradient), two-axis Mean and
// AveragePool2D (wrong) are avoided. The optimizer is ours, in Go, on the
// parameters' backing arrays (PyTorch's torch.optim.SGD semantics).
//
// Two gorgonia traps shape the code: graph nodes are hash-consed and input
// nodes are told apart by name alone, so every input must have a unique
// name (two unnamed inputs of one shape silently become one node); and a
// tape machine carries a finalizer that keeps it and its graph alive, so
// Close clears it (runtime.SetFinalizer(vm, nil)).
package model
