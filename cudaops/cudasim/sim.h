// sim.h: what the stand-in driver (driver.cc) and the host-compiled kernels
// (kernels_host.cc) share.
#pragma once
#include <cstdint>

namespace cudasim {

constexpr int kMaxParams = 16;

// A kernel parameter as the compiled kernel declares it.
struct ParamInfo {
	unsigned size; // bytes: 8 for pointers, 4 for int and float
	bool pointer;  // a device pointer (dptr<T>)
};

// One launch as the driver prepared it: the argument values (cu passes
// 8-byte slots) and, for pointer parameters, the host address of the
// device memory they point to with its allocation's bounds.
struct LaunchArgs {
	unsigned grid[3], block[3];
	uint64_t slot[kMaxParams];
	char *host[kMaxParams];
	const char *lo[kMaxParams], *hi[kMaxParams];
	int seed; // chaos mode: != 0 shuffles the order fibers run in
};

struct KernelDef {
	const char *name;
	bool barrier; // calls __syncthreads: its threads run as fibers
	int nparams;
	ParamInfo params[kMaxParams];
	// run executes every block; false when an access was out of bounds or
	// the barriers diverged (reported on stderr).
	bool (*run)(const KernelDef *, const LaunchArgs &);
};

// The kernels compiled into this library, from kernels.cu.
const KernelDef *kernels(int *n);

// Reports go to stderr, prefixed "cudasim: "; errors also count in
// error_count (each one is a bug the stand-in caught).
void report_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Host threads that run a launch's blocks (the stream worker included).
int block_threads();

} // namespace cudasim
