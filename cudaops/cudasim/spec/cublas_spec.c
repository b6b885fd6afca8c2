// cublas_spec.c: cuBLAS as its documentation describes it, checked by a C
// program that knows only that documentation (the cuBLAS library user guide,
// the CUDA driver API reference) and the headers. Written to pass against
// the real libcublas on a GPU and against the stand-in (cudaops/cudasim) on
// a CPU alike; the checks that only the stand-in can make (its out-of-bounds
// reports, that it takes the reduced precision the library is merely
// allowed) run with --stand-in. Prints "PASS cublas_spec" and exits 0, or
// names every failed check and exits 1.
//
//   cc -I$CUDA_INCLUDE cublas_spec.c -lcublas -lcuda -lm && ./a.out [--stand-in]
#include <cublas_v2.h>
#include <cuda.h>
#include <math.h>
#include <stdint.h>
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

static CUstream stream;

// dev copies n floats to new device memory.
static CUdeviceptr dev(const void *h, size_t bytes) {
	CUdeviceptr p;
	DRV(cuMemAlloc(&p, bytes));
	DRV(cuMemcpyHtoD(p, h, bytes));
	return p;
}

static void get(void *h, CUdeviceptr p, size_t bytes) {
	DRV(cuStreamSynchronize(stream));
	DRV(cuMemcpyDtoH(h, p, bytes));
}

static float frand(unsigned *s) {
	*s = *s * 1103515245u + 12345u;
	return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

// ref: C = alpha op(A) op(B) + beta C in double, column-major, as the
// documentation defines it (op = N or T).
static void ref(int ta, int tb, int m, int n, int k, double alpha, const float *A, int lda, const float *B, int ldb,
		double beta, double *C, int ldc) {
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int l = 0; l < k; l++) {
				double a = ta ? A[l + (size_t)i * lda] : A[i + (size_t)l * lda];
				double b = tb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb];
				s += a * b;
			}
			C[i + (size_t)j * ldc] = alpha * s + (beta != 0 ? beta * C[i + (size_t)j * ldc] : 0);
		}
}

// sgemm_case: every op pair, leading dimensions past the rows, the padding
// rows of C left as they were.
static void sgemm_case(cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha, float beta) {
	int ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
	int lda = ra + 3, ldb = rb + 1, ldc = m + 2;
	size_t na = (size_t)lda * ca, nb = (size_t)ldb * cb, nc = (size_t)ldc * n;
	float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4), *out = malloc(nc * 4);
	double *want = malloc(nc * 8);
	unsigned s = 7u + m * 31u + n * 7u + k;
	for (size_t i = 0; i < na; i++) A[i] = frand(&s);
	for (size_t i = 0; i < nb; i++) B[i] = frand(&s);
	for (size_t i = 0; i < nc; i++) C[i] = frand(&s), want[i] = C[i];
	for (int j = 0; j < n; j++) // the padding rows hold a sentinel
		for (int i = m; i < ldc; i++) C[i + (size_t)j * ldc] = 12345.0f;
	ref(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, want, ldc);
	CUdeviceptr dA = dev(A, na * 4), dB = dev(B, nb * 4), dC = dev(C, nc * 4);
	cublasStatus_t st = cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha,
					(const float *)dA, lda, (const float *)dB, ldb, &beta, (float *)dC, ldc);
	CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasSgemm %c%c %dx%dx%d: status %d", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, st);
	get(out, dC, nc * 4);
	double worst = 0;
	int pad_ok = 1;
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			double e = fabs(out[i + (size_t)j * ldc] - want[i + (size_t)j * ldc]);
			if (e > worst) worst = e;
		}
		for (int i = m; i < ldc; i++) pad_ok &= out[i + (size_t)j * ldc] == 12345.0f;
	}
	// fp32 accumulation of k products of magnitude <= 1: a bound of k ulps of k.
	double bound = 4 * (k + 2) * 1.2e-7 * (k + 1);
	CHECK(worst <= bound, "cublasSgemm %c%c %dx%dx%d alpha %g beta %g: worst error %g > %g", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n,
	      k, alpha, beta, worst, bound);
	CHECK(pad_ok, "cublasSgemm %c%c %dx%dx%d: a padding row of C (past m, below ldc) was written", ta ? 'T' : 'N', tb ? 'T' : 'N',
	      m, n, k);
	cuMemFree(dA), cuMemFree(dB), cuMemFree(dC);
	free(A), free(B), free(C), free(out), free(want);
}

static void argument_errors(cublasHandle_t h) {
	float one = 1, zero = 0;
	CUdeviceptr d;
	DRV(cuMemAlloc(&d, 4096));
	const float *p = (const float *)d;
	float *q = (float *)d;
	struct {
		const char *what;
		cublasStatus_t got;
	} cases[] = {
		{"m < 0", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 2, &one, p, 2, p, 2, &zero, q, 2)},
		{"n < 0", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, -1, 2, &one, p, 2, p, 2, &zero, q, 2)},
		{"k < 0", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, -1, &one, p, 2, p, 2, &zero, q, 2)},
		{"transa not an op", cublasSgemm(h, (cublasOperation_t)42, CUBLAS_OP_N, 2, 2, 2, &one, p, 2, p, 2, &zero, q, 2)},
		{"lda < m (op N)", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, p, 3, p, 3, &zero, q, 4)},
		{"lda < k (op T)", cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 2, 3, &one, p, 2, p, 3, &zero, q, 4)},
		{"ldb < k (op N)", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, p, 4, p, 2, &zero, q, 4)},
		{"ldb < n (op T)", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 4, 5, 3, &one, p, 4, p, 4, &zero, q, 4)},
		{"ldc < m", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, p, 4, p, 3, &zero, q, 3)},
		{"lda 0 with m 0", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 2, &one, p, 0, p, 2, &zero, q, 1)},
		{"batchCount < 0",
		 cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, 2, 4, p, 2, 4, &zero, q, 2, 4, -1)},
		{"GemmEx k < 0", cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, -1, &one, p, CUDA_R_32F, 2, p, CUDA_R_32F, 2, &zero, q,
					      CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK(cases[i].got == CUBLAS_STATUS_INVALID_VALUE, "%s: status %d (%s), want CUBLAS_STATUS_INVALID_VALUE", cases[i].what,
		      cases[i].got, cublasGetStatusName(cases[i].got));
	// FAST_TF32 is for 32-bit inputs: bf16 operands under it are not a row of the table.
	cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, CUDA_R_16BF, 2, p, CUDA_R_16BF, 2, &zero, q,
					 CUDA_R_32F, 2, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
	CHECK(st == CUBLAS_STATUS_NOT_SUPPORTED, "GemmEx bf16 inputs with CUBLAS_COMPUTE_32F_FAST_TF32: status %d, want NOT_SUPPORTED", st);
	st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, CUDA_R_32F, 2, p, CUDA_R_16BF, 2, &zero, q, CUDA_R_32F, 2,
			  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	CHECK(st == CUBLAS_STATUS_NOT_SUPPORTED, "GemmEx with Atype 32F and Btype 16BF: status %d, want NOT_SUPPORTED", st);
	CHECK(cublasSetMathMode(h, (cublasMath_t)7) == CUBLAS_STATUS_INVALID_VALUE, "cublasSetMathMode(7) accepted");
	CHECK(cublasSetPointerMode(h, (cublasPointerMode_t)5) == CUBLAS_STATUS_INVALID_VALUE, "cublasSetPointerMode(5) accepted");
	CHECK(cublasSgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, 2, p, 2, &zero, q, 2) == CUBLAS_STATUS_NOT_INITIALIZED,
	      "cublasSgemm on a NULL handle: want CUBLAS_STATUS_NOT_INITIALIZED");
	cuMemFree(d);
}

// beta_zero: when beta is 0, C need not be a valid input (a NaN there is not read).
static void beta_zero(cublasHandle_t h) {
	float A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 0, 1}, C[4], out[4];
	for (int i = 0; i < 4; i++) C[i] = NAN;
	CUdeviceptr dA = dev(A, 16), dB = dev(B, 16), dC = dev(C, 16);
	float one = 1, zero = 0;
	CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, (float *)dA, 2, (float *)dB, 2, &zero, (float *)dC, 2) == 0,
	      "beta 0 sgemm failed");
	get(out, dC, 16);
	for (int i = 0; i < 4; i++) CHECK(out[i] == A[i], "beta 0 with NaN in C: C[%d] = %g, want %g", i, out[i], A[i]);
	// k == 0: C = beta C.
	float C2[4] = {1, 2, 3, 4}, half = 0.5f;
	DRV(cuMemcpyHtoD(dC, C2, 16));
	CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 0, &one, (float *)dA, 2, (float *)dB, 2, &half, (float *)dC, 2) == 0,
	      "k 0 sgemm failed");
	get(out, dC, 16);
	for (int i = 0; i < 4; i++) CHECK(out[i] == 0.5f * C2[i], "k 0: C[%d] = %g, want %g", i, out[i], 0.5f * C2[i]);
	cuMemFree(dA), cuMemFree(dB), cuMemFree(dC);
}

static uint16_t bf16(float f) { // exact for the small integers used here
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

// gemm_ex: bf16 inputs with fp32 accumulation and output, and the TF32
// compute type within TF32's bound.
static void gemm_ex(cublasHandle_t h) {
	enum { M = 3, N = 2, K = 4 };
	float A[M * K], B[K * N], want[M * N], out[M * N];
	uint16_t Ab[M * K], Bb[K * N];
	for (int i = 0; i < M * K; i++) A[i] = (float)(i % 5 - 2), Ab[i] = bf16(A[i]);
	for (int i = 0; i < K * N; i++) B[i] = (float)(i % 3 + 1), Bb[i] = bf16(B[i]);
	double w[M * N];
	ref(0, 0, M, N, K, 1, A, M, B, K, 0, w, M);
	for (int i = 0; i < M * N; i++) want[i] = (float)w[i];
	CUdeviceptr dA = dev(Ab, sizeof Ab), dB = dev(Bb, sizeof Bb), dC;
	DRV(cuMemAlloc(&dC, sizeof out));
	float one = 1, zero = 0;
	cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, (void *)dA, CUDA_R_16BF, M, (void *)dB, CUDA_R_16BF,
					 K, &zero, (void *)dC, CUDA_R_32F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	CHECK(st == CUBLAS_STATUS_SUCCESS, "GemmEx bf16 x bf16 -> fp32: status %d", st);
	get(out, dC, sizeof out);
	for (int i = 0; i < M * N; i++) CHECK(out[i] == want[i], "GemmEx bf16: C[%d] = %g, want %g", i, out[i], want[i]);
	cuMemFree(dA), cuMemFree(dB), cuMemFree(dC);

	// TF32: A = 1 + 2^-20 (not a TF32 value), B = 1: the result is within
	// TF32's rounding of the exact 1 + 2^-20; the stand-in rounds, to 1.
	float a = 1.0f + 0x1p-20f, b = 1.0f, c;
	dA = dev(&a, 4), dB = dev(&b, 4);
	DRV(cuMemAlloc(&dC, 4));
	st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (void *)dA, CUDA_R_32F, 1, (void *)dB, CUDA_R_32F, 1, &zero,
			  (void *)dC, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
	CHECK(st == CUBLAS_STATUS_SUCCESS, "GemmEx CUBLAS_COMPUTE_32F_FAST_TF32: status %d", st);
	get(&c, dC, 4);
	CHECK(fabsf(c - a) <= 0x1p-10f, "GemmEx TF32: %.9g, want within 2^-10 of %.9g", c, a);
	if (stand_in) CHECK(c == 1.0f, "stand-in: GemmEx TF32 gave %.9g, want the TF32 rounding 1", c);
	// CUBLAS_COMPUTE_32F_PEDANTIC keeps fp32.
	st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (void *)dA, CUDA_R_32F, 1, (void *)dB, CUDA_R_32F, 1, &zero,
			  (void *)dC, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
	get(&c, dC, 4);
	CHECK(st == 0 && c == a, "GemmEx CUBLAS_COMPUTE_32F_PEDANTIC: status %d, %.9g, want %.9g", st, c, a);
	// TF32 math mode on the handle applies to cublasSgemm; the default math does not.
	CHECK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == 0, "cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH) failed");
	cublasMath_t mode;
	CHECK(cublasGetMathMode(h, &mode) == 0 && mode == CUBLAS_TF32_TENSOR_OP_MATH, "cublasGetMathMode: %d", (int)mode);
	st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (float *)dA, 1, (float *)dB, 1, &zero, (float *)dC, 1);
	get(&c, dC, 4);
	CHECK(st == 0 && fabsf(c - a) <= 0x1p-10f, "Sgemm under TF32 math: status %d, %.9g", st, c);
	if (stand_in) CHECK(c == 1.0f, "stand-in: Sgemm under CUBLAS_TF32_TENSOR_OP_MATH gave %.9g, want 1", c);
	CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH) == 0, "cublasSetMathMode(CUBLAS_DEFAULT_MATH) failed");
	st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, (float *)dA, 1, (float *)dB, 1, &zero, (float *)dC, 1);
	get(&c, dC, 4);
	CHECK(st == 0 && c == a, "Sgemm under CUBLAS_DEFAULT_MATH: status %d, %.9g, want fp32's %.9g", st, c, a);
	cuMemFree(dA), cuMemFree(dB), cuMemFree(dC);
}

// strided: three products, A's stride 0 (one A for all), B and C packed.
static void strided(cublasHandle_t h) {
	enum { M = 2, N = 3, K = 2, BATCH = 3 };
	float A[M * K] = {1, 2, 3, 4}, B[BATCH * K * N], C[BATCH * M * N], out[BATCH * M * N];
	for (int i = 0; i < BATCH * K * N; i++) B[i] = (float)(i + 1);
	CUdeviceptr dA = dev(A, sizeof A), dB = dev(B, sizeof B), dC;
	DRV(cuMemAlloc(&dC, sizeof C));
	float one = 1, zero = 0;
	cublasStatus_t st = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, (float *)dA, M, 0, (float *)dB, K,
						      K * N, &zero, (float *)dC, M, M * N, BATCH);
	CHECK(st == 0, "cublasSgemmStridedBatched: status %d", st);
	get(out, dC, sizeof out);
	for (int b = 0; b < BATCH; b++) {
		double w[M * N];
		ref(0, 0, M, N, K, 1, A, M, B + b * K * N, K, 0, w, M);
		for (int i = 0; i < M * N; i++)
			CHECK(out[b * M * N + i] == (float)w[i], "strided batch %d C[%d] = %g, want %g", b, i, out[b * M * N + i], w[i]);
	}
	// The same through cublasGemmStridedBatchedEx, fp32.
	float zeros[BATCH * M * N] = {0};
	DRV(cuMemcpyHtoD(dC, zeros, sizeof zeros));
	st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, (void *)dA, CUDA_R_32F, M, 0, (void *)dB,
					CUDA_R_32F, K, K * N, &zero, (void *)dC, CUDA_R_32F, M, M * N, BATCH, CUBLAS_COMPUTE_32F,
					CUBLAS_GEMM_DEFAULT);
	float out2[BATCH * M * N];
	get(out2, dC, sizeof out2);
	CHECK(st == 0 && memcmp(out, out2, sizeof out) == 0, "cublasGemmStridedBatchedEx: status %d, or results differ from Sgemm's",
	      st);
	cuMemFree(dA), cuMemFree(dB), cuMemFree(dC);
}

// stream_order: a copy in, the GEMM and a copy out on one stream, then one
// synchronize; and device-pointer scalars read when the work runs.
static void stream_order(cublasHandle_t h) {
	enum { M = 16, N = 16, K = 16 };
	float *A, *B, *C; // pinned, so the async copies are truly async
	DRV(cuMemAllocHost((void **)&A, M * K * 4));
	DRV(cuMemAllocHost((void **)&B, K * N * 4));
	DRV(cuMemAllocHost((void **)&C, M * N * 4));
	unsigned s = 99;
	for (int i = 0; i < M * K; i++) A[i] = frand(&s);
	for (int i = 0; i < K * N; i++) B[i] = frand(&s);
	CUdeviceptr dA, dB, dC, dS;
	DRV(cuMemAlloc(&dA, M * K * 4));
	DRV(cuMemAlloc(&dB, K * N * 4));
	DRV(cuMemAlloc(&dC, M * N * 4));
	DRV(cuMemAlloc(&dS, 8));
	float scalars[2] = {2.0f, 0.0f};
	CHECK(cublasSetStream(h, (cudaStream_t)stream) == 0, "cublasSetStream failed");
	cudaStream_t got;
	CHECK(cublasGetStream(h, &got) == 0 && got == (cudaStream_t)stream, "cublasGetStream does not return the stream set");
	CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE) == 0, "cublasSetPointerMode(DEVICE) failed");
	DRV(cuMemcpyHtoDAsync(dA, A, M * K * 4, stream));
	DRV(cuMemcpyHtoDAsync(dB, B, K * N * 4, stream));
	DRV(cuMemcpyHtoDAsync(dS, scalars, 8, stream));
	cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, (float *)dS, (float *)dA, M, (float *)dB, K,
					(float *)dS + 1, (float *)dC, M);
	CHECK(st == 0, "cublasSgemm on a stream, device scalars: status %d", st);
	DRV(cuMemcpyDtoHAsync(C, dC, M * N * 4, stream));
	DRV(cuStreamSynchronize(stream));
	double w[M * N];
	ref(0, 0, M, N, K, 2, A, M, B, K, 0, w, M);
	double worst = 0;
	for (int i = 0; i < M * N; i++) worst = fmax(worst, fabs(C[i] - w[i]));
	CHECK(worst < 1e-4, "stream-ordered sgemm with device scalars: worst error %g", worst);
	CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST) == 0, "cublasSetPointerMode(HOST) failed");
	cuMemFree(dA), cuMemFree(dB), cuMemFree(dC), cuMemFree(dS);
	cuMemFreeHost(A), cuMemFreeHost(B), cuMemFreeHost(C);
}

// out_of_bounds (stand-in only): lda and the sizes are valid, but B's buffer
// is one column short; real hardware may or may not fault.
static void out_of_bounds(cublasHandle_t h, CUcontext ctx) {
	(void)ctx;
	CUdeviceptr dA, dB, dC;
	DRV(cuMemAlloc(&dA, 4 * 4 * 4));
	DRV(cuMemAlloc(&dB, 4 * 3 * 4));
	DRV(cuMemAlloc(&dC, 4 * 4 * 4));
	float one = 1, zero = 0;
	cublasStatus_t st =
		cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, (float *)dA, 4, (float *)dB, 4, &zero, (float *)dC, 4);
	CHECK(st == 0, "the call itself succeeds (the fault is the device's): status %d", st);
	CUresult r = cuStreamSynchronize(stream);
	CHECK(r == CUDA_ERROR_ILLEGAL_ADDRESS, "stand-in: reading past B's allocation: cuStreamSynchronize = %d, want "
					       "CUDA_ERROR_ILLEGAL_ADDRESS",
	      (int)r);
}

int main(int argc, char **argv) {
	stand_in = argc > 1 && strcmp(argv[1], "--stand-in") == 0;
	CUdevice d;
	CUcontext ctx;
	DRV(cuInit(0));
	DRV(cuDeviceGet(&d, 0));
	DRV(cuDevicePrimaryCtxRetain(&ctx, d));
	DRV(cuCtxSetCurrent(ctx));
	DRV(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

	cublasHandle_t h;
	CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
	int v = 0, major = -1;
	CHECK(cublasGetVersion(h, &v) == 0 && v > 0, "cublasGetVersion: %d", v);
	CHECK(cublasGetProperty(MAJOR_VERSION, &major) == 0 && major == v / 10000, "cublasGetProperty(MAJOR_VERSION) %d, version %d",
	      major, v);
	cublasPointerMode_t pm;
	CHECK(cublasGetPointerMode(h, &pm) == 0 && pm == CUBLAS_POINTER_MODE_HOST, "the default pointer mode is not HOST");
	cublasMath_t mm;
	CHECK(cublasGetMathMode(h, &mm) == 0 && mm == CUBLAS_DEFAULT_MATH, "the default math mode is %d", (int)mm);

	int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {64, 1, 130}, {1, 64, 5}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++) sgemm_case(h, ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], 1.5f, -0.5f);
	sgemm_case(h, 0, 0, 5, 4, 3, 1.0f, 0.0f);
	argument_errors(h);
	beta_zero(h);
	gemm_ex(h);
	strided(h);
	stream_order(h);
	if (stand_in) {
		CHECK(cublasSetStream(h, (cudaStream_t)stream) == 0, "cublasSetStream failed");
		out_of_bounds(h, ctx);
	}
	if (failures) {
		printf("FAIL cublas_spec: %d checks failed\n", failures);
		return 1;
	}
	// Exit with the handle and the stream alive: nothing in either API asks a
	// program to destroy them first, and it must still exit.
	printf("PASS cublas_spec\n");
	return 0;
}
