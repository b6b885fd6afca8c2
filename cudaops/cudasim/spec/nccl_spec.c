// nccl_spec.c: NCCL's collectives as its API reference describes them,
// checked by a C program that knows only that reference and the CUDA driver
// API: three processes on one machine (fork; the unique ids are made before
// it, as a launcher would broadcast them), each with its own context and
// stream. Written to pass against the real libnccl on a machine with GPUs
// and against the stand-in (cudaops/cudasim) alike; --stand-in adds what
// only the stand-in promises (a dead peer or another rank's abort seen as
// ncclRemoteError within a second). Prints "PASS nccl_spec" and exits 0, or
// names every failed check and exits 1.
//
//   cc -I$CUDA_INCLUDE -I cudaops/cudasim nccl_spec.c -lnccl -lcuda -lm
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE // usleep
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl_decl.h"

enum { NRANKS = 3, N = 1000 };

static int failures, rank, stand_in;
static CUstream stream;

#define CHECK(cond, ...)                                                                                                   \
	do {                                                                                                               \
		if (!(cond)) {                                                                                             \
			failures++;                                                                                        \
			printf("FAIL rank %d %s:%d: ", rank, __FILE__, __LINE__);                                          \
			printf(__VA_ARGS__);                                                                               \
			printf("\n");                                                                                      \
			fflush(stdout);                                                                                    \
		}                                                                                                          \
	} while (0)
#define DRV(call)                                                                                                          \
	do {                                                                                                               \
		CUresult r_ = (call);                                                                                      \
		if (r_ != CUDA_SUCCESS) {                                                                                  \
			printf("FAIL rank %d %s:%d: %s = %d\n", rank, __FILE__, __LINE__, #call, (int)r_);                 \
			exit(1);                                                                                           \
		}                                                                                                          \
	} while (0)
#define NC(call) CHECK((call) == ncclSuccess, "%s failed", #call)

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static CUdeviceptr dalloc(size_t bytes) {
	CUdeviceptr p;
	DRV(cuMemAlloc(&p, bytes));
	return p;
}

// collectives: each collective's result on every rank, from inputs that
// make every sum, product and extreme exact.
static void collectives(ncclComm_t c) {
	int n = -1, r = -1, v = 0;
	NC(ncclCommCount(c, &n));
	NC(ncclCommUserRank(c, &r));
	CHECK(n == NRANKS && r == rank, "ncclCommCount %d / ncclCommUserRank %d", n, r);
	NC(ncclGetVersion(&v));
	CHECK(v >= 2000, "ncclGetVersion %d", v);
	CHECK(ncclGetErrorString(ncclInvalidArgument) != NULL, "ncclGetErrorString returned NULL");

	static float f[N * NRANKS], g[N * NRANKS];
	CUdeviceptr a = dalloc(sizeof f), b = dalloc(sizeof f);
	// AllReduce sum, out of place, with the copies on the same stream.
	for (int i = 0; i < N; i++) f[i] = (float)((rank + 1) * (i % 17));
	DRV(cuMemcpyHtoDAsync(a, f, N * 4, stream));
	NC(ncclAllReduce((void *)a, (void *)b, N, ncclFloat32, ncclSum, c, (cudaStream_t)stream));
	DRV(cuMemcpyDtoHAsync(g, b, N * 4, stream));
	DRV(cuStreamSynchronize(stream));
	for (int i = 0; i < N; i++) CHECK(g[i] == (float)(6 * (i % 17)), "AllReduce sum [%d] = %g, want %g", i, g[i], 6.0 * (i % 17));
	// In place, max over int32.
	int32_t x[N], y[N];
	for (int i = 0; i < N; i++) x[i] = (i + rank * 7) % 23 - 11;
	DRV(cuMemcpyHtoD(a, x, sizeof x));
	NC(ncclAllReduce((void *)a, (void *)a, N, ncclInt32, ncclMax, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(y, a, sizeof y));
	for (int i = 0; i < N; i++) {
		int want = -1000;
		for (int q = 0; q < NRANKS; q++) want = (i + q * 7) % 23 - 11 > want ? (i + q * 7) % 23 - 11 : want;
		CHECK(y[i] == want, "AllReduce max in place [%d] = %d, want %d", i, y[i], want);
	}
	// Product over float64, average over float32.
	double d = rank + 2.0, dp;
	DRV(cuMemcpyHtoD(a, &d, 8));
	NC(ncclAllReduce((void *)a, (void *)b, 1, ncclFloat64, ncclProd, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(&dp, b, 8));
	CHECK(dp == 24.0, "AllReduce prod float64 = %g, want 24", dp);
	float av = (float)(3 * rank), ag;
	DRV(cuMemcpyHtoD(a, &av, 4));
	NC(ncclAllReduce((void *)a, (void *)b, 1, ncclFloat32, ncclAvg, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(&ag, b, 4));
	CHECK(ag == 3.0f, "AllReduce avg = %g, want 3", ag);
	// Broadcast from rank 1.
	for (int i = 0; i < N; i++) f[i] = rank == 1 ? (float)i : -1.0f;
	DRV(cuMemcpyHtoD(a, f, N * 4));
	NC(ncclBroadcast((void *)a, (void *)b, N, ncclFloat32, 1, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(g, b, N * 4));
	for (int i = 0; i < N; i++) CHECK(g[i] == (float)i, "Broadcast [%d] = %g, want %d", i, g[i], i);
	// Reduce to rank 2: only the root's recvbuff is written.
	for (int i = 0; i < N; i++) f[i] = (float)(rank + i), g[i] = 12345.0f;
	DRV(cuMemcpyHtoD(a, f, N * 4));
	DRV(cuMemcpyHtoD(b, g, N * 4));
	NC(ncclReduce((void *)a, (void *)b, N, ncclFloat32, ncclSum, 2, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(g, b, N * 4));
	for (int i = 0; i < N; i++) {
		float want = rank == 2 ? (float)(3 + 3 * i) : 12345.0f;
		CHECK(g[i] == want, "Reduce to rank 2 [%d] = %g, want %g", i, g[i], want);
	}
	// AllGather: rank r's N values land at r*N.
	for (int i = 0; i < N; i++) f[i] = (float)(rank * 10000 + i);
	DRV(cuMemcpyHtoD(a, f, N * 4));
	NC(ncclAllGather((void *)a, (void *)b, N, ncclFloat32, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(g, b, sizeof g));
	for (int i = 0; i < N * NRANKS; i++) CHECK(g[i] == (float)((i / N) * 10000 + i % N), "AllGather [%d] = %g", i, g[i]);
	// ReduceScatter: rank r gets the sum of block r.
	for (int i = 0; i < N * NRANKS; i++) f[i] = (float)(i + rank);
	DRV(cuMemcpyHtoD(a, f, sizeof f));
	NC(ncclReduceScatter((void *)a, (void *)b, N, ncclFloat32, ncclSum, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(g, b, N * 4));
	for (int i = 0; i < N; i++) CHECK(g[i] == (float)(3 * (rank * N + i) + 3), "ReduceScatter [%d] = %g", i, g[i]);
	// bf16 sum (small integers are exact in bf16).
	uint16_t h[8], hs[8];
	for (int i = 0; i < 8; i++) {
		float v = (float)(i + rank);
		uint32_t u;
		memcpy(&u, &v, 4);
		h[i] = (uint16_t)(u >> 16);
	}
	DRV(cuMemcpyHtoD(a, h, sizeof h));
	NC(ncclAllReduce((void *)a, (void *)b, 8, ncclBfloat16, ncclSum, c, (cudaStream_t)stream));
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(hs, b, sizeof hs));
	for (int i = 0; i < 8; i++) {
		uint32_t u = (uint32_t)hs[i] << 16;
		float v;
		memcpy(&v, &u, 4);
		CHECK(v == (float)(3 * i + 3), "AllReduce bf16 [%d] = %g, want %d", i, v, 3 * i + 3);
	}
	// Argument errors, returned at the call.
	CHECK(ncclAllReduce((void *)a, (void *)b, 1, (ncclDataType_t)99, ncclSum, c, (cudaStream_t)stream) == ncclInvalidArgument,
	      "a datatype that is not one: want ncclInvalidArgument");
	CHECK(ncclBroadcast((void *)a, (void *)b, 1, ncclFloat32, NRANKS, c, (cudaStream_t)stream) == ncclInvalidArgument,
	      "root out of range: want ncclInvalidArgument");
	cuMemFree(a), cuMemFree(b);
}

// wait_or_abort: a watchdog as NCCL's documentation recommends: poll the
// stream and the communicator's asynchronous error; past the deadline, or
// on an error, abort the communicator, after which the stream must finish.
static ncclResult_t wait_or_abort(ncclComm_t c, double deadline_s, double *seen_after) {
	double t0 = now();
	ncclResult_t e = ncclSuccess;
	*seen_after = -1;
	while (cuStreamQuery(stream) == CUDA_ERROR_NOT_READY) {
		ncclCommGetAsyncError(c, &e);
		if (e != ncclSuccess && *seen_after < 0) *seen_after = now() - t0;
		if (e != ncclSuccess || now() - t0 > deadline_s) break;
		usleep(10000);
	}
	ncclCommGetAsyncError(c, &e);
	if (e != ncclSuccess && *seen_after < 0) *seen_after = now() - t0;
	ncclCommAbort(c);
	double t1 = now();
	CUresult r = cuStreamSynchronize(stream);
	CHECK(now() - t1 < 5, "the stream still waited %.1f s after ncclCommAbort", now() - t1);
	(void)r;
	return e;
}

static int child(ncclUniqueId ids[3]) {
	CUdevice dev;
	CUcontext ctx;
	DRV(cuInit(0));
	DRV(cuDeviceGet(&dev, 0));
	DRV(cuDevicePrimaryCtxRetain(&ctx, dev));
	DRV(cuCtxSetCurrent(ctx));
	DRV(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	ncclComm_t c;
	CHECK(ncclCommInitRank(&c, NRANKS, ids[0], rank) == ncclSuccess, "ncclCommInitRank");
	collectives(c);
	NC(ncclCommDestroy(c));

	// A rank that dies: rank 2 exits after joining; the others' AllReduce
	// must end through their watchdog's abort.
	CUdeviceptr a = dalloc(4096);
	CHECK(ncclCommInitRank(&c, NRANKS, ids[1], rank) == ncclSuccess, "ncclCommInitRank (second)");
	if (rank == 2) _exit(failures ? 1 : 0);
	NC(ncclAllReduce((void *)a, (void *)a, 1024, ncclFloat32, ncclSum, c, (cudaStream_t)stream));
	double seen;
	ncclResult_t e = wait_or_abort(c, 3.0, &seen);
	if (stand_in)
		CHECK(e == ncclRemoteError && seen >= 0 && seen < 1.0, "stand-in: a dead rank 2: async error %d after %.2f s, want ncclRemoteError (6) within 1 s",
		      e, seen);

	// An abort on rank 0 ends the others' waits (stand-in), or their
	// watchdogs do (any NCCL).
	CHECK(ncclCommInitRank(&c, NRANKS - 1, ids[2], rank) == ncclSuccess, "ncclCommInitRank (third)");
	if (rank == 0) {
		usleep(200000);
		ncclCommAbort(c);
		sleep(2); // alive: the others must see the abort itself, not an exit
	} else {
		NC(ncclAllReduce((void *)a, (void *)a, 1024, ncclFloat32, ncclSum, c, (cudaStream_t)stream));
		e = wait_or_abort(c, 3.0, &seen);
		if (stand_in)
			CHECK(e == ncclRemoteError && seen >= 0 && seen < 1.5, "stand-in: rank 0 aborted: async error %d after %.2f s, want ncclRemoteError within 1.5 s", e,
			      seen);
	}
	cuMemFree(a);
	return failures ? 1 : 0;
}

int main(int argc, char **argv) {
	stand_in = argc > 1 && strcmp(argv[1], "--stand-in") == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ncclUniqueId ids[3];
	for (int i = 0; i < 3; i++)
		if (ncclGetUniqueId(&ids[i]) != ncclSuccess) {
			printf("FAIL ncclGetUniqueId\n");
			return 1;
		}
	pid_t pids[NRANKS];
	for (int r = 0; r < NRANKS; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			rank = r;
			_exit(child(ids));
		}
	}
	int bad = 0;
	for (int r = 0; r < NRANKS; r++) {
		int st;
		waitpid(pids[r], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("FAIL rank %d: %s %d\n", r, WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			bad = 1;
		}
	}
	if (bad) {
		printf("FAIL nccl_spec\n");
		return 1;
	}
	printf("PASS nccl_spec\n");
	return 0;
}
