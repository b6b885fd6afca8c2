// shim.h: what kernels.cu needs from CUDA C++ to compile as host C++ for the
// stand-in driver (build.sh). It is included first; build.sh also rewrites
// the kernels' pointer types (`float *x` -> `dptr<float> x`) so that every
// access to device memory is checked against its allocation.
//
// A block runs on one host thread: its CUDA threads are fibers when the
// kernel calls __syncthreads (a barrier switches to the next fiber), else a
// plain loop. __shared__ is per host thread (thread_local), which is per
// block because a block never moves between host threads.
#pragma once
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>

namespace cudasim {

struct dim3 {
	unsigned x = 1, y = 1, z = 1;
};

// The running CUDA thread's coordinates (set by the block scheduler).
// They live in libcuda.so.1 (exec.cc), initial-exec: one %fs-relative load.
#define CUDASIM_IE __attribute__((tls_model("initial-exec")))
extern constinit thread_local dim3 t_thread CUDASIM_IE, t_block CUDASIM_IE, t_blockDim CUDASIM_IE, t_gridDim CUDASIM_IE;

// oob reports an access outside p's allocation and returns a harmless place
// to read or write (the launch then fails with CUDA_ERROR_ILLEGAL_ADDRESS).
void *oob(const void *base, const void *at, unsigned size, const void *lo, const void *hi, int param, bool write_ok);

// sync is __syncthreads: the fiber yields until every thread of the block
// reached a barrier; line tells apart different barriers (divergence check).
void sync(int line);

// dptr is a kernel's pointer argument: the host address of the device
// allocation's backing and its bounds. p[i] is checked on every access.
template <class T> struct dptr {
	T *p;
	const char *lo, *hi; // the allocation
	int param;           // which kernel parameter it came from (reports)

	T &operator[](long long i) const {
		T *q = p + i;
		if (__builtin_expect((const char *)q < lo || (const char *)(q + 1) > hi, 0))
			return *(T *)oob(p, q, sizeof(T), lo, hi, param, true);
		return *q;
	}
	T &operator*() const { return (*this)[0]; }
	dptr operator+(long long i) const { return dptr{p + i, lo, hi, param}; }
	dptr operator-(long long i) const { return dptr{p - i, lo, hi, param}; }
};

inline int __float_as_int(float v) { return std::bit_cast<int>(v); }
inline float __int_as_float(int v) { return std::bit_cast<float>(v); }
// __fmul_rn, __fadd_rn and __fsub_rn are never contracted into an FMA: the empty asm
// keeps g++ (-ffp-contract=fast) from fusing the product into the next add.
inline float __fmul_rn(float a, float b) {
	float r = a * b;
	asm("" : "+x"(r));
	return r;
}
inline float __fadd_rn(float a, float b) {
	float r = a + b;
	asm("" : "+x"(r));
	return r;
}

inline float __fsub_rn(float a, float b) {
	float r = a - b;
	asm("" : "+x"(r));
	return r;
}

inline float atomicAdd(float *a, float v) { return std::atomic_ref<float>(*a).fetch_add(v, std::memory_order_relaxed); }
inline int atomicAdd(int *a, int v) { return std::atomic_ref<int>(*a).fetch_add(v, std::memory_order_relaxed); }

} // namespace cudasim

using cudasim::__fadd_rn;
using cudasim::__float_as_int;
using cudasim::__int_as_float;
using cudasim::__fmul_rn;
using cudasim::__fsub_rn;
using cudasim::atomicAdd;
using cudasim::dim3;
using cudasim::dptr;
using std::fmaxf;
using std::fminf;
using std::min;
using std::max;

#define threadIdx (cudasim::t_thread)
#define blockIdx (cudasim::t_block)
#define blockDim (cudasim::t_blockDim)
#define gridDim (cudasim::t_gridDim)
#define __global__ static
#define __device__ static inline
#define __shared__ static thread_local
#define __syncthreads() cudasim::sync(__LINE__)
#define __restrict__
