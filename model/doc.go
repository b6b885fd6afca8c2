// Package model is the networks as gorgonia expression graphs of our own
// ops: the plain cnn (conv blocks of convolution, bias, ReLU and an
// optional max-pool), torchvision's BasicBlock ResNets (resnet18/34) and
// Bottleneck ResNets (resnet50/101/152, wide_resnet50_2/101_2,
// resnext50_32x4d/101_32x8d with grouped 3x3 convs) and He et
// al.'s CIFAR ResNets (resnet20/32/56) with BatchNorm, then a global
// average pool, a linear head and softmax cross-entropy (label smoothing);
// the optimizers SGD, Nesterov and AdamW; and safetensors files for the
// weights and the optimizer state, in torchvision's state_dict names.
//
// It knows nothing of where batches come from: a step (Start, Eval, Logits:
// step.go, the trainer's seam) takes an Input holding a float32 NCHW slice,
// the same pixels as uint8 (normalized here with Options.Mean and
// Options.Std) or a value already in the engine's memory, and int32 labels.
//
// The graph has a fixed batch size B and is built once, in New, with two
// tape machines over it: one runs every node (forward, loss, backward) for
// Start, the other only the subgraph that computes the logits, for Eval and
// Logits. A short last batch is fed as B rows with a target
// that weights the n valid rows 1/n and the padding 0, so the padding adds
// nothing to the loss or the gradients.
//
// A network is a composition of layers (layers.go): a layer's constructor
// makes its parameters under torchvision's names, initialised in state_dict
// order (PyTorch's default init for the cnn, torchvision's for the
// ResNets), and its apply makes its graph nodes from those same fields; an
// arch (cnn, resnet) is a function that composes them. There is no second
// walk over the layers that must agree with the first.
//
// gorgonia gives the graph, its shape checks, the symbolic gradients and
// the tape machine. Every node that computes is an Op of ours (ops.go,
// resnet_ops.go, loss.go), forward and gradient alike, but gorgonia's
// elementwise Add where a value has two consumers (the gradient sum at a
// residual block's input, and the cnn's Spec.Skip adds). Each op's work is
// a call on the model's Engine (values.go), three roles the model calls
// apart: Values (memory), Layers (engine.go: the layers' kernels) and
// Updater (optim.go). CPUEngine runs package cpuops's kernels, whose matrix
// multiplies are package gemm's (Kernel names the one in use); cudaops's
// GraphEngine runs the same graph on a GPU. The model keeps a host slice
// beside each value it reads or writes and moves it through Values
// (Upload, Read), which on the CPU are the same memory: no branch of the
// model is for one device. Each op's
// output buffer is allocated once and reused, so a step allocates only
// gorgonia's own bookkeeping. gorgonia's built-in layers are not used: its
// Conv2d and MaxPool2D are correct but slow (transposes and fresh buffers
// every run); its GlobalAveragePool2D has no gradient and AveragePool2D and
// two-axis Mean are wrong (docs/gorgonia.md).
//
// The optimizer (optim.go) is a value of type Optimizer, SGD, Nesterov or
// AdamW (torch.optim's semantics), chosen once from the Options; it updates
// each parameter through the engine's Updater, on the engine's values, so
// every arch has every optimizer on every engine. Its state is a list of
// slots per parameter, named as PyTorch's (".momentum_buffer", or
// ".exp_avg" and ".exp_avg_sq"), then "optimizer.step".
//
// Files:
//
//	spec.go          Spec, ConvSpec and their validation
//	resnet.go        the ResNet layouts, BatchNorm layers and their buffers
//	layers.go        the layers and the archs' compositions
//	model.go         the graph, the steps, Close
//	step.go          the trainer's seam: Input, Pending, StepTimes; Start and Eval
//	ops.go           the ops (conv block, global average pool, linear) and their gradients; Kernel
//	resnet_ops.go    the ResNets' ops (conv, BatchNorm, BatchNorm + add + ReLU, max-pool)
//	loss.go          softmax cross-entropy, forward and gradient
//	values.go        Engine (Values, Layers, Updater), Values and the CPU's
//	engine.go        Layers, CPUEngine
//	engine_resnet.go the ResNets' layer kernels on the CPU
//	optim.go         Optimizer, SGD, Nesterov, AdamW, the update, the optimizer state
//	params.go        State, Load and the state dict's checks
//	gradsync.go      GradSync: the data-parallel hook between backward and update
//	gradsync_device.go DeviceGradSync: the same hook on the engine's values (NCCL on a GPU)
//	estimate.go      the memory estimate
//	safetensors.go   checkpoint files
//
// Two gorgonia traps shape the code: graph nodes are hash-consed and input
// nodes are told apart by name alone, so every input must have a unique
// name (two unnamed inputs of one shape silently become one node), and our
// ops carry a unique id in their hash for the same reason; and a tape
// machine carries a finalizer that keeps it and its graph alive, so Close
// clears it (runtime.SetFinalizer(vm, nil)).
package model
