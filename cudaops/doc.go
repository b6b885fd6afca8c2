// Package cudaops runs stoke's CNN on an NVIDIA GPU: device and context,
// pinned host memory (the loader's batch buffers), a copy stream and events
// for asynchronous host-to-device copies, and our kernels (kernels.cu,
// compiled to PTX for compute_80 and embedded) driven through
// gorgonia.org/cu. It is built with the tag stokecuda (not cuda: that tag
// switches on gorgonia's own CUDA build, which needs cuDNN 7 and cudagen).
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
