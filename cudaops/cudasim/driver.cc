// driver.cc: a stand-in for libcuda.so.1 on a machine without a GPU. It
// implements the driver calls stoke makes with the semantics the CUDA
// driver API documents, and checks them (docs/cuda.md has the details):
//   - the current context is per OS thread; a call that needs one fails
//     with CUDA_ERROR_INVALID_CONTEXT without it;
//   - each stream is a worker thread running its queue in order; events
//     mark positions in queues; cuStreamWaitEvent orders one stream after
//     another; the legacy NULL stream waits for (and is waited for by)
//     blocking streams, not CU_STREAM_NON_BLOCKING ones;
//   - an async copy from pinned memory reads the host bytes when it runs;
//     from pageable memory they are staged at the call (the driver's
//     documented behaviour), and a copy to pageable memory returns only
//     once done;
//   - device memory is an address range the host cannot touch (PROT_NONE:
//     a host dereference faults); its bytes live elsewhere. Every copy,
//     memset and kernel access is checked against its allocation; leaks
//     and double frees are reported;
//   - STOKE_CUDASIM_CHAOS=seed adds random delays (fixed by the seed) in
//     the stream workers and shuffles threads within blocks;
//   - launch limits as the hardware has them (1024 threads per block,
//     48 KiB static + dynamic shared memory) and argument lists checked
//     against the kernel's signature and the PTX's .param lines;
//   - stream capture and graph launch (cuStreamBeginCapture ... cuGraphLaunch,
//     the "stream capture" section below): captured work is recorded, not
//     run, and replayed in stream order by cuGraphLaunch; the calls the
//     documentation forbids during a capture are refused with its codes and
//     invalidate the capture.
// Errors the stand-in catches are printed as "cudasim: error: ...".
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hostop.h"
#include "sim.h"

using cudasim::KernelDef;
using cudasim::LaunchArgs;
using cudasim::report_error;
using cudasim::report_note;

namespace cudasim {
static std::atomic<int> error_count{0};
static void vreport(const char *kind, const char *fmt, va_list ap) {
	char buf[2048];
	vsnprintf(buf, sizeof buf, fmt, ap);
	fprintf(stderr, "cudasim: %s%s\n", kind, buf);
}
void report_error(const char *fmt, ...) {
	error_count++;
	va_list ap;
	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
}
void report_note(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
}
} // namespace cudasim

namespace {

using Clock = std::chrono::steady_clock;

// The process-wide state is allocated once and never destroyed: a program
// may exit with streams alive (nothing in the driver API asks it to destroy
// them), and their workers stay blocked on g_cv, so a static destructor of
// g_cv (pthread_cond_destroy waits for its waiters) would hang the exit, and
// one of g_allocs could free what a worker still reads.
std::mutex &g_mu = *new std::mutex; // guards everything below
std::condition_variable &g_cv = *new std::condition_variable;

struct Stream;
struct Dep {
	Stream *s;
	uint64_t seq;
};
struct Op {
	uint64_t seq;
	std::vector<Dep> deps;
	std::function<void()> fn;
};

struct Alloc {
	CUdeviceptr dev;
	size_t size;
	char *host; // the bytes (nullptr once freed)
	bool freed;
};

struct HostAlloc {
	size_t size;
	int queued; // async copies queued that read or write it
};

struct Mark; // an event's position in a stream
struct Capture; // a stream capture sequence in progress

} // namespace

struct CUctx_st {
	int refs = 0;
	bool alive = false;
	Stream *legacy = nullptr;
	std::set<Stream *> streams; // created ones (not the legacy stream)
	std::set<CUevent_st *> events;
	std::set<CUmod_st *> modules;
	CUresult sticky = CUDA_SUCCESS; // after an illegal access, as on hardware
};

struct CUevent_st {
	unsigned flags;
	bool dead = false;
	std::shared_ptr<Mark> last;
	Capture *cap = nullptr;     // last recorded in this capture (a "captured event"), while it lasts
	std::vector<int> capnodes;  // the nodes it marks there
};

struct CUfunc_st {
	const KernelDef *def;
	unsigned static_shared;
	CUmod_st *mod;
};

struct CUmod_st {
	bool dead = false;
	std::map<std::string, CUfunc_st *> fns;
};

namespace {

struct Stream {
	int id;
	bool legacy, nonblocking;
	CUctx_st *ctx;
	std::deque<Op> q;
	uint64_t enq = 0, done = 0;
	bool stop = false, dead = false;
	std::thread th;
	Capture *cap = nullptr;   // the capture sequence the stream is in (cuStreamBeginCapture, or joined by a wait)
	std::vector<int> capdeps; // while capturing: the nodes the next captured node depends on
	int chaos;              // seed, 0 = off (STOKE_CUDASIM_CHAOS when the stream was created)
	unsigned chaos_max_us;  // the longest delay before an operation
	uint64_t rng;
};

struct Mark {
	Stream *s;
	uint64_t seq;
	bool done = false;
	Clock::time_point t;
};

CUctx_st &g_ctx = *new CUctx_st; // device 0's primary context
thread_local CUctx_st *t_cur = nullptr;
std::map<CUdeviceptr, Alloc> &g_allocs = *new std::map<CUdeviceptr, Alloc>; // by start address, freed ones kept (use-after-free reports)
std::map<uintptr_t, HostAlloc> &g_pinned = *new std::map<uintptr_t, HostAlloc>;
std::set<CUstream_st *> &g_stream_handles = *new std::set<CUstream_st *>;
int g_next_stream_id = 1;
size_t g_dev_live = 0;
char *g_arena = nullptr;
size_t g_arena_size = size_t(64) << 30, g_arena_next = 0;
constexpr size_t kDeviceMemory = size_t(16) << 30;
bool g_inited = false;

Stream *as_stream(CUstream h) { return reinterpret_cast<Stream *>(h); }

uint64_t splitmix(uint64_t &x) {
	uint64_t z = (x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void worker(Stream *s) {
	std::unique_lock<std::mutex> lk(g_mu);
	for (;;) {
		g_cv.wait(lk, [&] {
			if (s->q.empty()) return s->stop;
			for (const Dep &d : s->q.front().deps)
				if (d.s->done < d.seq) return false;
			return true;
		});
		if (s->q.empty()) break;
		Op op = std::move(s->q.front());
		s->q.pop_front();
		unsigned delay = s->chaos ? (unsigned)(splitmix(s->rng) % (s->chaos_max_us + 1)) : 0;
		lk.unlock();
		if (delay) std::this_thread::sleep_for(std::chrono::microseconds(delay));
		op.fn();
		lk.lock();
		s->done = op.seq;
		g_cv.notify_all();
	}
}

// Chaos mode is read when a stream is created, so a test can switch it on
// for the streams of one backend (os.Setenv reaches C's environment).
Stream *new_stream(CUctx_st *ctx, bool legacy, bool nonblocking) {
	Stream *s = new Stream{};
	const char *e = getenv("STOKE_CUDASIM_CHAOS"), *m = getenv("STOKE_CUDASIM_CHAOS_US");
	s->chaos = e ? atoi(e) : 0;
	s->chaos_max_us = m ? (unsigned)atoi(m) : 2000;
	if (s->chaos) report_note("chaos mode on a new stream: seed %d, delays up to %u us per operation", s->chaos, s->chaos_max_us);
	s->id = legacy ? 0 : g_next_stream_id++;
	s->legacy = legacy;
	s->nonblocking = nonblocking;
	s->ctx = ctx;
	s->rng = (uint64_t)s->chaos * 1000003u + (uint64_t)s->id;
	s->th = std::thread(worker, s);
	return s;
}

// stop_stream drains s and ends its worker. Called with g_mu held.
void stop_stream(std::unique_lock<std::mutex> &lk, Stream *s) {
	s->stop = true;
	g_cv.notify_all();
	lk.unlock();
	s->th.join();
	lk.lock();
	s->dead = true;
}

// enqueue appends fn to s with the legacy stream's implicit ordering and
// returns its position. Called with g_mu held.
uint64_t enqueue(Stream *s, std::function<void()> fn, std::vector<Dep> deps = {}) {
	CUctx_st *ctx = s->ctx;
	if (s->legacy) {
		for (Stream *b : ctx->streams)
			if (!b->nonblocking && b->enq > 0) deps.push_back({b, b->enq});
	} else if (!s->nonblocking && ctx->legacy && ctx->legacy->enq > 0) {
		deps.push_back({ctx->legacy, ctx->legacy->enq});
	}
	uint64_t seq = ++s->enq;
	s->q.push_back(Op{seq, std::move(deps), std::move(fn)});
	g_cv.notify_all();
	return seq;
}

void wait_for(std::unique_lock<std::mutex> &lk, Stream *s, uint64_t seq) {
	g_cv.wait(lk, [&] { return s->done >= seq; });
}

void sync_all(std::unique_lock<std::mutex> &lk, CUctx_st *ctx) {
	std::vector<std::pair<Stream *, uint64_t>> w;
	if (ctx->legacy) w.push_back({ctx->legacy, ctx->legacy->enq});
	for (Stream *s : ctx->streams) w.push_back({s, s->enq});
	for (auto &p : w) wait_for(lk, p.first, p.second);
}

// ctx_check: the calling thread's current context, alive and without a
// sticky error.
CUresult ctx_check() {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	CUctx_st *c = t_cur;
	if (!c) return CUDA_ERROR_INVALID_CONTEXT;
	if (!c->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return c->sticky;
}

// resolve_stream maps a handle to its stream (0 and CU_STREAM_LEGACY: the
// legacy stream of the current context).
CUresult resolve_stream(CUstream h, Stream **out) {
	if (h == nullptr || h == CU_STREAM_LEGACY) {
		*out = t_cur->legacy;
		return CUDA_SUCCESS;
	}
	if (h == CU_STREAM_PER_THREAD) {
		report_error("the per-thread default stream is not implemented by the stand-in");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!g_stream_handles.count(h) || as_stream(h)->dead) {
		report_error("use of a stream that does not exist or was destroyed (%p)", (void *)h);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	*out = as_stream(h);
	return CUDA_SUCCESS;
}

std::string describe(CUdeviceptr p) {
	char buf[256];
	auto it = g_allocs.upper_bound(p);
	if (it != g_allocs.begin()) {
		--it;
		const Alloc &a = it->second;
		if (p < a.dev + a.size + 4096) {
			snprintf(buf, sizeof buf, "byte offset %lld of a %zu-byte allocation at 0x%llx%s", (long long)(p - a.dev), a.size,
				 (unsigned long long)a.dev, a.freed ? " that was freed" : "");
			return buf;
		}
	}
	snprintf(buf, sizeof buf, "0x%llx, not in any allocation", (unsigned long long)p);
	return buf;
}

// find returns the live allocation holding [p, p+n), or nullptr.
Alloc *find(CUdeviceptr p, size_t n) {
	auto it = g_allocs.upper_bound(p);
	if (it == g_allocs.begin()) return nullptr;
	--it;
	Alloc &a = it->second;
	if (a.freed || p < a.dev || p + n > a.dev + a.size || p + n < p) return nullptr;
	return &a;
}

CUresult check_range(const char *what, CUdeviceptr p, size_t n, char **host) {
	Alloc *a = find(p, n);
	if (!a) {
		report_error("%s of %zu bytes at device address 0x%llx: outside every live allocation (starts at %s)", what, n,
			     (unsigned long long)p, describe(p).c_str());
		return CUDA_ERROR_INVALID_VALUE;
	}
	*host = a->host + (p - a->dev);
	return CUDA_SUCCESS;
}

// live_at_run is the host bytes of [p, p+n) when a queued or captured
// operation runs (g_mu not held). cuMemFree waits for queued work, so only a
// graph captured before the free finds them gone: reported, and the
// context's error becomes sticky, as an illegal access on hardware.
char *live_at_run(CUctx_st *ctx, const char *what, CUdeviceptr p, size_t n) {
	std::lock_guard<std::mutex> l(g_mu);
	if (ctx->sticky) return nullptr;
	Alloc *a = find(p, n);
	if (!a) {
		report_error("%s: %zu bytes at device address 0x%llx are no longer live memory (%s): freed after the graph that holds "
			     "it was captured?",
			     what, n, (unsigned long long)p, describe(p).c_str());
		ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
		return nullptr;
	}
	return a->host + (p - a->dev);
}

HostAlloc *pinned_of(const void *p, size_t n) {
	uintptr_t u = (uintptr_t)p;
	auto it = g_pinned.upper_bound(u);
	if (it == g_pinned.begin()) return nullptr;
	--it;
	if (u + n > it->first + it->second.size) return nullptr;
	return &it->second;
}

// ---- stream capture: the rules, and where they are written down
//
// From the CUDA driver API reference (cuda.h 11.8's comments, the same text
// as docs.nvidia.com/cuda/cuda-driver-api, "Stream Management" and "Graph
// Management") and the CUDA C++ Programming Guide, "CUDA Graphs" > "Creating
// a Graph Using Stream Capture" (sections "Cross-stream Dependencies and
// Events", "Prohibited and Unhandled Operations", "Invalidation"):
//  R1 cuStreamBeginCapture: work pushed into a capturing stream is not run
//     but captured into a graph; capture may not begin on CU_STREAM_LEGACY
//     (or the NULL stream), nor on a stream already capturing
//     (CUDA_ERROR_INVALID_VALUE, the documented return).
//  R2 Fork and join: cuEventRecord in a capturing stream makes a captured
//     event; a stream that waits on it joins the same capture, its next node
//     depending on the event's nodes. Waiting from a stream in one capture on
//     an event of another would merge two graphs (CUDA_ERROR_STREAM_CAPTURE_MERGE);
//     waiting from a capturing stream on a non-captured event without
//     CU_EVENT_WAIT_EXTERNAL would cross the capture's boundary
//     (CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "a dependency ... which crosses
//     the capture sequence boundary").
//  R3 It is invalid to synchronize or query a capturing stream or a captured
//     event, or a broader handle (the context) while a stream in it captures:
//     cuStreamSynchronize / cuStreamQuery on a capturing stream and
//     cuCtxSynchronize return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ("not
//     permitted when the stream is capturing"); cuEventSynchronize /
//     cuEventQuery / cuEventElapsedTime on a captured event return
//     CUDA_ERROR_CAPTURED_EVENT ("not permitted on an event which was last
//     recorded in a capturing stream").
//  R4 While a stream not created CU_STREAM_NON_BLOCKING captures, any use of
//     the legacy stream is invalid, and so are the synchronous calls that use
//     it (cuMemcpyHtoD, cuMemcpyDtoH): CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
//     ("a disallowed implicit dependency ... from cudaStreamLegacy").
//     cuStreamIsCapturing / cuStreamGetCaptureInfo on the legacy stream then
//     return that code too, and (documented) do not invalidate the capture.
//  R5 Potentially unsafe calls (cuThreadExchangeStreamCaptureMode): in
//     CU_STREAM_CAPTURE_MODE_GLOBAL (the thread's default) a thread with a
//     capture of its own not begun RELAXED, or while any thread has a GLOBAL
//     capture, may not make them; THREAD_LOCAL: only its own captures count;
//     RELAXED: no restriction. The reference's example is cudaMalloc (not
//     stream ordered, so a replay would not repeat it). The stand-in counts
//     cuMemAlloc, cuMemFree (it synchronizes the device) and the synchronous
//     copies cuMemcpyHtoD / cuMemcpyDtoH as unsafe; the documentation does
//     not list the unsafe calls, so this is the stand-in's reading (the same
//     three are what aws-ofi-nccl#1342 had to wrap in RELAXED mode to make
//     them work during a capture). Refused with
//     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
//  R6 A copy to or from pageable host memory is synchronous with respect to
//     the host ("API synchronization behavior"), so it cannot be captured:
//     cuMemcpyHtoDAsync / cuMemcpyDtoHAsync of pageable memory into a
//     capturing stream return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. Pinned
//     memory is read or written when the node runs, at each replay.
//  R7 Invalidation: an invalid operation during capture invalidates the
//     capture; further use of its streams or captured events returns
//     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED until cuStreamEndCapture, which
//     takes the streams out of capture and returns that error and a NULL graph.
//  R8 cuStreamEndCapture must be called on the stream where the capture began
//     (on a stream that only joined it: CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
//     "the capture was not initiated in this stream", and the capture is
//     invalidated as R7 says of any invalid operation), and from the thread
//     that began it unless it was RELAXED (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD).
//     Every stream that joined must have been joined back into the origin
//     stream (CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "a fork that was not
//     joined to the primary stream"), with a NULL graph.
//  R9 cuGraphLaunch: each launch is ordered behind the previous work in the
//     stream and the previous launches of the same executable graph; the
//     executable graph is a snapshot, independent of the graph it came from
//     (cuGraphDestroy of that graph does not touch it), and cuGraphExecDestroy
//     of one in flight frees it on completion.
// Captured work becomes nodes in capture order (so every node comes after
// the nodes it depends on); a launch runs them in that order as one
// operation of the launch stream, which respects every dependency.

struct GNode {
	std::string what;
	std::function<void()> fn;
	std::vector<int> deps;
};
using Nodes = std::vector<GNode>;

} // namespace

struct CUgraph_st {
	std::shared_ptr<Nodes> nodes = std::make_shared<Nodes>();
	bool live = false; // returned by cuStreamEndCapture and not destroyed
};

struct CUgraphExec_st {
	std::shared_ptr<const Nodes> nodes;
	Stream *last_s = nullptr; // where the previous launch went (R9)
	uint64_t last_seq = 0;
};

namespace {

struct Capture {
	uint64_t id;
	Stream *origin;
	CUstreamCaptureMode mode;
	std::thread::id thread;
	CUctx_st *ctx;
	CUgraph_st *graph;
	std::set<Stream *> streams; // origin and every stream that joined
	bool invalid = false, ended = false;
};

std::set<Capture *> &g_captures = *new std::set<Capture *>; // in progress
std::set<CUgraph_st *> &g_graphs = *new std::set<CUgraph_st *>;
std::set<CUgraphExec_st *> &g_execs = *new std::set<CUgraphExec_st *>;
uint64_t g_capture_id = 0;
thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

void invalidate(Capture *c, const char *why) {
	if (!c->invalid) report_note("capture sequence %llu invalidated: %s", (unsigned long long)c->id, why);
	c->invalid = true;
}

bool captured_event(CUevent_st *e) { return e->cap && !e->cap->ended; }

// legacy_use applies R4 to a use of ctx's legacy stream.
CUresult legacy_use(CUctx_st *ctx, const char *what) {
	CUresult r = CUDA_SUCCESS;
	for (Capture *c : g_captures)
		for (Stream *s : c->streams)
			if (c->ctx == ctx && !s->nonblocking) {
				invalidate(c, what);
				r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
			}
	return r;
}

// unsafe_call applies R5 to a potentially unsafe call by this thread.
CUresult unsafe_call(const char *what) {
	if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
	CUresult r = CUDA_SUCCESS;
	auto me = std::this_thread::get_id();
	for (Capture *c : g_captures) {
		bool own = c->thread == me && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
		bool global = t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
		if (own || global) {
			invalidate(c, what);
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	return r;
}

// submit queues fn on s, or records it as a node when s captures.
CUresult submit(Stream *s, const char *what, std::function<void()> fn, std::vector<Dep> deps = {}) {
	if (Capture *c = s->cap) {
		if (c->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		Nodes &n = *c->graph->nodes;
		n.push_back(GNode{what, std::move(fn), s->capdeps});
		s->capdeps = {(int)n.size() - 1};
		return CUDA_SUCCESS;
	}
	enqueue(s, std::move(fn), std::move(deps));
	return CUDA_SUCCESS;
}

// resolve_enqueue is resolve_stream for a call that puts work on the
// stream: the legacy stream is subject to R4, an invalidated capture to R7.
CUresult resolve_enqueue(CUstream h, Stream **out, const char *what) {
	if (CUresult r = resolve_stream(h, out)) return r;
	if ((*out)->legacy) return legacy_use((*out)->ctx, what);
	if ((*out)->cap && (*out)->cap->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	return CUDA_SUCCESS;
}

// end_capture takes every stream of c out of capture mode.
void end_capture(Capture *c) {
	for (Stream *s : c->streams)
		if (s->cap == c) {
			s->cap = nullptr;
			s->capdeps.clear();
		}
	c->ended = true;
	g_captures.erase(c);
}

} // namespace

namespace cudasim {

CUresult enqueue_host(CUcontext cctx, CUstream h, std::string what, std::vector<Operand> ops,
		      std::function<void(const std::vector<char *> &)> fn) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	CUctx_st *ctx = cctx;
	if (!ctx || !ctx->alive) return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx->sticky) return ctx->sticky;
	Stream *s;
	CUctx_st *saved = t_cur; // resolve_stream reads the calling thread's context
	t_cur = ctx;
	CUresult r = resolve_enqueue(h, &s, "a library call on the legacy stream during a capture");
	t_cur = saved;
	if (r) return r;
	std::string name = what;
	return submit(s, name.c_str(), [ctx, what = std::move(what), ops = std::move(ops), fn = std::move(fn)]() {
		std::vector<char *> host(ops.size(), nullptr);
		{
			std::lock_guard<std::mutex> l(g_mu);
			if (ctx->sticky) return;
			for (size_t k = 0; k < ops.size(); k++) {
				if (ops[k].bytes == 0) continue;
				Alloc *a = find(ops[k].ptr, ops[k].bytes);
				if (!a) {
					report_error("%s: %s, %zu bytes at device address 0x%llx, is outside every live allocation (starts at %s)",
						     what.c_str(), ops[k].name, ops[k].bytes, (unsigned long long)ops[k].ptr,
						     describe(ops[k].ptr).c_str());
					ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
					return;
				}
				host[k] = a->host + (ops[k].ptr - a->dev);
			}
		}
		fn(host);
	});
}

} // namespace cudasim

extern "C" {

// stoke_cudasim_errors is how many errors the stand-in has reported.
int stoke_cudasim_errors(void) { return cudasim::error_count.load(); }

CUresult cuInit(unsigned int flags) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (!g_inited) {
		g_arena = (char *)mmap(nullptr, g_arena_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (g_arena == MAP_FAILED) {
			report_error("cannot reserve %zu GiB of address space for device memory", g_arena_size >> 30);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		g_arena_next = 1 << 20;
		g_inited = true;
	}
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	*v = 11080;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (!n) return CUDA_ERROR_INVALID_VALUE;
	*n = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (!d) return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, len, "stoke cudasim (CPU stand-in, %d host threads)", cudasim::block_threads());
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	*bytes = kDeviceMemory;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice d) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 8; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = cudasim::block_threads(); break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 0; break;
	default: *v = 0;
	}
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	std::lock_guard<std::mutex> lk(g_mu);
	if (g_ctx.refs++ == 0) {
		g_ctx.alive = true;
		g_ctx.sticky = CUDA_SUCCESS;
		g_ctx.legacy = new_stream(&g_ctx, true, false);
	}
	*pctx = &g_ctx;
	return CUDA_SUCCESS;
}

// At the last release the context is destroyed: what is still allocated
// in it is reported as a leak, then freed.
CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	std::unique_lock<std::mutex> lk(g_mu);
	if (g_ctx.refs <= 0) {
		report_error("cuDevicePrimaryCtxRelease without a matching retain");
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (--g_ctx.refs > 0) return CUDA_SUCCESS;
	sync_all(lk, &g_ctx);
	size_t n = 0, bytes = 0;
	for (auto &[p, a] : g_allocs)
		if (!a.freed) {
			n++;
			bytes += a.size;
			free(a.host);
			a.host = nullptr;
			a.freed = true;
		}
	g_dev_live = 0;
	if (n) report_error("leak: %zu device allocations (%zu bytes) not freed when the context was released", n, bytes);
	if (!g_pinned.empty()) {
		size_t pb = 0;
		for (auto &[p, h] : g_pinned) pb += h.size;
		report_error("leak: %zu pinned host allocations (%zu bytes) not freed when the context was released", g_pinned.size(), pb);
		for (auto &[p, h] : g_pinned) munmap((void *)p, h.size);
		g_pinned.clear();
	}
	if (!g_ctx.streams.empty()) report_error("leak: %zu streams not destroyed when the context was released", g_ctx.streams.size());
	for (Stream *s : std::vector<Stream *>(g_ctx.streams.begin(), g_ctx.streams.end())) stop_stream(lk, s);
	g_ctx.streams.clear();
	size_t live_events = 0;
	for (CUevent_st *e : g_ctx.events) live_events += !e->dead;
	if (live_events) report_error("leak: %zu events not destroyed when the context was released", live_events);
	g_ctx.events.clear();
	if (!g_graphs.empty() || !g_execs.empty())
		report_error("leak: %zu graphs and %zu executable graphs not destroyed when the context was released", g_graphs.size(),
			     g_execs.size());
	size_t live_mods = 0;
	for (CUmod_st *m : g_ctx.modules) live_mods += !m->dead;
	if (live_mods) report_error("leak: %zu modules not unloaded when the context was released", live_mods);
	g_ctx.modules.clear();
	stop_stream(lk, g_ctx.legacy);
	g_ctx.legacy = nullptr;
	g_ctx.alive = false;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	std::lock_guard<std::mutex> lk(g_mu);
	if (ctx && (ctx != &g_ctx || !g_ctx.alive)) return CUDA_ERROR_INVALID_CONTEXT;
	t_cur = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	*ctx = t_cur;
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	CUresult cr = CUDA_SUCCESS; // R3: the context encompasses its capturing streams
	for (Capture *c : std::vector<Capture *>(g_captures.begin(), g_captures.end()))
		if (c->ctx == t_cur) {
			invalidate(c, "cuCtxSynchronize during the capture");
			cr = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	if (cr) return cr;
	sync_all(lk, t_cur);
	return t_cur->sticky;
}

// ---- streams and events

CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!ph || (flags & ~CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
	Stream *s = new_stream(t_cur, false, flags & CU_STREAM_NON_BLOCKING);
	t_cur->streams.insert(s);
	*ph = reinterpret_cast<CUstream>(s);
	g_stream_handles.insert(*ph);
	return CUDA_SUCCESS;
}

// cuStreamDestroy returns once the stream's queued work is done (the driver
// returns at once and frees later; waiting is indistinguishable here).
CUresult cuStreamDestroy(CUstream h) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (h == nullptr || h == CU_STREAM_LEGACY) return CUDA_ERROR_INVALID_HANDLE;
	Stream *s;
	if (CUresult r = resolve_stream(h, &s)) return r;
	t_cur->streams.erase(s);
	stop_stream(lk, s);
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream h) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	Stream *s;
	if (CUresult r = resolve_stream(h, &s)) return r;
	if (s->legacy) {
		if (CUresult r = legacy_use(s->ctx, "cuStreamSynchronize of the legacy stream")) return r;
	} else if (s->cap) { // R3
		invalidate(s->cap, "cuStreamSynchronize of a capturing stream");
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	wait_for(lk, s, s->enq);
	return t_cur->sticky;
}

CUresult cuStreamQuery(CUstream h) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	Stream *s;
	if (CUresult r = resolve_stream(h, &s)) return r;
	if (s->legacy) {
		if (CUresult r = legacy_use(s->ctx, "cuStreamQuery of the legacy stream")) return r;
	} else if (s->cap) { // R3
		invalidate(s->cap, "cuStreamQuery of a capturing stream");
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	return s->done >= s->enq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventCreate(CUevent *ph, unsigned int flags) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!ph) return CUDA_ERROR_INVALID_VALUE;
	CUevent_st *e = new CUevent_st{flags};
	t_cur->events.insert(e);
	*ph = e;
	return CUDA_SUCCESS;
}

static CUresult event_check(CUevent e) {
	if (!e || !g_ctx.events.count(e) || e->dead) {
		report_error("use of an event that does not exist or was destroyed (%p)", (void *)e);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent e) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = event_check(e)) return r;
	e->dead = true; // kept: a later use is reported, not undefined
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream h) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (CUresult r = event_check(e)) return r;
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuEventRecord on the legacy stream")) return r;
	if (s->cap) { // R2: a captured event marks the stream's current nodes
		e->cap = s->cap;
		e->capnodes = s->capdeps;
		return CUDA_SUCCESS;
	}
	e->cap = nullptr;
	auto m = std::make_shared<Mark>();
	m->s = s;
	m->seq = enqueue(s, [m] {
		std::lock_guard<std::mutex> l(g_mu);
		m->t = Clock::now();
		m->done = true;
	});
	e->last = m;
	return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = event_check(e)) return r;
	if (captured_event(e)) { // R3
		invalidate(e->cap, "cuEventQuery of a captured event");
		return CUDA_ERROR_CAPTURED_EVENT;
	}
	return !e->last || e->last->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent e) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = event_check(e)) return r;
	if (captured_event(e)) { // R3
		invalidate(e->cap, "cuEventSynchronize of a captured event");
		return CUDA_ERROR_CAPTURED_EVENT;
	}
	if (auto m = e->last) g_cv.wait(lk, [&] { return m->done; });
	return g_ctx.sticky;
}

CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = event_check(a)) return r;
	if (CUresult r = event_check(b)) return r;
	if (!ms) return CUDA_ERROR_INVALID_VALUE;
	for (CUevent_st *e : {a, b})
		if (captured_event(e)) { // R3
			invalidate(e->cap, "cuEventElapsedTime of a captured event");
			return CUDA_ERROR_CAPTURED_EVENT;
		}
	if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
	if (!a->last || !b->last) return CUDA_ERROR_INVALID_HANDLE; // never recorded
	if (!a->last->done || !b->last->done) return CUDA_ERROR_NOT_READY;
	*ms = std::chrono::duration<float, std::milli>(b->last->t - a->last->t).count();
	return CUDA_SUCCESS;
}

// cuStreamWaitEvent: work queued on h after this call waits for the work
// before e's latest record (none: no wait), as the driver documents.
CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (CUresult r = event_check(e)) return r;
	if (flags & ~CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuStreamWaitEvent on the legacy stream")) return r;
	if (captured_event(e)) { // R2: fork (join the capture) or join (add its nodes)
		Capture *c = e->cap;
		if (s->legacy) {
			invalidate(c, "the legacy stream waited on a captured event");
			return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		}
		if (s->cap && s->cap != c) {
			invalidate(c, "a wait would merge two capture sequences");
			invalidate(s->cap, "a wait would merge two capture sequences");
			return CUDA_ERROR_STREAM_CAPTURE_MERGE;
		}
		if (c->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		if (!s->cap) {
			s->cap = c;
			s->capdeps = e->capnodes;
			c->streams.insert(s);
		} else {
			for (int n : e->capnodes)
				if (std::find(s->capdeps.begin(), s->capdeps.end(), n) == s->capdeps.end()) s->capdeps.push_back(n);
		}
		return CUDA_SUCCESS;
	}
	if (s->cap) {
		if (flags & CU_EVENT_WAIT_EXTERNAL) {
			report_error("cuStreamWaitEvent with CU_EVENT_WAIT_EXTERNAL during a capture (an external event node) is not implemented by the stand-in");
			return CUDA_ERROR_NOT_SUPPORTED;
		}
		if (!e->last) return CUDA_SUCCESS; // never recorded: no dependency, nothing crosses
		invalidate(s->cap, "a capturing stream waited on an event recorded outside the capture");
		return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
	}
	std::vector<Dep> deps;
	if (e->last) deps.push_back({e->last->s, e->last->seq});
	enqueue(s, [] {}, std::move(deps));
	return CUDA_SUCCESS;
}

// ---- device memory

CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (CUresult r = unsafe_call("cuMemAlloc during a capture")) return r; // R5
	if (!p || n == 0) return CUDA_ERROR_INVALID_VALUE;
	if (g_dev_live + n > kDeviceMemory) return CUDA_ERROR_OUT_OF_MEMORY;
	// Addresses are never reused, with a gap after each allocation, so a
	// stale or overrunning pointer names what it points past.
	size_t span = (n + 4096 + 0xffff) & ~size_t(0xffff);
	if (g_arena_next + span > g_arena_size) return CUDA_ERROR_OUT_OF_MEMORY;
	char *host = (char *)aligned_alloc(256, (n + 255) & ~size_t(255));
	if (!host) return CUDA_ERROR_OUT_OF_MEMORY;
	memset(host, 0xff, n); // cuMemAlloc does not clear: a read before a write sees NaNs
	CUdeviceptr dev = (CUdeviceptr)(g_arena + g_arena_next);
	g_arena_next += span;
	g_allocs[dev] = Alloc{dev, n, host, false};
	g_dev_live += n;
	*p = dev;
	return CUDA_SUCCESS;
}

// cuMemFree waits for the device first, so no queued work still uses it.
CUresult cuMemFree(CUdeviceptr p) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (CUresult r = unsafe_call("cuMemFree during a capture")) return r; // R5
	auto it = g_allocs.find(p);
	if (it == g_allocs.end()) {
		report_error("cuMemFree of 0x%llx, which cuMemAlloc did not return (%s)", (unsigned long long)p, describe(p).c_str());
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (it->second.freed) {
		report_error("double free: cuMemFree of 0x%llx (%zu bytes), already freed", (unsigned long long)p, it->second.size);
		return CUDA_ERROR_INVALID_VALUE;
	}
	sync_all(lk, t_cur);
	it = g_allocs.find(p);
	free(it->second.host);
	it->second.host = nullptr;
	it->second.freed = true;
	g_dev_live -= it->second.size;
	return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream h) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuMemsetD32Async on the legacy stream")) return r;
	if (p % 4) {
		report_error("cuMemsetD32Async at 0x%llx: not 4-byte aligned", (unsigned long long)p);
		return CUDA_ERROR_INVALID_VALUE;
	}
	char *dst;
	if (CUresult r = check_range("cuMemsetD32Async", p, 4 * n, &dst)) return r;
	(void)dst;
	return submit(s, "cuMemsetD32Async", [ctx = s->ctx, p, v, n] {
		uint32_t *d = (uint32_t *)live_at_run(ctx, "cuMemsetD32Async", p, 4 * n);
		if (!d) return;
		for (size_t k = 0; k < n; k++) d[k] = v;
	});
}

// cuMemcpyHtoD is synchronous on the legacy stream: ordered after the work
// of blocking streams, and the host waits for it (the driver may return
// earlier for pageable memory, once staged; waiting is allowed).
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (CUresult r = legacy_use(t_cur, "cuMemcpyHtoD (synchronous, on the legacy stream) during a capture")) return r; // R4
	if (CUresult r = unsafe_call("cuMemcpyHtoD (synchronous) during a capture")) return r;                          // R5
	char *d;
	if (CUresult r = check_range("cuMemcpyHtoD", dst, n, &d)) return r;
	Stream *s = t_cur->legacy;
	uint64_t seq = enqueue(s, [d, src, n] { memcpy(d, src, n); });
	wait_for(lk, s, seq);
	return t_cur->sticky;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream h) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuMemcpyHtoDAsync on the legacy stream")) return r;
	char *d;
	if (CUresult r = check_range("cuMemcpyHtoDAsync", dst, n, &d)) return r;
	if (s->cap) {
		if (!pinned_of(src, n)) { // R6
			invalidate(s->cap, "cuMemcpyHtoDAsync from pageable memory");
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
		CUctx_st *ctx = s->ctx;
		return submit(s, "cuMemcpyHtoDAsync", [dst, src, n, ctx] {
			char *d = live_at_run(ctx, "graph launch: cuMemcpyHtoDAsync", dst, n);
			if (!d) return;
			{
				std::lock_guard<std::mutex> l(g_mu);
				if (!pinned_of(src, n)) {
					report_error("graph launch: a captured cuMemcpyHtoDAsync reads %zu bytes at %p, which is no longer pinned "
						     "memory (freed with cuMemFreeHost after the capture)", n, src);
					ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
					return;
				}
			}
			memcpy(d, src, n);
		});
	}
	if (HostAlloc *ha = pinned_of(src, n)) {
		// Pinned: the DMA reads the host bytes when it runs.
		ha->queued++;
		enqueue(s, [d, src, n, ha] {
			memcpy(d, src, n);
			std::lock_guard<std::mutex> l(g_mu);
			ha->queued--;
		});
	} else {
		// Pageable: copied to a staging buffer now, before the call returns.
		auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + n);
		enqueue(s, [d, staged] { memcpy(d, staged->data(), staged->size()); });
	}
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream h) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuMemcpyDtoHAsync on the legacy stream")) return r;
	char *sp;
	if (CUresult r = check_range("cuMemcpyDtoHAsync", src, n, &sp)) return r;
	if (s->cap) {
		if (!pinned_of(dst, n)) { // R6
			invalidate(s->cap, "cuMemcpyDtoHAsync to pageable memory");
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
		CUctx_st *ctx = s->ctx;
		return submit(s, "cuMemcpyDtoHAsync", [dst, src, n, ctx] {
			char *sp = live_at_run(ctx, "graph launch: cuMemcpyDtoHAsync", src, n);
			if (!sp) return;
			{
				std::lock_guard<std::mutex> l(g_mu);
				if (!pinned_of(dst, n)) {
					report_error("graph launch: a captured cuMemcpyDtoHAsync writes %zu bytes at %p, which is no longer pinned "
						     "memory (freed with cuMemFreeHost after the capture)", n, dst);
					ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
					return;
				}
			}
			memcpy(dst, sp, n);
		});
	}
	if (HostAlloc *ha = pinned_of(dst, n)) {
		ha->queued++;
		enqueue(s, [dst, sp, n, ha] {
			memcpy(dst, sp, n);
			std::lock_guard<std::mutex> l(g_mu);
			ha->queued--;
		});
		return CUDA_SUCCESS;
	}
	// Pageable destination: the call returns only once the copy is done.
	uint64_t seq = enqueue(s, [dst, sp, n] { memcpy(dst, sp, n); });
	wait_for(lk, s, seq);
	return t_cur->sticky;
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (CUresult r = legacy_use(t_cur, "cuMemcpyDtoH (synchronous, on the legacy stream) during a capture")) return r; // R4
	if (CUresult r = unsafe_call("cuMemcpyDtoH (synchronous) during a capture")) return r;                          // R5
	char *sp;
	if (CUresult r = check_range("cuMemcpyDtoH", src, n, &sp)) return r;
	Stream *s = t_cur->legacy;
	uint64_t seq = enqueue(s, [dst, sp, n] { memcpy(dst, sp, n); });
	wait_for(lk, s, seq);
	return t_cur->sticky;
}

// ---- pinned host memory

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!pp || n == 0) return CUDA_ERROR_INVALID_VALUE;
	(void)flags;
	size_t len = (n + 4095) & ~size_t(4095);
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
	memset(p, 0xff, len); // not cleared by the driver either: uninitialised floats read as NaN
	g_pinned[(uintptr_t)p] = HostAlloc{len, 0};
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void **pp, size_t n) { return cuMemHostAlloc(pp, n, 0); }

CUresult cuMemFreeHost(void *p) {
	std::unique_lock<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	auto it = g_pinned.find((uintptr_t)p);
	if (it == g_pinned.end()) {
		report_error("cuMemFreeHost of %p: not memory from cuMemHostAlloc, or already freed (double free)", p);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (it->second.queued > 0) {
		report_error("cuMemFreeHost of %p while %d async copies from or to it are still queued", p, it->second.queued);
		sync_all(lk, t_cur);
		it = g_pinned.find((uintptr_t)p);
	}
	munmap(p, it->second.size);
	g_pinned.erase(it);
	return CUDA_SUCCESS;
}

// ---- modules and launches

// cuModuleLoadData takes the PTX text. Each .entry must be a kernel
// compiled into the stand-in, with the same parameter list (count and
// sizes) as kernels.cu declares: the PTX and the source must agree.
CUresult cuModuleLoadData(CUmodule *pm, const void *image) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!pm || !image) return CUDA_ERROR_INVALID_VALUE;
	std::string ptx((const char *)image);
	if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) {
		report_error("cuModuleLoadData: the image is not PTX text (no .version/.target)");
		return CUDA_ERROR_INVALID_IMAGE;
	}
	size_t tp = ptx.find(".target sm_");
	if (tp != std::string::npos && atoi(ptx.c_str() + tp + 11) > 80) {
		report_error("cuModuleLoadData: PTX targets sm_%d, newer than the stand-in's compute capability 8.0", atoi(ptx.c_str() + tp + 11));
		return CUDA_ERROR_NO_BINARY_FOR_GPU;
	}
	int nk;
	const KernelDef *defs = cudasim::kernels(&nk);
	auto *m = new CUmod_st{};
	bool bad = false;
	size_t pos = 0;
	while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
		size_t nb = pos + 7, ne = ptx.find_first_of("( \n", nb);
		std::string name = ptx.substr(nb, ne - nb);
		size_t close = ptx.find(')', ne), body = ptx.find("\n}", close);
		std::vector<unsigned> sizes;
		for (size_t q = ptx.find(".param", ne); q != std::string::npos && q < close; q = ptx.find(".param", q + 6)) {
			size_t t = ptx.find('.', q + 6);
			sizes.push_back((unsigned)atoi(ptx.c_str() + t + 2) / 8); // .u64 .u32 .f32 .s32 .b32
		}
		unsigned shared = 0;
		for (size_t q = ptx.find(".shared", close); q != std::string::npos && q < body; q = ptx.find(".shared", q + 7)) {
			size_t lb = ptx.find('[', q), eol = ptx.find('\n', q);
			if (lb < eol && ptx.compare(q - 1, 1, "\t") == 0) shared += (unsigned)atoi(ptx.c_str() + lb + 1);
		}
		pos = body;
		const KernelDef *def = nullptr;
		for (int k = 0; k < nk; k++)
			if (name == defs[k].name) def = &defs[k];
		if (!def) {
			report_error("PTX kernel %s has no host build in the stand-in (is the PTX from another kernels.cu?)", name.c_str());
			bad = true;
			continue;
		}
		bool same = (int)sizes.size() == def->nparams;
		for (int k = 0; same && k < def->nparams; k++) same = sizes[k] == def->params[k].size;
		if (!same) {
			std::string a, b;
			for (unsigned s : sizes) a += std::to_string(s) + " ";
			for (int k = 0; k < def->nparams; k++) b += std::to_string(def->params[k].size) + " ";
			report_error("kernel %s: the PTX's .param list (bytes: %s) differs from kernels.cu's signature (bytes: %s)", name.c_str(),
				     a.c_str(), b.c_str());
			bad = true;
			continue;
		}
		m->fns[name] = new CUfunc_st{def, shared, m};
	}
	if (bad || m->fns.empty()) {
		if (m->fns.empty()) report_error("cuModuleLoadData: no .entry in the PTX");
		return CUDA_ERROR_INVALID_PTX;
	}
	t_cur->modules.insert(m);
	*pm = m;
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!m || !g_ctx.modules.count(m) || m->dead) {
		report_error("cuModuleUnload of a module that is not loaded (%p)", (void *)m);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	m->dead = true;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!m || !g_ctx.modules.count(m) || m->dead) return CUDA_ERROR_INVALID_HANDLE;
	auto it = m->fns.find(name);
	if (it == m->fns.end()) return CUDA_ERROR_NOT_FOUND;
	*pf = it->second;
	return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
			CUstream h, void **params, void **extra) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!f || !f->mod || f->mod->dead) {
		report_error("cuLaunchKernel of a function whose module is not loaded");
		return CUDA_ERROR_INVALID_HANDLE;
	}
	const KernelDef *def = f->def;
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuLaunchKernel on the legacy stream")) return r;
	if (!gx || !gy || !gz || !bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024 ||
	    gy > 65535 || gz > 65535 || gx > 2147483647u) {
		report_error("launch of %s: grid (%u,%u,%u) x block (%u,%u,%u) exceeds the device's limits (1024 threads per block, block "
			     "z <= 64, grid y,z <= 65535)",
			     def->name, gx, gy, gz, bx, by, bz);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (f->static_shared + shared > 48u << 10) {
		report_error("launch of %s: %u bytes of static + %u of dynamic shared memory exceed 48 KiB per block", def->name,
			     f->static_shared, shared);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (extra) {
		report_error("launch of %s: the extra argument form is not implemented by the stand-in", def->name);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (def->nparams > 0 && !params) {
		report_error("launch of %s: no argument list for %d parameters", def->name, def->nparams);
		return CUDA_ERROR_INVALID_VALUE;
	}
	LaunchArgs a{};
	a.grid[0] = gx, a.grid[1] = gy, a.grid[2] = gz;
	a.block[0] = bx, a.block[1] = by, a.block[2] = bz;
	a.seed = s->chaos;
	// cu passes every argument in an 8-byte slot, consecutive in one array:
	// when the pointers say so, a 4-byte parameter's upper half must be 0
	// (anything else is a pointer or a 64-bit value in an int's place).
	bool cu_layout = true;
	for (int k = 1; k < def->nparams; k++) cu_layout = cu_layout && (char *)params[k] == (char *)params[0] + 8 * k;
	for (int k = 0; k < def->nparams; k++) {
		if (!params[k]) {
			report_error("launch of %s: argument %d is a null pointer in the argument list", def->name, k);
			return CUDA_ERROR_INVALID_VALUE;
		}
		memcpy(&a.slot[k], params[k], def->params[k].size);
		if (cu_layout && def->params[k].size == 4) {
			uint32_t hi;
			memcpy(&hi, (char *)params[k] + 4, 4);
			if (hi) {
				report_error("launch of %s: argument %d: the kernel takes 4 bytes (int or float), the 8-byte slot holds 0x%08x%08x",
					     def->name, k, hi, (unsigned)a.slot[k]);
				return CUDA_ERROR_INVALID_VALUE;
			}
		}
		if (def->params[k].pointer && !find(a.slot[k], 0)) {
			report_error("launch of %s: argument %d is not a pointer into live device memory: %s", def->name, k,
				     describe(a.slot[k]).c_str());
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	CUctx_st *ctx = t_cur;
	// The node may run many times (a graph's replays): each run resolves the
	// pointers afresh, into a copy of the arguments.
	return submit(s, def->name, [def, a0 = a, ctx]() {
		LaunchArgs a = a0;
		{
			std::lock_guard<std::mutex> l(g_mu);
			for (int k = 0; k < def->nparams; k++) {
				if (!def->params[k].pointer) continue;
				Alloc *al = find(a.slot[k], 0);
				if (!al) { // cuMemFree waits for queued work, so only a graph captured before the free gets here
					report_error("kernel %s: argument %d no longer points into live memory (%s): freed after the graph "
						     "that launches it was captured?",
						     def->name, k, describe(a.slot[k]).c_str());
					ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
					return;
				}
				a.host[k] = al->host + (a.slot[k] - al->dev);
				a.lo[k] = al->host;
				a.hi[k] = al->host + al->size;
			}
			if (ctx->sticky) return;
		}
		if (!def->run(def, a)) {
			std::lock_guard<std::mutex> l(g_mu);
			ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
		}
	});
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuMemcpyDtoDAsync on the legacy stream")) return r;
	char *d, *sp;
	if (CUresult r = check_range("cuMemcpyDtoDAsync (destination)", dst, n, &d)) return r;
	if (CUresult r = check_range("cuMemcpyDtoDAsync (source)", src, n, &sp)) return r;
	(void)d, (void)sp;
	return submit(s, "cuMemcpyDtoDAsync", [ctx = s->ctx, dst, src, n] {
		char *d = live_at_run(ctx, "cuMemcpyDtoDAsync (destination)", dst, n);
		char *sp = d ? live_at_run(ctx, "cuMemcpyDtoDAsync (source)", src, n) : nullptr;
		if (sp) memmove(d, sp, n);
	});
}

// ---- stream capture and graphs (the rules R1-R9 are above, with their sources)

CUresult cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode) { // cuda.h: cuStreamBeginCapture_v2
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (h == nullptr || h == CU_STREAM_LEGACY) return CUDA_ERROR_INVALID_VALUE; // R1
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	Stream *s;
	if (CUresult r = resolve_stream(h, &s)) return r;
	if (s->cap) return CUDA_ERROR_INVALID_VALUE; // R1
	auto *c = new Capture{++g_capture_id, s, mode, std::this_thread::get_id(), s->ctx, new CUgraph_st};
	c->streams.insert(s);
	g_captures.insert(c);
	s->cap = c;
	s->capdeps.clear();
	return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
		      *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
		return CUDA_ERROR_INVALID_VALUE;
	std::swap(*mode, t_capture_mode);
	return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream h, CUgraph *pg) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!pg) return CUDA_ERROR_INVALID_VALUE;
	Stream *s;
	if (CUresult r = resolve_stream(h, &s)) return r;
	Capture *c = s->cap;
	if (!c) return CUDA_ERROR_INVALID_VALUE; // not capturing: "must have been initiated on hStream"
	if (c->origin != s) {                    // R8
		invalidate(c, "cuStreamEndCapture on a stream that joined the capture, not the one that began it");
		return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	}
	if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
		return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD; // R8
	*pg = nullptr;
	CUresult r = CUDA_SUCCESS;
	if (c->invalid) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; // R7
	} else {
		// R8: each joined stream's last nodes must be reachable from the origin's.
		const Nodes &n = *c->graph->nodes;
		std::vector<char> seen(n.size(), 0);
		std::vector<int> todo = s->capdeps;
		while (!todo.empty()) {
			int k = todo.back();
			todo.pop_back();
			if (seen[k]) continue;
			seen[k] = 1;
			for (int d : n[k].deps) todo.push_back(d);
		}
		for (Stream *t : c->streams)
			for (int k : t->cap == c ? t->capdeps : std::vector<int>{})
				if (!seen[k]) r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
		if (r) report_note("capture sequence %llu: a stream that joined it was not joined back into the origin stream",
				   (unsigned long long)c->id);
	}
	end_capture(c);
	if (r) {
		delete c->graph;
		c->graph = nullptr;
		return r;
	}
	c->graph->live = true;
	g_graphs.insert(c->graph);
	*pg = c->graph;
	return CUDA_SUCCESS;
}

// capture_status answers cuStreamIsCapturing and cuStreamGetCaptureInfo (R4
// for the legacy stream).
static CUresult capture_status(CUstream h, CUstreamCaptureStatus *st, Capture **c) {
	if (CUresult r = ctx_check()) return r;
	if (!st) return CUDA_ERROR_INVALID_VALUE;
	Stream *s;
	if (CUresult r = resolve_stream(h, &s)) return r;
	*c = nullptr;
	if (s->legacy) {
		for (Capture *k : g_captures)
			for (Stream *t : k->streams)
				if (k->ctx == s->ctx && !t->nonblocking) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		*st = CU_STREAM_CAPTURE_STATUS_NONE;
		return CUDA_SUCCESS;
	}
	*c = s->cap;
	*st = !s->cap ? CU_STREAM_CAPTURE_STATUS_NONE : s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st) {
	std::lock_guard<std::mutex> lk(g_mu);
	Capture *c;
	return capture_status(h, st, &c);
}

CUresult cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id) {
	std::lock_guard<std::mutex> lk(g_mu);
	Capture *c;
	if (CUresult r = capture_status(h, st, &c)) return r;
	if (id && c && *st == CU_STREAM_CAPTURE_STATUS_ACTIVE) *id = c->id;
	return CUDA_SUCCESS;
}

// The 11.3 form: the graph being captured too; the dependency set is not
// implemented (the stand-in has no node handles).
CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **deps,
				   size_t *ndeps) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (deps || ndeps) {
		report_error("cuStreamGetCaptureInfo_v2's dependency set (node handles) is not implemented by the stand-in");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	Capture *c;
	if (CUresult r = capture_status(h, st, &c)) return r;
	if (c && *st == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		if (id) *id = c->id;
		if (g) *g = c->graph;
	}
	return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *pe, CUgraph g) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!pe || !g || !g_graphs.count(g)) return CUDA_ERROR_INVALID_VALUE;
	auto *e = new CUgraphExec_st;
	e->nodes = std::make_shared<const Nodes>(*g->nodes); // R9: a snapshot
	g_execs.insert(e);
	*pe = e;
	return CUDA_SUCCESS;
}

// cuda.h 11.8 maps cuGraphInstantiate to cuGraphInstantiate_v2 (this); the
// driver also exports the unversioned name with the same arguments (below).
CUresult cuGraphInstantiate(CUgraphExec *pe, CUgraph g, CUgraphNode *errNode, char *log, size_t logSize) {
	(void)errNode;
	if (log && logSize) log[0] = 0;
	return instantiate(pe, g);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags) {
	if (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
		return CUDA_ERROR_INVALID_VALUE;
	return instantiate(pe, g); // neither flag changes anything here: no allocation nodes, no priorities
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream h) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (CUresult r = ctx_check()) return r;
	if (!e || !g_execs.count(e)) {
		report_error("cuGraphLaunch of an executable graph that does not exist or was destroyed (%p)", (void *)e);
		return CUDA_ERROR_INVALID_VALUE;
	}
	Stream *s;
	if (CUresult r = resolve_enqueue(h, &s, "cuGraphLaunch on the legacy stream")) return r;
	std::shared_ptr<const Nodes> nodes = e->nodes; // kept by the queued launch: R9's destroy in flight
	auto run = [nodes] {
		for (const GNode &n : *nodes) n.fn();
	};
	if (s->cap) return submit(s, "cuGraphLaunch", run); // a child graph of the capture
	std::vector<Dep> deps;
	if (e->last_s && !e->last_s->dead) deps.push_back({e->last_s, e->last_seq}); // R9
	enqueue(s, run, std::move(deps));
	e->last_s = s;
	e->last_seq = s->enq;
	return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec e) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (!e || !g_execs.erase(e)) {
		report_error("cuGraphExecDestroy of an executable graph that does not exist or was destroyed (%p)", (void *)e);
		return CUDA_ERROR_INVALID_VALUE;
	}
	delete e; // a launch in flight holds its nodes
	return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph g) {
	std::lock_guard<std::mutex> lk(g_mu);
	if (!g_inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (!g || !g_graphs.erase(g)) {
		report_error("cuGraphDestroy of a graph that does not exist or was destroyed (%p)", (void *)g);
		return CUDA_ERROR_INVALID_VALUE;
	}
	delete g;
	return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
	static thread_local char buf[32];
	snprintf(buf, sizeof buf, "CUDA_ERROR_%d", (int)r);
	*s = buf;
	return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult r, const char **s) { return cuGetErrorName(r, s); }

} // extern "C"

// The unversioned cuGraphInstantiate the driver exports beside _v2 (the
// CUDA 10 entry point, same arguments: cudaTypedefs.h's
// PFN_cuGraphInstantiate_v10000). The CUDA 10.0 cuStreamBeginCapture
// without a mode is not exported: what mode it means is not documented.
#undef cuGraphInstantiate
extern "C" CUresult cuGraphInstantiate(CUgraphExec *pe, CUgraph g, CUgraphNode *errNode, char *log, size_t logSize) {
	return cuGraphInstantiate_v2(pe, g, errNode, log, logSize);
}
