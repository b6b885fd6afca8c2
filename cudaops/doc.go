// Package cudaops runs stoke's CNN on an NVIDIA GPU: device and context,
// pinned host memory (the loader's batch buffers), a copy stream and events
// for asynchronous host-to-device copies, and our kernels (kernels.cu,
// compiled to PTX for compute_80 and embedded) driven through
// gorgonia.org/cu. It is built with the tag stokecuda (not cuda: that tag
// switches on gorgonia's own CUDA build, which needs cuDNN 7 and cudagen).
//
// Inputs (model.Input, to Backend.Start and Eval): a batch is float32,
// already normalized, or uint8, round(255·v) in CHW order: a quarter of the
// bytes are copied, and the kernel normalize_u8 turns them into the float
// input on the device with NewBackend's Normalize (the config's
// augment.mean and augment.std). Both are copied into a double-buffered
// device input, blocking or on the copy stream, and Start returns once the
// host buffer may be reused; the step's Pending gives its result and its
// copy and compute times (CUDA events).
// Rows from n on are padding: zeroed on the device, never scored.
//
// The network is model's gorgonia graph, the same as on the CPU: its ops
// call a model.Engine at the level of layers, and GraphEngine (engine_graph.go)
// implements it by launching the kernels on device values: one kernel
// family per layer (the cnn's conv block is the ResNets' convolution with
// a bias + ReLU epilogue). Each kernel is checked against its CPU mirror
// (ref_kernels_test.go, TestGPUKernelParity) or against cpuops
// (kernels_resnet_test.go), the graph on the GPU engine against the graph
// on the CPU engine (graph_test.go), and the state after 3 steps of each
// arch against its hashes before the last refactor (statehash_gpu_test.go),
// on a GPU or under the stand-in (scripts/gpu-sim.sh).
//
// Data parallel (train.dist nccl): NCCLSync (ncclsync.go) is the backend's
// model.DeviceGradSync. The gradients stay on the device; buckets of them
// are summed by NCCL on a stream of the sync's own as backward queues them,
// ordered by events, and the optimizer's kernels wait for the sums with
// cuStreamWaitEvent, not on the host.
//
// The binary never links libcuda: driver.c loads libcuda.so.1 at the first
// cuInit, and tramp_linux_amd64.S routes every driver function cu calls
// through a jump table, so a stokecuda binary starts without a driver and
// Open explains what is missing. docs/cuda.md has the reasons.
//
// CUDA Graphs (graphs.go): BeginCapture records what is queued on a stream
// instead of running it, Capture.End gives the Graph, Instantiate the
// GraphExec that Launch replays with one driver call; the calls the driver
// forbids during a capture come back as GraphError with its code.
package cudaops
