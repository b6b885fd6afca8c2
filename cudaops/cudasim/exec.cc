// exec.cc: the block scheduler that runs a launch: blocks spread over a
// few host threads, within a block the CUDA threads as a plain loop or, for
// kernels that call __syncthreads, as fibers switched at each barrier.
//
// It lives in libcuda.so.1 with the driver, whose few thread-locals are
// initial-exec (cheap: the kernels read threadIdx and blockIdx per thread);
// the kernels themselves are in libcudasim-kernels.so, whose __shared__
// arrays are thread-locals too large for glibc's static TLS surplus.
#include "shim.h"

#include <sys/mman.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "exec.h"

namespace cudasim {

constinit thread_local dim3 t_thread, t_block, t_blockDim, t_gridDim;

// ---- fibers: a minimal x86-64 context switch (callee-saved registers and
// the stack pointer). glibc's swapcontext makes a system call per switch
// (the signal mask), which would cost more than the work between barriers.
extern "C" void cudasim_switch(void **save_sp, void *to_sp);
asm(R"(
	.text
	.globl cudasim_switch
	.type cudasim_switch,@function
cudasim_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size cudasim_switch,.-cudasim_switch
)");

constexpr size_t kStack = 32 << 10; // kernels keep a few locals; a guard page below each
enum { RUNNING, AT_BARRIER, DONE };

struct Fiber {
	void *sp;
	int state, line;
	dim3 idx;
};

// Per host thread: the fibers of the block it runs, and the launch.
struct Sched {
	void *sched_sp = nullptr;
	Fiber *cur = nullptr;
	void (*fn)(void *) = nullptr;
	void *arg = nullptr;
	std::vector<Fiber> fibers;
	char *stacks = nullptr;
	size_t nstacks = 0;
	Job *job = nullptr;
	// The round in progress: fibers switch straight to the next live one in
	// order (half the switches of going through the scheduler each time).
	const size_t *order = nullptr;
	long pos = 0, n = 0;
	size_t alive = 0;
	int line = -1;
	bool diverged = false;
};
static thread_local Sched t_sched;

// next runs the next live fiber of the round, or returns to the scheduler
// at its end; save is where the caller's stack pointer goes.
static void next(Sched &s, void **save) {
	while (++s.pos < s.n) {
		Fiber &f = s.fibers[s.order[s.pos]];
		if (f.state == DONE) continue;
		f.state = RUNNING;
		s.cur = &f;
		t_thread = f.idx;
		cudasim_switch(save, f.sp);
		return;
	}
	s.cur = nullptr;
	cudasim_switch(save, s.sched_sp);
}

static void fiber_main() {
	Sched &s = t_sched;
	s.fn(s.arg);
	s.cur->state = DONE;
	s.alive--;
	next(s, &s.cur->sp);
	__builtin_trap(); // a finished fiber is never resumed
}

void *oob(const void *base, const void *at, unsigned size, const void *lo, const void *hi, int param, bool) {
	alignas(64) static thread_local char scratch[64];
	Job *j = t_sched.job;
	if (j) {
		j->failed = true;
		if (j->reports++ < 3)
			report_error("kernel %s: out-of-bounds access: parameter %d, %u-byte element at byte offset %lld of its "
				     "%lld-byte allocation (index %lld from the pointer passed), block (%u,%u,%u) thread (%u,%u,%u)",
				     j->def->name, param, size, (long long)((const char *)at - (const char *)lo),
				     (long long)((const char *)hi - (const char *)lo),
				     (long long)(((const char *)at - (const char *)base) / (long long)size), t_block.x, t_block.y,
				     t_block.z, t_thread.x, t_thread.y, t_thread.z);
	}
	memset(scratch, 0, sizeof scratch);
	return scratch;
}

void sync(int line) {
	Sched &s = t_sched;
	if (!s.cur) {
		report_error("kernel %s called __syncthreads but build.sh registered it without barriers", s.job ? s.job->def->name : "?");
		abort();
	}
	s.cur->state = AT_BARRIER;
	if (s.line == -1)
		s.line = line;
	else if (line != s.line)
		s.diverged = true;
	next(s, &s.cur->sp);
}

static uint64_t splitmix(uint64_t &x) {
	uint64_t z = (x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

// run_fibers runs one block's threads as fibers, round by round: each round
// takes every live thread to its next barrier (or its end).
void run_fibers(Job &j, void (*fn)(void *), void *arg) {
	Sched &s = t_sched;
	const LaunchArgs &a = *j.a;
	size_t n = (size_t)a.block[0] * a.block[1] * a.block[2];
	if (s.nstacks < n) {
		if (s.stacks) munmap(s.stacks, s.nstacks * kStack);
		s.stacks = (char *)mmap(nullptr, n * kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (s.stacks == MAP_FAILED) {
			report_error("cannot map %zu fiber stacks", n);
			abort();
		}
		for (size_t t = 0; t < n; t++) mprotect(s.stacks + t * kStack, 4096, PROT_NONE); // overflow guard
		s.nstacks = n;
	}
	s.fibers.resize(n);
	s.fn = fn;
	s.arg = arg;
	size_t t = 0;
	for (unsigned z = 0; z < a.block[2]; z++)
		for (unsigned y = 0; y < a.block[1]; y++)
			for (unsigned x = 0; x < a.block[0]; x++, t++) {
				uintptr_t *top = (uintptr_t *)(s.stacks + (t + 1) * kStack);
				top[-1] = 0;                        // fiber_main's return address (never used)
				top[-2] = (uintptr_t)&fiber_main; // where the first switch returns to
				for (int r = 3; r <= 8; r++) top[-r] = 0;
				s.fibers[t] = Fiber{&top[-8], RUNNING, 0, dim3{x, y, z}};
			}
	std::vector<size_t> order(n);
	for (size_t k = 0; k < n; k++) order[k] = k;
	uint64_t rng = (uint64_t)a.seed * 0x100000001b3ull + (uint64_t)t_block.x * 7919 + t_block.y * 104729 + t_block.z;
	s.alive = n;
	s.order = order.data();
	s.n = (long)n;
	while (s.alive > 0) {
		if (a.seed) // chaos: a different interleaving each round
			for (size_t k = n - 1; k > 0; k--) std::swap(order[k], order[splitmix(rng) % (k + 1)]);
		s.line = -1;
		s.diverged = false;
		s.pos = -1;
		next(s, &s.sched_sp); // returns when every live fiber reached a barrier or its end
		if (s.diverged) {
			if (j.reports++ < 3)
				report_error("kernel %s: threads of block (%u,%u,%u) wait at different __syncthreads (divergent barrier)",
					     j.def->name, t_block.x, t_block.y, t_block.z);
			j.failed = true;
			// Fibers stuck at different barriers would never agree: drop the block.
			break;
		}
	}
}

// ---- the host threads that share a launch's blocks
struct Pool {
	std::mutex mu;
	std::condition_variable cv;
	Job *job = nullptr;
	int active = 0;
	uint64_t gen = 0;
	std::vector<std::thread> helpers;
	bool started = false;
};
// Never destroyed, as driver.cc's state: a program may exit while the helper
// threads wait for work, and a static destructor would wait for them (or
// end the process on their joinable std::threads).
static Pool &pool = *new Pool;

int block_threads() {
	static int n = [] {
		const char *e = getenv("STOKE_CUDASIM_THREADS");
		int v = e ? atoi(e) : (int)std::min(4u, std::max(1u, std::thread::hardware_concurrency()));
		return std::max(1, std::min(v, 64));
	}();
	return n;
}

static void participate(Job &j) {
	Job *saved = t_sched.job;
	t_sched.job = &j;
	t_gridDim = dim3{j.a->grid[0], j.a->grid[1], j.a->grid[2]};
	t_blockDim = dim3{j.a->block[0], j.a->block[1], j.a->block[2]};
	for (long long b; (b = j.next++) < j.total;) {
		long long gx = j.a->grid[0], gy = j.a->grid[1];
		t_block = dim3{(unsigned)(b % gx), (unsigned)((b / gx) % gy), (unsigned)(b / (gx * gy))};
		j.block(b);
	}
	t_sched.job = saved;
}

static void helper_loop() {
	uint64_t seen = 0;
	std::unique_lock<std::mutex> lk(pool.mu);
	for (;;) {
		pool.cv.wait(lk, [&] { return pool.job && pool.gen != seen; });
		seen = pool.gen;
		Job *j = pool.job;
		pool.active++;
		lk.unlock();
		participate(*j);
		lk.lock();
		if (--pool.active == 0) pool.cv.notify_all();
	}
}

void run_job(Job &j) {
	int helpers = block_threads() - 1;
	std::unique_lock<std::mutex> lk(pool.mu);
	if (helpers <= 0 || j.total < 4 || pool.job) { // small, or another stream's launch has the helpers
		lk.unlock();
		participate(j);
		return;
	}
	if (!pool.started) {
		pool.started = true;
		for (int k = 0; k < helpers; k++) pool.helpers.emplace_back(helper_loop);
		for (auto &h : pool.helpers) h.detach();
	}
	pool.job = &j;
	pool.gen++;
	pool.cv.notify_all();
	lk.unlock();
	participate(j);
	lk.lock();
	pool.cv.wait(lk, [] { return pool.active == 0; });
	pool.job = nullptr;
}

} // namespace cudasim
