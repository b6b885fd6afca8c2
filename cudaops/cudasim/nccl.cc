// nccl.cc: a stand-in for libnccl.so.2 on a machine without a GPU, written
// from NCCL's API reference (nccl_decl.h), for several processes on one
// machine. It runs on the libcuda.so.1 stand-in (driver.cc): a collective is
// queued on its stream in order with the copies and kernels there
// (cudasim::enqueue_host), and blocks that stream, not the caller, until
// every rank's matching call has run, as on a GPU.
//
// How the ranks meet: ncclGetUniqueId names a shared-memory segment (the
// calling process's pid and 16 random bytes); ncclCommInitRank maps it and
// waits until all nranks ranks have joined, then the segment's name is
// removed (every rank has it mapped). A collective is the communicator's
// next sequence number on every rank: each rank copies its input into a
// segment of its own, all wait at a barrier, each reads what it needs and
// computes its output (reductions in rank order 0, 1, ..., so every rank
// gets the same bits), and all wait at a second barrier before a rank may
// reuse its segment. Calls that disagree (kind, count, type, op, root) fail
// with ncclInvalidUsage on every rank, naming both calls.
//
// Failures end waits instead of hanging them: a rank whose process has
// exited is seen within 0.1 s (ncclRemoteError on every other rank, naming
// it), and ncclCommAbort on any rank fails every rank's pending and later
// collectives of that communicator. A failed collective leaves its output
// unwritten and sets the communicator's asynchronous error
// (ncclCommGetAsyncError), as NCCL's documentation describes. Not
// implemented (ncclInvalidUsage, reported): ncclCommInitRank inside a group
// (one communicator per thread is fine), and the NCCL functions not in
// nccl_decl.h.
#include "nccl_decl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fp.h"
#include "hostop.h"

using cudasim::report_error;

namespace {

constexpr int kMaxRanks = 64;
constexpr char kMagic[] = "stoke-nccl-standin-2";

enum Kind { kAllReduce = 1, kBroadcast, kReduce, kAllGather, kReduceScatter };
const char *kind_name(int k) {
	static const char *n[] = {"?", "ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter"};
	return k >= 1 && k <= 5 ? n[k] : "?";
}

struct Sig {
	int kind, dtype, op, root;
	size_t count;
};

// Shared is the segment every rank of a communicator maps.
struct Shared {
	std::atomic<int> state; // 0 fresh, 1 being initialized, 2 ready
	int nranks, joined;
	pthread_mutex_t mu; // process-shared, robust
	pthread_cond_t cv;  // process-shared
	int aborted_by;     // -1, or the rank that called ncclCommAbort
	pid_t pid[kMaxRanks];
	uint64_t arrived[kMaxRanks], finished[kMaxRanks];
	uint64_t gen[kMaxRanks]; // each rank's data segment
	size_t cap[kMaxRanks];
	Sig sig[kMaxRanks];
	char base[96]; // data segments are base-rR-gG
};

struct IdBody {
	char magic[sizeof kMagic];
	char name[64];
};

} // namespace

struct ncclComm {
	int rank, nranks, device;
	Shared *sh;
	std::string base;
	uint64_t seq = 0; // collectives queued
	std::atomic<int> async_error{ncclSuccess};
	std::atomic<bool> local_abort{false};
	std::string last_error;
	CUcontext ctx;
	char *mine = nullptr; // this rank's data segment
	std::map<std::pair<int, uint64_t>, char *> peers;
	size_t peer_size[kMaxRanks] = {};
};

namespace {

thread_local int t_group_depth;
std::mutex g_err_mu;
std::string &g_last_error = *new std::string;

ncclResult_t fail(ncclComm *c, ncclResult_t r, const std::string &why) {
	std::lock_guard<std::mutex> lk(g_err_mu);
	g_last_error = why;
	if (c) c->last_error = why;
	report_error("nccl: %s", why.c_str());
	return r;
}

void lock(Shared *sh) {
	if (pthread_mutex_lock(&sh->mu) == EOWNERDEAD) pthread_mutex_consistent(&sh->mu);
}

// exited: the process is gone, or a zombie its parent has not reaped yet.
bool exited(pid_t pid) {
	if (kill(pid, 0) != 0 && errno == ESRCH) return true;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f) return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *paren = strrchr(buf, ')'); // "pid (comm) S ..."
	return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

// wait_all waits, with sh locked, until every rank's counter reaches seq.
// It ends early on an abort or a rank that has exited: the result then says
// which.
ncclResult_t wait_all(ncclComm *c, const uint64_t *counter, uint64_t seq, std::string *why) {
	Shared *sh = c->sh;
	for (;;) {
		if (sh->aborted_by >= 0 || c->local_abort) {
			*why = "the communicator was aborted (ncclCommAbort on rank " + std::to_string(sh->aborted_by >= 0 ? sh->aborted_by : c->rank) + ")";
			return ncclRemoteError;
		}
		bool all = true;
		for (int i = 0; i < c->nranks; i++) {
			if (counter[i] >= seq) continue;
			all = false;
			if (exited(sh->pid[i])) {
				*why = "rank " + std::to_string(i) + " (pid " + std::to_string(sh->pid[i]) + ") exited before its part of collective " + std::to_string(seq);
				return ncclRemoteError;
			}
		}
		if (all) return ncclSuccess;
		timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 100 * 1000 * 1000;
		if (t.tv_nsec >= 1000000000) t.tv_sec++, t.tv_nsec -= 1000000000;
		if (pthread_cond_timedwait(&sh->cv, &sh->mu, &t) == EOWNERDEAD) pthread_mutex_consistent(&sh->mu);
	}
}

std::string seg_name(const char *base, int rank, uint64_t gen) {
	return std::string(base) + "-r" + std::to_string(rank) + "-g" + std::to_string(gen);
}

char *map_segment(const std::string &name, size_t bytes, bool create) {
	int fd = shm_open(name.c_str(), create ? O_RDWR | O_CREAT | O_EXCL : O_RDONLY, 0600);
	if (fd < 0) return nullptr;
	if (create && ftruncate(fd, (off_t)bytes) != 0) {
		close(fd);
		shm_unlink(name.c_str());
		return nullptr;
	}
	void *p = mmap(nullptr, bytes, create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? nullptr : (char *)p;
}

size_t type_size(int t) {
	switch (t) {
	case ncclInt8:
	case ncclUint8: return 1;
	case ncclFloat16:
	case ncclBfloat16: return 2;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32: return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64: return 8;
	}
	return 0;
}

template <class T> void reduce_as(int op, int n, const std::vector<const char *> &in, char *out, size_t count, size_t off) {
	for (size_t i = 0; i < count; i++) {
		T acc;
		memcpy(&acc, in[0] + (off + i) * sizeof(T), sizeof(T));
		for (int r = 1; r < n; r++) {
			T v;
			memcpy(&v, in[r] + (off + i) * sizeof(T), sizeof(T));
			switch (op) {
			case ncclSum:
			case ncclAvg: acc = acc + v; break;
			case ncclProd: acc = acc * v; break;
			case ncclMax: acc = v > acc ? v : acc; break;
			case ncclMin: acc = v < acc ? v : acc; break;
			}
		}
		if (op == ncclAvg) acc = acc / T(n);
		memcpy(out + i * sizeof(T), &acc, sizeof(T));
	}
}

// reduce: out[i] = in[0][off+i] op in[1][off+i] op ..., for count elements.
// 16-bit floats are reduced in float, rounded once at the end.
void reduce(int dtype, int op, int n, const std::vector<const char *> &in, char *out, size_t count, size_t off) {
	switch (dtype) {
	case ncclInt8: reduce_as<int8_t>(op, n, in, out, count, off); break;
	case ncclUint8: reduce_as<uint8_t>(op, n, in, out, count, off); break;
	case ncclInt32: reduce_as<int32_t>(op, n, in, out, count, off); break;
	case ncclUint32: reduce_as<uint32_t>(op, n, in, out, count, off); break;
	case ncclInt64: reduce_as<int64_t>(op, n, in, out, count, off); break;
	case ncclUint64: reduce_as<uint64_t>(op, n, in, out, count, off); break;
	case ncclFloat32: reduce_as<float>(op, n, in, out, count, off); break;
	case ncclFloat64: reduce_as<double>(op, n, in, out, count, off); break;
	case ncclFloat16:
	case ncclBfloat16: {
		std::vector<std::vector<float>> f(n, std::vector<float>(count));
		std::vector<const char *> fp(n);
		for (int r = 0; r < n; r++) {
			for (size_t i = 0; i < count; i++) {
				uint16_t b;
				memcpy(&b, in[r] + (off + i) * 2, 2);
				if (dtype == ncclBfloat16) {
					f[r][i] = cudasim::bf16_to_float(b);
				} else {
					_Float16 h;
					memcpy(&h, &b, 2);
					f[r][i] = float(h);
				}
			}
			fp[r] = (const char *)f[r].data();
		}
		std::vector<float> acc(count);
		reduce_as<float>(op, n, fp, (char *)acc.data(), count, 0);
		for (size_t i = 0; i < count; i++) {
			uint16_t b;
			if (dtype == ncclBfloat16) {
				b = cudasim::float_to_bf16(acc[i]);
			} else {
				_Float16 h = _Float16(acc[i]);
				memcpy(&b, &h, 2);
			}
			memcpy(out + i * 2, &b, 2);
		}
		break;
	}
	}
}

// run_collective is one rank's part of collective seq, on its stream.
void run_collective(ncclComm *c, uint64_t seq, Sig s, const char *send, char *recv, size_t in_bytes, size_t out_bytes) {
	Shared *sh = c->sh;
	std::string why;
	ncclResult_t r = ncclSuccess;
	bool publish = s.kind != kBroadcast || c->rank == s.root;
	// 1. This rank's input into its segment (a larger one when it must grow).
	lock(sh);
	if (publish && sh->cap[c->rank] < in_bytes) {
		uint64_t g = sh->gen[c->rank] + 1;
		size_t cap = std::max(in_bytes, 2 * sh->cap[c->rank]);
		char *m = map_segment(seg_name(sh->base, c->rank, g), cap, true);
		if (!m) {
			pthread_mutex_unlock(&sh->mu);
			c->async_error = fail(c, ncclSystemError, std::string("cannot create a shared-memory segment: ") + strerror(errno));
			return;
		}
		if (sh->gen[c->rank]) shm_unlink(seg_name(sh->base, c->rank, sh->gen[c->rank]).c_str());
		if (c->mine) munmap(c->mine, sh->cap[c->rank]);
		c->mine = m;
		sh->gen[c->rank] = g;
		sh->cap[c->rank] = cap;
	}
	pthread_mutex_unlock(&sh->mu);
	if (publish && in_bytes) memcpy(c->mine, send, in_bytes);
	// 2. Everyone's input is in place.
	lock(sh);
	sh->sig[c->rank] = s;
	sh->arrived[c->rank] = seq;
	pthread_cond_broadcast(&sh->cv);
	r = wait_all(c, sh->arrived, seq, &why);
	std::vector<uint64_t> gens(sh->gen, sh->gen + c->nranks);
	std::vector<size_t> caps(sh->cap, sh->cap + c->nranks);
	for (int i = 0; r == ncclSuccess && i < c->nranks; i++) {
		const Sig &o = sh->sig[i];
		if (o.kind != s.kind || o.count != s.count || o.dtype != s.dtype || o.op != s.op || o.root != s.root) {
			char buf[400];
			snprintf(buf, sizeof buf,
				 "collective %llu: rank %d called %s(count %zu, datatype %d, op %d, root %d) but rank %d called %s(count %zu, "
				 "datatype %d, op %d, root %d); every rank must make the same calls in the same order",
				 (unsigned long long)seq, c->rank, kind_name(s.kind), s.count, s.dtype, s.op, s.root, i, kind_name(o.kind), o.count,
				 o.dtype, o.op, o.root);
			why = buf;
			r = ncclInvalidUsage;
		}
	}
	pthread_mutex_unlock(&sh->mu);
	// 3. This rank's output from the others' inputs.
	if (r == ncclSuccess) {
		std::vector<const char *> in(c->nranks, nullptr);
		for (int i = 0; i < c->nranks && r == ncclSuccess; i++) {
			if (s.kind == kBroadcast && i != s.root) continue;
			if (i == c->rank) {
				in[i] = c->mine;
				continue;
			}
			auto key = std::make_pair(i, gens[i]);
			auto it = c->peers.find(key);
			if (it == c->peers.end()) {
				char *m = map_segment(seg_name(sh->base, i, gens[i]), caps[i], false);
				if (!m) {
					why = "cannot map rank " + std::to_string(i) + "'s shared-memory segment: " + strerror(errno);
					r = ncclSystemError;
					break;
				}
				it = c->peers.emplace(key, m).first;
			}
			in[i] = it->second;
		}
		if (r == ncclSuccess) {
			size_t es = type_size(s.dtype);
			switch (s.kind) {
			case kAllReduce: reduce(s.dtype, s.op, c->nranks, in, recv, s.count, 0); break;
			case kReduce:
				if (c->rank == s.root) reduce(s.dtype, s.op, c->nranks, in, recv, s.count, 0);
				break;
			case kBroadcast: memcpy(recv, in[s.root], out_bytes); break;
			case kAllGather:
				for (int i = 0; i < c->nranks; i++) memcpy(recv + i * s.count * es, in[i], s.count * es);
				break;
			case kReduceScatter: reduce(s.dtype, s.op, c->nranks, in, recv, s.count, c->rank * s.count); break;
			}
		}
	}
	// 4. Nobody reuses its segment until all have read.
	lock(sh);
	sh->finished[c->rank] = seq;
	pthread_cond_broadcast(&sh->cv);
	std::string why2;
	ncclResult_t r2 = wait_all(c, sh->finished, seq, &why2);
	pthread_mutex_unlock(&sh->mu);
	if (r == ncclSuccess && r2 != ncclSuccess) r = r2, why = why2;
	if (r != ncclSuccess) {
		int none = ncclSuccess;
		c->async_error.compare_exchange_strong(none, int(r));
		fail(c, r, std::string(kind_name(s.kind)) + " on rank " + std::to_string(c->rank) + ": " + why);
	}
}

ncclResult_t check_comm(ncclComm_t c) {
	if (!c) return fail(nullptr, ncclInvalidArgument, "a NULL communicator");
	if (c->local_abort) return fail(c, ncclInvalidUsage, "the communicator was aborted or destroyed");
	return ncclSuccess;
}

ncclResult_t enqueue(ncclComm_t c, Sig s, const void *send, void *recv, size_t in_bytes, size_t out_bytes, bool writes,
		     cudaStream_t stream) {
	if (ncclResult_t r = check_comm(c)) return r;
	if (!type_size(s.dtype)) return fail(c, ncclInvalidArgument, "datatype " + std::to_string(s.dtype) + " is not an ncclDataType_t");
	if (s.op < ncclSum || s.op > ncclAvg) return fail(c, ncclInvalidArgument, "op " + std::to_string(s.op) + " is not an ncclRedOp_t");
	if (s.root < 0 || s.root >= c->nranks) return fail(c, ncclInvalidArgument, "root " + std::to_string(s.root) + " is not a rank");
	if ((in_bytes && !send) || (writes && out_bytes && !recv)) return fail(c, ncclInvalidArgument, "a NULL buffer");
	if (ncclResult_t e = ncclResult_t(c->async_error.load())) return e;
	uint64_t seq = ++c->seq;
	std::vector<cudasim::Operand> ops = {{CUdeviceptr(send), in_bytes, "sendbuff"}, {CUdeviceptr(recv), writes ? out_bytes : 0, "recvbuff"}};
	CUresult cr = cudasim::enqueue_host(c->ctx, reinterpret_cast<CUstream>(stream), kind_name(s.kind), std::move(ops),
					    [c, seq, s, in_bytes, out_bytes](const std::vector<char *> &p) {
						    run_collective(c, seq, s, p[0], p[1], in_bytes, out_bytes);
					    });
	if (cr != CUDA_SUCCESS) return fail(c, ncclUnhandledCudaError, std::string(kind_name(s.kind)) + ": queuing on the stream failed: CUDA error " + std::to_string(cr));
	return ncclSuccess;
}

} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
	if (!version) return ncclInvalidArgument;
	*version = 21803; // 2.18.3: NCCL_VERSION(2, 18, 3) = 2*10000 + 18*100 + 3
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	if (!id) return fail(nullptr, ncclInvalidArgument, "ncclGetUniqueId: NULL id");
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return fail(nullptr, ncclSystemError, "getrandom failed");
	IdBody b{};
	memcpy(b.magic, kMagic, sizeof kMagic);
	snprintf(b.name, sizeof b.name, "/stoke-nccl-%d-%02x%02x%02x%02x%02x%02x%02x%02x", (int)getpid(), rnd[0], rnd[1], rnd[2], rnd[3],
		 rnd[4], rnd[5], rnd[6], rnd[7]);
	memset(id, 0, sizeof *id);
	memcpy(id->internal, &b, sizeof b);
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
	if (!comm) return fail(nullptr, ncclInvalidArgument, "ncclCommInitRank: NULL comm");
	if (nranks < 1 || nranks > kMaxRanks) return fail(nullptr, ncclInvalidArgument, "ncclCommInitRank: nranks " + std::to_string(nranks) + " (the stand-in serves 1 to 64)");
	if (rank < 0 || rank >= nranks) return fail(nullptr, ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
	if (t_group_depth > 0) return fail(nullptr, ncclInvalidUsage, "ncclCommInitRank inside ncclGroupStart/End is not implemented by the stand-in");
	IdBody b;
	memcpy(&b, commId.internal, sizeof b);
	if (memcmp(b.magic, kMagic, sizeof kMagic) != 0 || b.name[0] != '/' || !memchr(b.name, 0, sizeof b.name))
		return fail(nullptr, ncclInvalidArgument, "ncclCommInitRank: the unique id is not one ncclGetUniqueId made (passed by value, 128 bytes)");
	CUcontext ctx = nullptr;
	if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return fail(nullptr, ncclUnhandledCudaError, "ncclCommInitRank: no current CUDA context on this thread");
	int fd = shm_open(b.name, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(Shared)) != 0) return fail(nullptr, ncclSystemError, std::string("ncclCommInitRank: shm_open ") + b.name + ": " + strerror(errno));
	auto *sh = (Shared *)mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (sh == MAP_FAILED) return fail(nullptr, ncclSystemError, std::string("ncclCommInitRank: mmap: ") + strerror(errno));
	int fresh = 0;
	if (sh->state.compare_exchange_strong(fresh, 1)) {
		pthread_mutexattr_t ma;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&sh->mu, &ma);
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
		pthread_cond_init(&sh->cv, &ca);
		sh->nranks = nranks;
		sh->aborted_by = -1;
		snprintf(sh->base, sizeof sh->base, "%s", b.name);
		sh->state = 2;
	}
	while (sh->state.load() != 2) usleep(100);
	lock(sh);
	if (sh->nranks != nranks || sh->pid[rank] != 0) {
		int n = sh->nranks;
		bool taken = sh->pid[rank] != 0;
		pthread_mutex_unlock(&sh->mu);
		return fail(nullptr, ncclInvalidUsage, taken ? "ncclCommInitRank: rank " + std::to_string(rank) + " joined twice"
							     : "ncclCommInitRank: nranks " + std::to_string(nranks) + " here but " + std::to_string(n) + " on another rank");
	}
	sh->pid[rank] = getpid();
	sh->joined++;
	pthread_cond_broadcast(&sh->cv);
	while (sh->joined < nranks) pthread_cond_wait(&sh->cv, &sh->mu);
	if (rank == 0) shm_unlink(b.name); // every rank has it mapped
	pthread_mutex_unlock(&sh->mu);
	auto *c = new ncclComm;
	c->rank = rank;
	c->nranks = nranks;
	c->device = 0;
	c->sh = sh;
	c->ctx = ctx;
	*comm = c;
	return ncclSuccess;
}

// ncclCommDestroy finishes the communicator's queued work (the stand-in
// waits for the device), then frees it.
ncclResult_t ncclCommDestroy(ncclComm_t c) {
	if (!c) return ncclSuccess;
	if (!c->local_abort) {
		CUcontext saved = nullptr;
		cuCtxGetCurrent(&saved);
		cuCtxSetCurrent(c->ctx);
		cuCtxSynchronize();
		cuCtxSetCurrent(saved);
	}
	c->local_abort = true;
	if (c->sh->gen[c->rank]) shm_unlink(seg_name(c->sh->base, c->rank, c->sh->gen[c->rank]).c_str());
	// The struct stays: a stream op that still names it must find it.
	return ncclSuccess;
}

// ncclCommAbort ends the communicator's uncompleted operations, on this rank
// and, through the shared segment, on every other.
ncclResult_t ncclCommAbort(ncclComm_t c) {
	if (!c) return ncclSuccess;
	c->local_abort = true;
	lock(c->sh);
	if (c->sh->aborted_by < 0) c->sh->aborted_by = c->rank;
	pthread_cond_broadcast(&c->sh->cv);
	pthread_mutex_unlock(&c->sh->mu);
	if (c->sh->gen[c->rank]) shm_unlink(seg_name(c->sh->base, c->rank, c->sh->gen[c->rank]).c_str());
	return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) {
	if (!c || !e) return ncclInvalidArgument;
	*e = ncclResult_t(c->async_error.load());
	return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t c, int *n) {
	if (!c || !n) return ncclInvalidArgument;
	*n = c->nranks;
	return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d) {
	if (!c || !d) return ncclInvalidArgument;
	*d = c->device;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) {
	if (!c || !r) return ncclInvalidArgument;
	*r = c->rank;
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

const char *ncclGetLastError(ncclComm_t c) {
	static thread_local std::string s;
	std::lock_guard<std::mutex> lk(g_err_mu);
	s = c ? c->last_error : g_last_error;
	return s.c_str();
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t c, cudaStream_t s) {
	size_t b = count * type_size(dt);
	return enqueue(c, Sig{kAllReduce, dt, op, 0, count}, send, recv, b, b, true, s);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t dt, int root, ncclComm_t c, cudaStream_t s) {
	size_t b = count * type_size(dt);
	bool is_root = c && c->rank == root;
	return enqueue(c, Sig{kBroadcast, dt, ncclSum, root, count}, send, recv, is_root ? b : 0, b, true, s);
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t c,
			cudaStream_t s) {
	size_t b = count * type_size(dt);
	bool is_root = c && c->rank == root;
	return enqueue(c, Sig{kReduce, dt, op, root, count}, send, recv, b, b, is_root, s);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t dt, ncclComm_t c, cudaStream_t s) {
	size_t b = sendcount * type_size(dt);
	return enqueue(c, Sig{kAllGather, dt, ncclSum, 0, sendcount}, send, recv, b, c ? b * c->nranks : 0, true, s);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t c,
			       cudaStream_t s) {
	size_t b = recvcount * type_size(dt);
	return enqueue(c, Sig{kReduceScatter, dt, op, 0, recvcount}, send, recv, c ? b * c->nranks : 0, b, true, s);
}

// Groups: each collective of a group is queued at its call, in order, which
// is a valid schedule for one communicator per thread.
ncclResult_t ncclGroupStart(void) {
	t_group_depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
	if (t_group_depth == 0) return fail(nullptr, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	t_group_depth--;
	return ncclSuccess;
}

} // extern "C"
