// cublas.c's interface to cublas.go: cuBLAS loaded at run time.
enum { STOKE_GEMM_FP32 = 0, STOKE_GEMM_TF32 = 1, STOKE_GEMM_BF16 = 2 };
int stoke_cublas_load(const char *path, int want_major, int *major, char *err, int n);
int stoke_cublas_create(void **handle, void *stream, unsigned long long workspace, unsigned long long bytes);
int stoke_cublas_destroy(void *handle);
int stoke_cublas_gemm(void *handle, int precision, int tA, int tB, int M, int N, int K, float alpha, unsigned long long a,
		      unsigned long long b, float beta, unsigned long long c, int batch, long long sa, long long sb,
		      long long sc);
