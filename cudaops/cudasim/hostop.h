// hostop.h: how the stand-ins for libraries built on the driver (the cuBLAS
// stand-in, cublas.cc) queue their work in stream order. libcuda.so.1's
// stand-in (driver.cc) exports enqueue_host; the other stand-ins link to it.
#pragma once
#include <cuda.h>

#include <functional>
#include <string>
#include <vector>

namespace cudasim {

// Operand is a range of device memory an operation reads or writes.
struct Operand {
	CUdeviceptr ptr;
	size_t bytes; // 0: not accessed (checked for nothing)
	const char *name;
};

// enqueue_host queues fn on stream h of context ctx (0 and CU_STREAM_LEGACY:
// its legacy stream), ordered like a kernel launched there. When it runs,
// each operand's [ptr, ptr+bytes) is checked against the live allocations
// and fn gets their host bytes, in order. An operand outside them is reported
// as an error naming what and the operand, and makes the context's error
// sticky (CUDA_ERROR_ILLEGAL_ADDRESS), as an illegal access does on hardware;
// fn does not run then. The result is the launch's: CUDA_ERROR_INVALID_HANDLE
// for a stream that does not exist, the context's sticky error, or success.
CUresult enqueue_host(CUcontext ctx, CUstream h, std::string what, std::vector<Operand> ops,
		      std::function<void(const std::vector<char *> &)> fn);

void report_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace cudasim
