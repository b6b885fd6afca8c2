// cublas.cc: a stand-in for libcublas.so.11 on a machine without a GPU,
// written from NVIDIA's cuBLAS documentation (the cuBLAS library user guide:
// "cuBLAS Helper Function Reference", "cublas<t>gemm()", "cublasGemmEx()",
// "cublasGemmStridedBatchedEx()", "cublasSetMathMode()") against the CUDA
// 11.8 cublas_api.h, so the names and signatures are the library's. It runs
// on the libcuda.so.1 stand-in (driver.cc): a handle's work is queued on its
// stream in order with every other operation there (cudasim::enqueue_host),
// and device memory is checked as kernels' accesses are.
//
// What it implements, as documented:
//   - column-major storage; op(X) = X, X^T (CUBLAS_OP_C is X^T for real
//     types); lda/ldb/ldc with the documented minimums; the rows of C past m
//     (its padding up to ldc) are never written;
//   - C = alpha op(A) op(B) + beta C, where C is not read when beta == 0 (so a
//     NaN there does not propagate), m == 0 or n == 0 returns at once, and
//     k == 0 or alpha == 0 gives beta C;
//   - the status codes: CUBLAS_STATUS_NOT_INITIALIZED for a handle that is not
//     one, CUBLAS_STATUS_INVALID_VALUE for the argument errors each function
//     lists, CUBLAS_STATUS_NOT_SUPPORTED for type combinations cublasGemmEx's
//     table does not have;
//   - strided batches (strides signed, 0 allowed);
//   - the pointer mode: alpha and beta read at the call (host) or when the
//     work runs (device);
//   - the math mode and compute types: fp32 accumulation always (a dot
//     product accumulated in float, one fused multiply-add per term, in k
//     order); inputs rounded to TF32 (10 mantissa bits) under
//     CUBLAS_COMPUTE_32F_FAST_TF32, or CUBLAS_COMPUTE_32F with
//     CUBLAS_TF32_TENSOR_OP_MATH and no NVIDIA_TF32_OVERRIDE=0; to bfloat16
//     under CUBLAS_COMPUTE_32F_FAST_16BF and to half under
//     CUBLAS_COMPUTE_32F_FAST_16F; CUDA_R_16BF / CUDA_R_16F operands read as
//     stored, a 16-bit C rounded when written. Rounding is to nearest, ties to
//     even. The library only "allows" itself reduced precision; the stand-in
//     always takes it, so a result within the documented bound of the real
//     library's is what a test may ask of both.
// Type combinations outside the fp32/bf16/fp16 rows of cublasGemmEx's table
// (int8, double, complex) are reported as not implemented by the stand-in
// and return CUBLAS_STATUS_NOT_SUPPORTED.
#include <cublas_v2.h>
#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "fp.h"
#include "hostop.h"

using cudasim::bf16_to_float;
using cudasim::float_to_bf16;
using cudasim::Operand;
using cudasim::round_mantissa;
using cudasim::report_error;

struct cublasContext {
	CUcontext ctx;
	CUstream stream = nullptr;
	cublasMath_t math = CUBLAS_DEFAULT_MATH;
	cublasPointerMode_t pmode = CUBLAS_POINTER_MODE_HOST;
	void *workspace = nullptr;
	size_t workspace_bytes = 0;
};

namespace {

std::mutex &g_mu = *new std::mutex; // guards g_handles (never destroyed: see driver.cc)
std::set<cublasHandle_t> &g_handles = *new std::set<cublasHandle_t>;

bool valid(cublasHandle_t h) {
	std::lock_guard<std::mutex> lk(g_mu);
	return h && g_handles.count(h);
}

// How operands are stored and how inputs are rounded for one call.
struct Types {
	cudaDataType a, c; // a: A's and B's type
	int keep;          // mantissa bits the inputs keep (23: all)
};

size_t elem_size(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

float load(const char *p, cudaDataType t, size_t i) {
	if (t == CUDA_R_32F) {
		float f;
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	uint16_t b;
	memcpy(&b, p + 2 * i, 2);
	if (t == CUDA_R_16BF) return bf16_to_float(b);
	_Float16 h;
	memcpy(&h, &b, 2);
	return float(h);
}

void store(char *p, cudaDataType t, size_t i, float f) {
	if (t == CUDA_R_32F) {
		memcpy(p + 4 * i, &f, 4);
	} else if (t == CUDA_R_16BF) {
		uint16_t b = float_to_bf16(f);
		memcpy(p + 2 * i, &b, 2);
	} else {
		_Float16 h = _Float16(f);
		memcpy(p + 2 * i, &h, 2);
	}
}

// resolve_types applies cublasGemmEx's table for the fp32-accumulating
// compute types: INVALID_VALUE for a value that is not a compute type,
// NOT_SUPPORTED for a combination the table lacks.
cublasStatus_t resolve_types(cublasHandle_t h, cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t compute,
			     Types *out) {
	switch (compute) {
	case CUBLAS_COMPUTE_16F:
	case CUBLAS_COMPUTE_16F_PEDANTIC:
	case CUBLAS_COMPUTE_32F:
	case CUBLAS_COMPUTE_32F_PEDANTIC:
	case CUBLAS_COMPUTE_32F_FAST_16F:
	case CUBLAS_COMPUTE_32F_FAST_16BF:
	case CUBLAS_COMPUTE_32F_FAST_TF32:
	case CUBLAS_COMPUTE_64F:
	case CUBLAS_COMPUTE_64F_PEDANTIC:
	case CUBLAS_COMPUTE_32I:
	case CUBLAS_COMPUTE_32I_PEDANTIC: break;
	default: return CUBLAS_STATUS_INVALID_VALUE;
	}
	bool fp32_compute = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
			    compute == CUBLAS_COMPUTE_32F_FAST_16F || compute == CUBLAS_COMPUTE_32F_FAST_16BF ||
			    compute == CUBLAS_COMPUTE_32F_FAST_TF32;
	bool half = at == CUDA_R_16F || at == CUDA_R_16BF;
	bool ok = fp32_compute && at == bt &&
		  ((at == CUDA_R_32F && ct == CUDA_R_32F) ||
		   (half && (compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC) && (ct == at || ct == CUDA_R_32F)));
	if (!ok) {
		cudasim::report_note("cublasGemmEx: Atype %d, Btype %d, Ctype %d, computeType %d: not a combination the stand-in implements "
				     "(its fp32, bf16 and fp16 rows of cublasGemmEx's table); CUBLAS_STATUS_NOT_SUPPORTED",
				     int(at), int(bt), int(ct), int(compute));
		return CUBLAS_STATUS_NOT_SUPPORTED;
	}
	int keep = 23;
	const char *ov = getenv("NVIDIA_TF32_OVERRIDE");
	bool tf32_allowed = !(ov && strcmp(ov, "0") == 0);
	if (compute == CUBLAS_COMPUTE_32F_FAST_TF32 && tf32_allowed) keep = 10;
	if (compute == CUBLAS_COMPUTE_32F && at == CUDA_R_32F && (h->math & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH && tf32_allowed) keep = 10;
	if (compute == CUBLAS_COMPUTE_32F_FAST_16BF) keep = 7;
	if (compute == CUBLAS_COMPUTE_32F_FAST_16F) keep = -1; // rounded through half (range too)
	*out = Types{at, ct, keep};
	return CUBLAS_STATUS_SUCCESS;
}

struct Gemm {
	cublasOperation_t ta, tb;
	int m, n, k, lda, ldb, ldc, batch;
	long long sa, sb, sc; // batch strides, in elements
	Types t;
};

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// check_args: the argument errors cublas<t>gemm() and cublasGemmEx() list.
cublasStatus_t check_args(const Gemm &g, const void *alpha, const void *beta) {
	if (!valid_op(g.ta) || !valid_op(g.tb) || g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
	int rows_a = g.ta == CUBLAS_OP_N ? g.m : g.k, rows_b = g.tb == CUBLAS_OP_N ? g.k : g.n;
	if (g.lda < std::max(1, rows_a) || g.ldb < std::max(1, rows_b) || g.ldc < std::max(1, g.m)) return CUBLAS_STATUS_INVALID_VALUE;
	if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

// extent: the elements a column-major rows x cols matrix with leading
// dimension ld spans, over batch matrices stride apart; lo is the first one's
// offset from the base (negative for a negative stride).
size_t extent(int rows, int cols, int ld, long long stride, int batch, long long *lo) {
	*lo = 0;
	if (rows == 0 || cols == 0 || batch == 0) return 0;
	long long one = (long long)(cols - 1) * ld + rows, last = (long long)(batch - 1) * stride;
	*lo = std::min(0LL, last);
	return size_t(std::max(one, last + one) - *lo);
}

float in(float x, int keep) {
	if (keep == 23) return x;
	if (keep == -1) return float(_Float16(x));
	return round_mantissa(x, keep);
}

void run(const Gemm &g, float alpha, float beta, const char *A, const char *B, char *C) {
	for (int b = 0; b < g.batch; b++) {
		const char *a = A + g.sa * b * (long long)elem_size(g.t.a), *bb = B + g.sb * b * (long long)elem_size(g.t.a);
		char *c = C + g.sc * b * (long long)elem_size(g.t.c);
		for (int j = 0; j < g.n; j++)
			for (int i = 0; i < g.m; i++) {
				float acc = 0;
				if (alpha != 0)
					for (int l = 0; l < g.k; l++) {
						size_t ia = g.ta == CUBLAS_OP_N ? i + size_t(l) * g.lda : l + size_t(i) * g.lda;
						size_t ib = g.tb == CUBLAS_OP_N ? l + size_t(j) * g.ldb : j + size_t(l) * g.ldb;
						acc = fmaf(in(load(a, g.t.a, ia), g.t.keep), in(load(bb, g.t.a, ib), g.t.keep), acc);
					}
				size_t ic = i + size_t(j) * g.ldc;
				float v = alpha * acc;
				if (beta != 0) v = fmaf(beta, load(c, g.t.c, ic), v);
				store(c, g.t.c, ic, v);
			}
	}
}

cublasStatus_t gemm(const char *what, cublasHandle_t h, Gemm g, const void *alpha, const void *A, const void *B, const void *beta,
		    void *C) {
	if (!valid(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (cublasStatus_t s = check_args(g, alpha, beta)) return s;
	if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;
	float ha = 0, hb = 0;
	bool device_scalars = h->pmode == CUBLAS_POINTER_MODE_DEVICE;
	if (!device_scalars) {
		memcpy(&ha, alpha, 4);
		memcpy(&hb, beta, 4);
		if (ha == 0 && hb == 1) return CUBLAS_STATUS_SUCCESS; // C unchanged
	}
	long long loa, lob, loc;
	size_t ea = elem_size(g.t.a), ec = elem_size(g.t.c);
	size_t na = extent(g.ta == CUBLAS_OP_N ? g.m : g.k, g.ta == CUBLAS_OP_N ? g.k : g.m, g.lda, g.sa, g.batch, &loa);
	size_t nb = extent(g.tb == CUBLAS_OP_N ? g.k : g.n, g.tb == CUBLAS_OP_N ? g.n : g.k, g.ldb, g.sb, g.batch, &lob);
	size_t nc = extent(g.m, g.n, g.ldc, g.sc, g.batch, &loc);
	std::vector<Operand> ops = {
		{CUdeviceptr(A) + CUdeviceptr(loa * (long long)ea), na * ea, "A"},
		{CUdeviceptr(B) + CUdeviceptr(lob * (long long)ea), nb * ea, "B"},
		{CUdeviceptr(C) + CUdeviceptr(loc * (long long)ec), nc * ec, "C"},
		{device_scalars ? CUdeviceptr(alpha) : 0, device_scalars ? 4u : 0u, "alpha"},
		{device_scalars ? CUdeviceptr(beta) : 0, device_scalars ? 4u : 0u, "beta"},
	};
	CUresult r = cudasim::enqueue_host(h->ctx, h->stream, what, std::move(ops),
					   [g, ha, hb, device_scalars, loa, lob, loc, ea, ec](const std::vector<char *> &p) {
						   float al = ha, be = hb;
						   if (device_scalars) {
							   memcpy(&al, p[3], 4);
							   memcpy(&be, p[4], 4);
						   }
						   // An operand of no elements was not resolved; run never reads it.
						   const char *a = p[0] ? p[0] - loa * (long long)ea : nullptr;
						   const char *b = p[1] ? p[1] - lob * (long long)ea : nullptr;
						   run(g, al, be, a, b, p[2] - loc * (long long)ec);
					   });
	if (r == CUDA_ERROR_INVALID_HANDLE) {
		report_error("%s: the handle's stream does not exist", what);
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	return r == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

} // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
	if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
	if (cuInit(0) != CUDA_SUCCESS) return CUBLAS_STATUS_NOT_INITIALIZED;
	// As the runtime does: the thread's current context, else device 0's
	// primary context made current. The handle holds a reference to it.
	CUcontext cur = nullptr, primary = nullptr;
	CUdevice dev;
	if (cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!cur && cuCtxSetCurrent(primary) != CUDA_SUCCESS) return CUBLAS_STATUS_NOT_INITIALIZED;
	auto *h = new cublasContext{};
	h->ctx = cur ? cur : primary;
	std::lock_guard<std::mutex> lk(g_mu);
	g_handles.insert(h);
	*handle = h;
	return CUBLAS_STATUS_SUCCESS;
}

// cublasDestroy waits for the device, as the documentation says it does
// (the release implies cudaDeviceSynchronize()).
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
	{
		std::lock_guard<std::mutex> lk(g_mu);
		if (!handle || !g_handles.erase(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	}
	CUcontext saved = nullptr;
	cuCtxGetCurrent(&saved);
	cuCtxSetCurrent(handle->ctx);
	cuCtxSynchronize();
	cuCtxSetCurrent(saved);
	CUdevice dev;
	if (cuDeviceGet(&dev, 0) == CUDA_SUCCESS) cuDevicePrimaryCtxRelease(dev);
	delete handle;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version) {
	(void)handle; // the documentation asks for no handle state here
	if (!version) return CUBLAS_STATUS_INVALID_VALUE;
	*version = CUBLAS_VERSION;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value) {
	if (!value) return CUBLAS_STATUS_INVALID_VALUE;
	switch (type) {
	case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
	case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
	case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
	default: return CUBLAS_STATUS_INVALID_VALUE;
	}
}

const char *cublasGetStatusName(cublasStatus_t s) {
	switch (s) {
	case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
	case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
	case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
	case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
	case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
	case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
	case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
	case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
	case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
	}
	return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t s) {
	switch (s) {
	case CUBLAS_STATUS_SUCCESS: return "success";
	case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
	case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
	case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
	case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
	case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
	case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
	case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
	case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
	case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
	}
	return "unknown error";
}

// cublasSetStream also resets the workspace to the library's own, as
// documented.
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->stream = reinterpret_cast<CUstream>(stream);
	handle->workspace = nullptr;
	handle->workspace_bytes = 0;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *stream) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
	*stream = reinterpret_cast<cudaStream_t>(handle->stream);
	return CUBLAS_STATUS_SUCCESS;
}

// cublasSetWorkspace: the pointer must be aligned to 256 bytes. The stand-in
// needs no workspace; it keeps what it was given.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t bytes) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
	handle->workspace = workspace;
	handle->workspace_bytes = bytes;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->pmode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
	handle->pmode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->math;
	return CUBLAS_STATUS_SUCCESS;
}

// cublasSetMathMode: one of the modes, optionally ORed with
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION.
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	unsigned m = unsigned(mode) & ~unsigned(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
	if (m != CUBLAS_DEFAULT_MATH && m != CUBLAS_TENSOR_OP_MATH && m != CUBLAS_PEDANTIC_MATH && m != CUBLAS_TF32_TENSOR_OP_MATH)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->math = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
			      const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
			      int ldc) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	Types t;
	if (cublasStatus_t s = resolve_types(handle, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, &t)) return s;
	return gemm("cublasSgemm", handle, Gemm{transa, transb, m, n, k, lda, ldb, ldc, 1, 0, 0, 0, t}, alpha, A, B, beta, C);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
					 int k, const float *alpha, const float *A, int lda, long long int strideA, const float *B,
					 int ldb, long long int strideB, const float *beta, float *C, int ldc, long long int strideC,
					 int batchCount) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	Types t;
	if (cublasStatus_t s = resolve_types(handle, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, &t)) return s;
	return gemm("cublasSgemmStridedBatched", handle,
		    Gemm{transa, transb, m, n, k, lda, ldb, ldc, batchCount, strideA, strideB, strideC, t}, alpha, A, B, beta, C);
}

// The algorithms cublasGemmAlgo_t names; the stand-in has one, whichever is asked.
static bool valid_algo(cublasGemmAlgo_t a) {
	return a == CUBLAS_GEMM_DEFAULT || a == CUBLAS_GEMM_DEFAULT_TENSOR_OP || (a >= CUBLAS_GEMM_ALGO0 && a <= CUBLAS_GEMM_ALGO23) ||
	       (a >= CUBLAS_GEMM_ALGO0_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
			    const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb,
			    const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
			    cublasGemmAlgo_t algo) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!valid_algo(algo)) return CUBLAS_STATUS_NOT_SUPPORTED;
	Types t;
	if (cublasStatus_t s = resolve_types(handle, Atype, Btype, Ctype, computeType, &t)) return s;
	return gemm("cublasGemmEx", handle, Gemm{transa, transb, m, n, k, lda, ldb, ldc, 1, 0, 0, 0, t}, alpha, A, B, beta, C);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
					  int k, const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
					  const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
					  cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
					  cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
	if (!valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!valid_algo(algo)) return CUBLAS_STATUS_NOT_SUPPORTED;
	Types t;
	if (cublasStatus_t s = resolve_types(handle, Atype, Btype, Ctype, computeType, &t)) return s;
	return gemm("cublasGemmStridedBatchedEx", handle,
		    Gemm{transa, transb, m, n, k, lda, ldb, ldc, batchCount, strideA, strideB, strideC, t}, alpha, A, B, beta, C);
}

} // extern "C"
