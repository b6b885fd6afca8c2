//go:build stokecuda

// counters.c counts, at the driver calls themselves, what a training step
// costs the host: kernel launches, waits for the device, allocations and
// bytes copied each way. driver.c fills the jump table (tramp.h) with the
// driver's functions; stoke_counters_install then puts a counting wrapper in
// front of the ones below, so every caller (gorgonia.org/cu, our engine,
// cuBLAS through its own table not: it calls libcuda directly) is counted
// with no change of its own. The counts are process-wide, atomic, and read
// by cudaops.ReadDriverCounters. See docs/cuda.md.
#include <cuda.h>
#include <stdatomic.h>
#include <string.h>

#include "counters.h"
#include "tramp.h"

extern void *stoke_cu_fn[STOKE_CU_N];

static _Atomic unsigned long long c_launch, c_sync, c_alloc, c_free, c_h2d, c_d2h;

#define REAL(name) static __typeof__(&name) real_##name
REAL(cuLaunchKernel);
REAL(cuGraphLaunch);
REAL(cuStreamSynchronize);
REAL(cuEventSynchronize);
REAL(cuCtxSynchronize);
REAL(cuMemAlloc);
REAL(cuMemFree);
REAL(cuMemAllocHost);
REAL(cuMemHostAlloc);
REAL(cuMemFreeHost);
REAL(cuMemcpyHtoD);
REAL(cuMemcpyHtoDAsync);
REAL(cuMemcpyDtoH);
REAL(cuMemcpyDtoHAsync);

static CUresult w_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
				 unsigned shared, CUstream s, void **params, void **extra) {
	atomic_fetch_add(&c_launch, 1);
	return real_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}
// A graph launch is one launch, whatever it holds: the host's cost is one call.
static CUresult w_cuGraphLaunch(CUgraphExec x, CUstream s) {
	atomic_fetch_add(&c_launch, 1);
	return real_cuGraphLaunch(x, s);
}
static CUresult w_cuStreamSynchronize(CUstream s) {
	atomic_fetch_add(&c_sync, 1);
	return real_cuStreamSynchronize(s);
}
static CUresult w_cuEventSynchronize(CUevent e) {
	atomic_fetch_add(&c_sync, 1);
	return real_cuEventSynchronize(e);
}
static CUresult w_cuCtxSynchronize(void) {
	atomic_fetch_add(&c_sync, 1);
	return real_cuCtxSynchronize();
}
static CUresult w_cuMemAlloc(CUdeviceptr *p, size_t n) {
	atomic_fetch_add(&c_alloc, 1);
	return real_cuMemAlloc(p, n);
}
static CUresult w_cuMemFree(CUdeviceptr p) {
	atomic_fetch_add(&c_free, 1);
	return real_cuMemFree(p);
}
static CUresult w_cuMemAllocHost(void **p, size_t n) {
	atomic_fetch_add(&c_alloc, 1);
	return real_cuMemAllocHost(p, n);
}
static CUresult w_cuMemHostAlloc(void **p, size_t n, unsigned flags) {
	atomic_fetch_add(&c_alloc, 1);
	return real_cuMemHostAlloc(p, n, flags);
}
static CUresult w_cuMemFreeHost(void *p) {
	atomic_fetch_add(&c_free, 1);
	return real_cuMemFreeHost(p);
}
// A synchronous copy waits for the device too: it counts as a sync.
static CUresult w_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
	atomic_fetch_add(&c_h2d, n);
	atomic_fetch_add(&c_sync, 1);
	return real_cuMemcpyHtoD(dst, src, n);
}
static CUresult w_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	atomic_fetch_add(&c_h2d, n);
	return real_cuMemcpyHtoDAsync(dst, src, n, s);
}
static CUresult w_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
	atomic_fetch_add(&c_d2h, n);
	atomic_fetch_add(&c_sync, 1);
	return real_cuMemcpyDtoH(dst, src, n);
}
static CUresult w_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	atomic_fetch_add(&c_d2h, n);
	return real_cuMemcpyDtoHAsync(dst, src, n, s);
}

// wrap puts w in name's slot (cuda.h's macros give the versioned name, as
// the table has it) and keeps the driver's function for it.
static void wrap(const char *name, void *w, void **real) {
	for (int i = 0; i < STOKE_CU_N; i++)
		if (strcmp(stoke_cu_names[i], name) == 0) {
			*real = stoke_cu_fn[i];
			stoke_cu_fn[i] = w;
			return;
		}
}

#define STR2(x) #x
#define STR(x) STR2(x) // the name after cuda.h's macro: cuMemAlloc -> "cuMemAlloc_v2"
#define WRAP(name) wrap(STR(name), (void *)w_##name, (void **)&real_##name)

void stoke_counters_install(void) {
	WRAP(cuLaunchKernel);
	WRAP(cuGraphLaunch);
	WRAP(cuStreamSynchronize);
	WRAP(cuEventSynchronize);
	WRAP(cuCtxSynchronize);
	WRAP(cuMemAlloc);
	WRAP(cuMemFree);
	WRAP(cuMemAllocHost);
	WRAP(cuMemHostAlloc);
	WRAP(cuMemFreeHost);
	WRAP(cuMemcpyHtoD);
	WRAP(cuMemcpyHtoDAsync);
	WRAP(cuMemcpyDtoH);
	WRAP(cuMemcpyDtoHAsync);
}

void stoke_counters_read(unsigned long long out[6]) {
	out[0] = atomic_load(&c_launch);
	out[1] = atomic_load(&c_sync);
	out[2] = atomic_load(&c_alloc);
	out[3] = atomic_load(&c_free);
	out[4] = atomic_load(&c_h2d);
	out[5] = atomic_load(&c_d2h);
}
