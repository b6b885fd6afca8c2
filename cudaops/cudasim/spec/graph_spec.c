// graph_spec.c: stream capture and graph launch as NVIDIA documents them,
// checked by a C program that knows only that documentation: the CUDA driver
// API reference ("Stream Management": cuStreamBeginCapture,
// cuStreamEndCapture, cuStreamIsCapturing, cuStreamGetCaptureInfo,
// cuThreadExchangeStreamCaptureMode; "Graph Management": cuGraphInstantiate,
// cuGraphLaunch, cuGraphExecDestroy, cuGraphDestroy; the CUresult
// descriptions of codes 900-908) and the CUDA C++ Programming Guide's
// "Creating a Graph Using Stream Capture" (fork and join through events,
// "Prohibited and Unhandled Operations", "Invalidation"). Written to pass
// against the real libcuda on a GPU and against the stand-in
// (cudaops/cudasim) alike; the codes for which the documentation says only
// "invalid" (and the stand-in picks one) are checked with --stand-in.
// The work captured is kernels from cudaops/kernels.ptx (add_f32 c = a + b,
// copy_f32 dst = src), read from the working folder (gpu-sim runs from the
// repository root). Prints "PASS graph_spec" and exits 0, or names every
// failed check and exits 1.
//
//   cc -I$CUDA_INCLUDE graph_spec.c -lcuda && ./a.out [--stand-in]
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int stand_in;

#define CHECK(cond, ...)                                                                                                   \
	do {                                                                                                               \
		if (!(cond)) {                                                                                             \
			failures++;                                                                                        \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                        \
			printf(__VA_ARGS__);                                                                               \
			printf("\n");                                                                                      \
		}                                                                                                          \
	} while (0)

#define DRV(call)                                                                                                          \
	do {                                                                                                               \
		CUresult r_ = (call);                                                                                      \
		if (r_ != CUDA_SUCCESS) {                                                                                  \
			printf("FAIL %s:%d: %s = %d\n", __FILE__, __LINE__, #call, (int)r_);                               \
			exit(1);                                                                                           \
		}                                                                                                          \
	} while (0)

// EXPECT checks that call returns want (a documented code).
#define EXPECT(call, want)                                                                                                 \
	do {                                                                                                               \
		CUresult r_ = (call);                                                                                      \
		CHECK(r_ == (want), "%s = %d, want %s (%d)", #call, (int)r_, #want, (int)(want));                          \
	} while (0)

enum { N = 4096 };

static CUcontext ctx;
static CUfunction add_f32, copy_f32;
static CUstream s1, s2, s3, sb; // s1-s3 non-blocking, sb blocking (flags 0)

static void add(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream s, CUresult want) {
	int n = N;
	void *args[] = {&a, &b, &c, &n};
	CUresult r = cuLaunchKernel(add_f32, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL);
	CHECK(r == want, "cuLaunchKernel(add_f32) = %d, want %d", (int)r, (int)want);
}

static void copy(CUdeviceptr src, CUdeviceptr dst, CUstream s) {
	int n = N;
	void *args[] = {&src, &dst, &n};
	DRV(cuLaunchKernel(copy_f32, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static void load_kernels(void) {
	FILE *f = fopen("cudaops/kernels.ptx", "rb");
	if (!f) {
		printf("FAIL graph_spec: cudaops/kernels.ptx not found (run from the repository root)\n");
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *ptx = malloc(n + 1);
	if (fread(ptx, 1, n, f) != (size_t)n) exit(1);
	ptx[n] = 0;
	fclose(f);
	CUmodule m;
	DRV(cuModuleLoadData(&m, ptx));
	DRV(cuModuleGetFunction(&add_f32, m, "add_f32"));
	DRV(cuModuleGetFunction(&copy_f32, m, "copy_f32"));
	free(ptx);
}

// end_invalidated: after an invalid operation, cuStreamEndCapture returns
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and a NULL graph, and the stream is
// out of capture mode and usable again (Invalidation).
static void end_invalidated(CUstream s, const char *after) {
	CUgraph g = (CUgraph)1;
	CUresult r = cuStreamEndCapture(s, &g);
	CHECK(r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "after %s: cuStreamEndCapture = %d, want CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", after, (int)r);
	CHECK(g == NULL, "after %s: the invalidated capture returned a graph", after);
	CUstreamCaptureStatus st = 99;
	DRV(cuStreamIsCapturing(s, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "after %s and cuStreamEndCapture: capture status %d, want NONE", after, (int)st);
	DRV(cuStreamSynchronize(s));
}

// The fork/join graph of the programming guide, on pinned memory: replayed
// three times with new host input, each result what the same work run
// directly gives; nothing runs during the capture; a launch is ordered with
// the other work of its stream.
static void capture_and_replay(void) {
	float *in, *out, *out2;
	DRV(cuMemHostAlloc((void **)&in, N * 4, 0));
	DRV(cuMemHostAlloc((void **)&out, N * 4, 0));
	DRV(cuMemHostAlloc((void **)&out2, N * 4, 0));
	CUdeviceptr a, b, c, d, e, f;
	CUdeviceptr *all[] = {&a, &b, &c, &d, &e, &f};
	for (int k = 0; k < 6; k++) DRV(cuMemAlloc(all[k], N * 4));
	CUevent fork, join;
	DRV(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	DRV(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
	for (int i = 0; i < N; i++) out[i] = -7;
	float one = 1;
	unsigned one_bits;
	memcpy(&one_bits, &one, 4);

	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CUstreamCaptureStatus st;
	cuuint64_t id1 = 0, id2 = 0;
	DRV(cuStreamGetCaptureInfo(s1, &st, &id1));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "s1 capture status %d, want ACTIVE", (int)st);
	DRV(cuStreamIsCapturing(s2, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "s2 is capturing before it joined");
	DRV(cuMemcpyHtoDAsync(a, in, N * 4, s1));
	DRV(cuMemsetD32Async(b, one_bits, N, s1));
	DRV(cuEventRecord(fork, s1));
	DRV(cuStreamWaitEvent(s2, fork, 0)); // s2 joins the capture
	DRV(cuStreamGetCaptureInfo(s2, &st, &id2));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id2 == id1, "s2 after the fork: status %d id %llu, want ACTIVE id %llu", (int)st,
	      (unsigned long long)id2, (unsigned long long)id1);
	add(a, b, c, s1, CUDA_SUCCESS); // c = in + 1
	copy(a, d, s2);                 // d = in
	DRV(cuMemcpyDtoDAsync(e, d, N * 4, s2));
	DRV(cuEventRecord(join, s2));
	DRV(cuStreamWaitEvent(s1, join, 0));
	add(c, e, f, s1, CUDA_SUCCESS); // f = 2 in + 1
	DRV(cuMemcpyDtoHAsync(out, f, N * 4, s1));
	CUgraph g = NULL;
	DRV(cuStreamEndCapture(s1, &g));
	CHECK(g != NULL, "cuStreamEndCapture gave no graph");
	DRV(cuStreamIsCapturing(s2, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "s2 still capturing after the origin's cuStreamEndCapture");
	DRV(cuStreamSynchronize(s1));
	DRV(cuStreamSynchronize(s2));
	int ran = 0;
	for (int i = 0; i < N; i++) ran += out[i] != -7;
	CHECK(ran == 0, "captured work ran during the capture (%d outputs written)", ran);

	CUgraphExec x;
	char log[256];
	DRV(cuGraphInstantiate(&x, g, NULL, log, sizeof log));
	for (int rep = 1; rep <= 3; rep++) {
		for (int i = 0; i < N; i++) in[i] = (float)(rep * (i % 97)) - 40.0f;
		DRV(cuGraphLaunch(x, s1));
		DRV(cuStreamSynchronize(s1));
		int bad = 0;
		for (int i = 0; i < N; i++) bad += out[i] != 2 * in[i] + 1;
		CHECK(bad == 0, "replay %d: %d of %d outputs differ from 2*in+1 (out[1]=%g in[1]=%g)", rep, bad, N, out[1], in[1]);
	}
	// Stream order: a memset queued after the launch runs after the graph;
	// one before it runs before (the graph's copy of in overwrites it).
	DRV(cuMemsetD32Async(a, 0, N, s1));
	DRV(cuGraphLaunch(x, s1));
	DRV(cuMemsetD32Async(f, 0, N, s1));
	DRV(cuMemcpyDtoHAsync(out2, f, N * 4, s1));
	DRV(cuStreamSynchronize(s1));
	int bad = 0, nonzero = 0;
	for (int i = 0; i < N; i++) {
		bad += out[i] != 2 * in[i] + 1;
		nonzero += out2[i] != 0;
	}
	CHECK(bad == 0 && nonzero == 0, "stream order around a launch: %d graph outputs wrong, %d nonzero after the later memset", bad,
	      nonzero);
	// The executable graph is independent of its graph; a launch on another
	// stream is ordered after the previous launch of the same graph.
	DRV(cuGraphDestroy(g));
	for (int i = 0; i < N; i++) in[i] = 3;
	DRV(cuGraphLaunch(x, s1));
	DRV(cuGraphLaunch(x, s2));
	DRV(cuStreamSynchronize(s2));
	DRV(cuStreamSynchronize(s1));
	bad = 0;
	for (int i = 0; i < N; i++) bad += out[i] != 7;
	CHECK(bad == 0, "after cuGraphDestroy of its graph, %d outputs of the executable graph wrong", bad);
	DRV(cuGraphExecDestroy(x));

	// cuGraphInstantiateWithFlags, the same graph once more.
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	add(a, a, c, s1, CUDA_SUCCESS);
	DRV(cuStreamEndCapture(s1, &g));
	DRV(cuGraphInstantiateWithFlags(&x, g, 0));
	DRV(cuGraphLaunch(x, s1));
	DRV(cuStreamSynchronize(s1));
	DRV(cuGraphExecDestroy(x));
	DRV(cuGraphDestroy(g));

	for (int k = 0; k < 6; k++) DRV(cuMemFree(*all[k]));
	DRV(cuMemFreeHost(in));
	DRV(cuMemFreeHost(out));
	DRV(cuMemFreeHost(out2));
	DRV(cuEventDestroy(fork));
	DRV(cuEventDestroy(join));
}

struct other {
	CUstream s;
	CUresult r;
	int op; // 0: cuMemAlloc, 1: cuStreamEndCapture
	CUgraph g;
};

static void *other_thread(void *p) {
	struct other *o = p;
	cuCtxSetCurrent(ctx);
	if (o->op == 0) {
		CUdeviceptr q;
		o->r = cuMemAlloc(&q, 256);
		if (o->r == CUDA_SUCCESS) cuMemFree(q);
	} else {
		o->r = cuStreamEndCapture(o->s, &o->g);
	}
	return NULL;
}

static CUresult on_other_thread(int op, CUstream s, CUgraph *g) {
	struct other o = {s, CUDA_SUCCESS, op, NULL};
	pthread_t t;
	pthread_create(&t, NULL, other_thread, &o);
	pthread_join(t, NULL);
	if (g) *g = o.g;
	return o.r;
}

// The calls the documentation forbids during a capture.
static void refusals(void) {
	CUdeviceptr a, c;
	DRV(cuMemAlloc(&a, N * 4));
	DRV(cuMemAlloc(&c, N * 4));
	CUevent ev, plain;
	DRV(cuEventCreate(&ev, 0));
	DRV(cuEventCreate(&plain, 0));
	CUgraph g;
	float *pageable = calloc(N, 4);

	// Capture may not begin on the legacy stream, nor twice.
	CHECK(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS, "capture began on the NULL stream");
	CHECK(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS, "capture began on CU_STREAM_LEGACY");
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS, "capture began twice on one stream");
	DRV(cuStreamEndCapture(s1, &g));
	DRV(cuGraphDestroy(g));
	CHECK(cuStreamEndCapture(s1, &g) != CUDA_SUCCESS, "cuStreamEndCapture succeeded on a stream not capturing");

	// Synchronizing or querying a capturing stream, the context, a captured
	// event; and a later use of the invalidated capture's stream.
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	add(a, a, c, s1, CUDA_SUCCESS);
	EXPECT(cuStreamSynchronize(s1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CUstreamCaptureStatus st;
	DRV(cuStreamIsCapturing(s1, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "after cuStreamSynchronize in capture: status %d, want INVALIDATED", (int)st);
	add(a, a, c, s1, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	end_invalidated(s1, "cuStreamSynchronize");

	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	EXPECT(cuStreamQuery(s1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	end_invalidated(s1, "cuStreamQuery");

	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	EXPECT(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	end_invalidated(s1, "cuCtxSynchronize");

	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	DRV(cuEventRecord(ev, s1));
	EXPECT(cuEventSynchronize(ev), CUDA_ERROR_CAPTURED_EVENT);
	end_invalidated(s1, "cuEventSynchronize of a captured event");

	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	DRV(cuEventRecord(ev, s1));
	EXPECT(cuEventQuery(ev), CUDA_ERROR_CAPTURED_EVENT);
	end_invalidated(s1, "cuEventQuery of a captured event");

	// Copies from and to pageable memory are not stream ordered.
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuMemcpyHtoDAsync(a, pageable, N * 4, s1) != CUDA_SUCCESS, "captured a copy from pageable memory");
	end_invalidated(s1, "cuMemcpyHtoDAsync from pageable memory");
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuMemcpyDtoHAsync(pageable, a, N * 4, s1) != CUDA_SUCCESS, "captured a copy to pageable memory");
	end_invalidated(s1, "cuMemcpyDtoHAsync to pageable memory");
	if (stand_in) { // "may be synchronous": the stand-in refuses them with 900
		DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
		EXPECT(cuMemcpyHtoDAsync(a, pageable, N * 4, s1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		end_invalidated(s1, "cuMemcpyHtoDAsync from pageable memory");
	}

	// cuMemAlloc is potentially unsafe: refused in this thread during its
	// GLOBAL capture and in another thread (mode GLOBAL, the default) during
	// it; allowed during a RELAXED capture, and in another thread during a
	// THREAD_LOCAL one.
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CUdeviceptr q;
	EXPECT(cuMemAlloc(&q, 256), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	end_invalidated(s1, "cuMemAlloc during a GLOBAL capture");
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	EXPECT(on_other_thread(0, NULL, NULL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	end_invalidated(s1, "cuMemAlloc in another thread during a GLOBAL capture");
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	EXPECT(on_other_thread(0, NULL, NULL), CUDA_SUCCESS);
	EXPECT(cuMemAlloc(&q, 256), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	end_invalidated(s1, "cuMemAlloc during its own THREAD_LOCAL capture");
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
	EXPECT(cuMemAlloc(&q, 256), CUDA_SUCCESS);
	add(a, a, c, s1, CUDA_SUCCESS);
	DRV(cuStreamEndCapture(s1, &g));
	DRV(cuGraphDestroy(g));
	DRV(cuMemFree(q));
	// cuThreadExchangeStreamCaptureMode: RELAXED for this thread lifts it.
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	DRV(cuThreadExchangeStreamCaptureMode(&mode));
	CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "the thread's mode was %d, want GLOBAL (the default)", (int)mode);
	EXPECT(cuMemAlloc(&q, 256), CUDA_SUCCESS);
	DRV(cuThreadExchangeStreamCaptureMode(&mode));
	DRV(cuStreamEndCapture(s1, &g));
	DRV(cuGraphDestroy(g));
	DRV(cuMemFree(q));

	// The legacy stream while a blocking stream captures.
	DRV(cuStreamBeginCapture(sb, CU_STREAM_CAPTURE_MODE_GLOBAL));
	EXPECT(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	add(a, a, c, sb, CUDA_SUCCESS); // the query did not invalidate it
	DRV(cuStreamEndCapture(sb, &g));
	DRV(cuGraphDestroy(g));
	DRV(cuStreamBeginCapture(sb, CU_STREAM_CAPTURE_MODE_GLOBAL));
	add(a, a, c, NULL, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	end_invalidated(sb, "a launch on the legacy stream");
	DRV(cuStreamBeginCapture(sb, CU_STREAM_CAPTURE_MODE_GLOBAL));
	EXPECT(cuMemcpyHtoD(a, pageable, N * 4), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	end_invalidated(sb, "a synchronous cuMemcpyHtoD");
	if (stand_in) { // the stand-in counts a synchronous copy as potentially unsafe
		DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
		EXPECT(cuMemcpyDtoH(pageable, a, N * 4), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		end_invalidated(s1, "a synchronous cuMemcpyDtoH during a GLOBAL capture on a non-blocking stream");
	}

	// Ending: on a stream that only joined, from another thread, with a
	// fork not joined back.
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	DRV(cuEventRecord(ev, s1));
	DRV(cuStreamWaitEvent(s2, ev, 0));
	EXPECT(cuStreamEndCapture(s2, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	end_invalidated(s1, "cuStreamEndCapture on the wrong stream");
	DRV(cuStreamIsCapturing(s2, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "the joined stream still captures after the origin ended");

	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	add(a, a, c, s1, CUDA_SUCCESS);
	EXPECT(on_other_thread(1, s1, &g), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
	DRV(cuStreamEndCapture(s1, &g));
	DRV(cuGraphDestroy(g));
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
	add(a, a, c, s1, CUDA_SUCCESS);
	EXPECT(on_other_thread(1, s1, &g), CUDA_SUCCESS);
	if (g) DRV(cuGraphDestroy(g));

	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	add(a, a, c, s1, CUDA_SUCCESS);
	DRV(cuEventRecord(ev, s1));
	DRV(cuStreamWaitEvent(s2, ev, 0));
	add(c, c, a, s2, CUDA_SUCCESS); // never joined back into s1
	g = (CUgraph)1;
	EXPECT(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
	CHECK(g == NULL, "an unjoined capture returned a graph");
	DRV(cuStreamIsCapturing(s2, &st));
	CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "the unjoined stream still captures");

	// Waits across the capture's boundary.
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	DRV(cuStreamBeginCapture(s3, CU_STREAM_CAPTURE_MODE_GLOBAL));
	DRV(cuEventRecord(ev, s1));
	EXPECT(cuStreamWaitEvent(s3, ev, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
	end_invalidated(s3, "a wait merging two captures");
	end_invalidated(s1, "a wait merging two captures");
	DRV(cuEventRecord(plain, s2)); // recorded outside any capture
	DRV(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CUresult r = cuStreamWaitEvent(s1, plain, 0);
	CHECK(r != CUDA_SUCCESS && (!stand_in || r == CUDA_ERROR_STREAM_CAPTURE_ISOLATION),
	      "a capturing stream waited on an event recorded outside the capture: %d", (int)r);
	end_invalidated(s1, "a wait on a non-captured event");

	DRV(cuStreamSynchronize(s2));
	DRV(cuMemFree(a));
	DRV(cuMemFree(c));
	DRV(cuEventDestroy(ev));
	DRV(cuEventDestroy(plain));
	free(pageable);
}

int main(int argc, char **argv) {
	stand_in = argc > 1 && strcmp(argv[1], "--stand-in") == 0;
	CUdevice dev;
	DRV(cuInit(0));
	DRV(cuDeviceGet(&dev, 0));
	DRV(cuDevicePrimaryCtxRetain(&ctx, dev));
	DRV(cuCtxSetCurrent(ctx));
	load_kernels();
	DRV(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	DRV(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	DRV(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
	DRV(cuStreamCreate(&sb, 0));
	capture_and_replay();
	refusals();
	DRV(cuStreamDestroy(s1));
	DRV(cuStreamDestroy(s2));
	DRV(cuStreamDestroy(s3));
	DRV(cuStreamDestroy(sb));
	if (failures) {
		printf("graph_spec: %d checks failed\n", failures);
		return 1;
	}
	printf("PASS graph_spec\n");
	return 0;
}
