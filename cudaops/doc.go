// Package cudaops runs stoke's CNN on an NVIDIA GPU: device and context,
// pinned host memory (the loader's batch buffers), a copy stream and events
// for asynchronous host-to-device copies, and our kernels (kernels.cu,
// compiled to PTX for compute_80 and embedded) driven through
// gorgonia.org/cu. It is built with the tag stokecuda (not cuda: that tag
// switches on gorgonia's own CUDA build, which needs cuDNN 7 and cudagen).
//
// Inputs: a batch is float32, already normalized (Backend.StartStep,
// TrainStep, EvalStep), or uint8, round(255·v) in CHW order (StartStepU8,
// TrainStepU8, EvalStepU8): a quarter of the bytes are copied, and the
// kernel normalize_u8 turns them into the float input on the device with
// NewBackend's Normalize (the config's augment.mean and augment.std). Both
// are copied into a double-buffered device input, blocking or on the copy
// stream, and the Start methods return once the host buffer may be reused.
// Rows from n on are padding: zeroed on the device, never scored.
//
// The network is a fixed sequence of kernels over an engine (net.go): the
// GPU engine launches them on a stream, the CPU engine runs their mirrors in
// ref.go, which have the same index arithmetic. The CPU engine is tested
// against the gorgonia model in every build (ref_test.go); the GPU engine
// against the CPU engine and the model on a GPU (gpu_test.go, via
// scripts/gpu-check.sh).
//
// The binary never links libcuda: driver.c loads libcuda.so.1 at the first
// cuInit, and tramp_linux_amd64.S routes every driver function cu calls
// through a jump table, so a stokecuda binary starts without a driver and
// Open explains what is missing. docs/cuda.md has the reasons.
package cudaops
