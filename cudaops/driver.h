// The driver's state as driver.c found it.
enum {
	STOKE_CUDA_NOT_TRIED = -1,
	STOKE_CUDA_OK = 0,
	STOKE_CUDA_NO_LIBRARY = 1,  // dlopen("libcuda.so.1") failed
	STOKE_CUDA_INIT_FAILED = 2, // the real cuInit returned an error
};
int stoke_cuda_status(int *result, char *buf, int n);
