//go:build stokecuda

// cublas.c loads cuBLAS at run time, as driver.c loads the driver: a
// stokecuda binary starts without it, and the GEMMs fall back to our own
// kernel when no library is found (cuda.gemm auto) or say where they looked
// (cuda.gemm cublas). The function pointers take their types from NVIDIA's
// cublas_v2.h, so a signature we got wrong does not compile. See docs/cuda.md.
#define _GNU_SOURCE // dladdr
#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cublas.h"

#define FN(name) static __typeof__(name) *p_##name
FN(cublasCreate_v2);
FN(cublasDestroy_v2);
FN(cublasGetProperty);
FN(cublasSetStream_v2);
FN(cublasSetMathMode);
FN(cublasSetPointerMode_v2);
FN(cublasGemmEx);
FN(cublasGemmStridedBatchedEx);
FN(cublasSetWorkspace_v2); // optional: cuBLAS 11.0 and 11.1 lack it

static void *lib;

// stoke_cublas_load dlopens path (a file name or a bare soname) and finds
// the functions stoke calls. 0 on success; else err says what is missing.
// Once one library is in use, loading it again (by another name or path)
// succeeds, and a different one is refused after the same checks: the
// function pointers are the process's.
int stoke_cublas_load(const char *path, int want_major, int *major, char *err, int n) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, n, "%s", dlerror());
		return 1;
	}
	__typeof__(cublasGetProperty) *getProperty;
#define SYM(name)                                                                                                          \
	do {                                                                                                               \
		if (!dlsym(h, #name)) {                                                                                    \
			snprintf(err, n, "%s has no %s: not a cuBLAS 11 or newer", path, #name);                           \
			dlclose(h);                                                                                        \
			return 2;                                                                                          \
		}                                                                                                          \
	} while (0)
	SYM(cublasCreate_v2);
	SYM(cublasDestroy_v2);
	SYM(cublasGetProperty);
	SYM(cublasSetStream_v2);
	SYM(cublasSetMathMode);
	SYM(cublasSetPointerMode_v2);
	SYM(cublasGemmEx);
	SYM(cublasGemmStridedBatchedEx);
	*(void **)&getProperty = dlsym(h, "cublasGetProperty");
	if (getProperty(MAJOR_VERSION, major) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, n, "%s: cublasGetProperty(MAJOR_VERSION) failed", path);
		dlclose(h);
		return 3;
	}
	if (want_major > 0 && *major != want_major) {
		snprintf(err, n, "%s reports cuBLAS major version %d, but its name says %d", path, *major, want_major);
		dlclose(h);
		return 4;
	}
	if (lib) {
		if (h != lib) {
			snprintf(err, n, "%s: another cuBLAS is already loaded in this process", path);
			dlclose(h);
			return 5;
		}
		dlclose(h); // the same library: drop the extra reference
		return 0;
	}
#define SET(name) *(void **)&p_##name = dlsym(h, #name)
	SET(cublasCreate_v2);
	SET(cublasDestroy_v2);
	SET(cublasGetProperty);
	SET(cublasSetStream_v2);
	SET(cublasSetMathMode);
	SET(cublasSetPointerMode_v2);
	SET(cublasGemmEx);
	SET(cublasGemmStridedBatchedEx);
	SET(cublasSetWorkspace_v2);
	lib = h;
	return 0;
}

// stoke_cublas_create makes a handle whose work goes on stream, with alpha
// and beta read from the host and, when workspace is not 0 and the library
// has cublasSetWorkspace, that workspace (bytes, 256-byte aligned) in place
// of the one cuBLAS would allocate for itself.
int stoke_cublas_create(void **handle, void *stream, unsigned long long workspace, unsigned long long bytes) {
	cublasHandle_t h;
	int st = p_cublasCreate_v2(&h);
	if (st) return st;
	if ((st = p_cublasSetStream_v2(h, (cudaStream_t)stream)) || (st = p_cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST)) ||
	    (workspace && p_cublasSetWorkspace_v2 && (st = p_cublasSetWorkspace_v2(h, (void *)workspace, (size_t)bytes)))) {
		p_cublasDestroy_v2(h);
		return st;
	}
	*handle = h;
	return 0;
}

int stoke_cublas_destroy(void *handle) { return p_cublasDestroy_v2((cublasHandle_t)handle); }

// stoke_cublas_gemm: C = alpha op(A) op(B) + beta C on row-major float32
// matrices (A is MxK after op, B KxN, C MxN), through cuBLAS's column-major
// GEMM on the transposes: C^T = op(B)^T op(A)^T. precision: STOKE_GEMM_*.
int stoke_cublas_gemm(void *handle, int precision, int tA, int tB, int M, int N, int K, float alpha, unsigned long long a,
		      unsigned long long b, float beta, unsigned long long c, int batch, long long sa, long long sb,
		      long long sc) {
	cublasComputeType_t compute = CUBLAS_COMPUTE_32F_PEDANTIC;
	if (precision == STOKE_GEMM_TF32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
	if (precision == STOKE_GEMM_BF16) compute = CUBLAS_COMPUTE_32F_FAST_16BF;
	int lda = tA ? M : K, ldb = tB ? K : N;
	cublasOperation_t opA = tA ? CUBLAS_OP_T : CUBLAS_OP_N, opB = tB ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (batch == 1)
		return p_cublasGemmEx((cublasHandle_t)handle, opB, opA, N, M, K, &alpha, (const void *)b, CUDA_R_32F, ldb,
				      (const void *)a, CUDA_R_32F, lda, &beta, (void *)c, CUDA_R_32F, N, compute, CUBLAS_GEMM_DEFAULT);
	return p_cublasGemmStridedBatchedEx((cublasHandle_t)handle, opB, opA, N, M, K, &alpha, (const void *)b, CUDA_R_32F, ldb, sb,
					    (const void *)a, CUDA_R_32F, lda, sa, &beta, (void *)c, CUDA_R_32F, N, sc, batch, compute,
					    CUBLAS_GEMM_DEFAULT);
}

// stoke_cuda_library_path: the file libcuda.so.1 was loaded from (cuBLAS is
// often installed beside it). 0 when found.
int stoke_cuda_library_path(char *buf, int n) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h) return 1;
	void *f = dlsym(h, "cuInit");
	Dl_info info;
	int rc = 1;
	if (f && dladdr(f, &info) && info.dli_fname) {
		snprintf(buf, n, "%s", info.dli_fname);
		rc = 0;
	}
	dlclose(h);
	return rc;
}
