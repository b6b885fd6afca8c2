// exec.h: the block scheduler (exec.cc, in libcuda.so.1) as the typed
// kernel launchers (kernels_host.cc, in libcudasim-kernels.so) call it.
#pragma once
#include <atomic>

#include "sim.h"

namespace cudasim {

// ---- a launch in progress, shared by the host threads running its blocks
struct Job {
	const KernelDef *def;
	const LaunchArgs *a;
	std::atomic<long long> next{0};
	long long total;
	std::atomic<bool> failed{false};
	std::atomic<int> reports{0};
	virtual void block(long long b) = 0;
	virtual ~Job() = default;
};

// run_job runs every block of j, on this thread and the helper threads.
void run_job(Job &j);

// run_fibers runs the current block's threads as fibers calling fn(arg).
void run_fibers(Job &j, void (*fn)(void *), void *arg);

} // namespace cudasim
