// driver_exit.c: a program may exit with a stream alive and after kernels
// ran (the driver API reference asks no one to destroy streams or unload
// modules before exit), and must then exit. Against the stand-in, static
// destructors used to wait on its stream workers (the driver's condition
// variable) and its block-running helpers (the kernel pool) for ever.
// With cudaops/kernels.ptx in the working folder (gpu-sim runs from the
// repository root) it also launches a kernel. Prints "PASS driver_exit".
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
	CUdevice d;
	CUcontext c;
	CUstream s;
	CUdeviceptr p, q;
	float h[1024] = {1, 2, 3, 4};
	if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) return 2;
	if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuMemAlloc(&p, sizeof h) || cuMemAlloc(&q, sizeof h) ||
	    cuMemcpyHtoDAsync(p, h, sizeof h, s) || cuStreamSynchronize(s))
		return 3;
	FILE *f = fopen("cudaops/kernels.ptx", "rb");
	if (f) {
		fseek(f, 0, SEEK_END);
		long n = ftell(f);
		rewind(f);
		char *ptx = malloc(n + 1);
		if (fread(ptx, 1, n, f) != (size_t)n) return 4;
		ptx[n] = 0;
		fclose(f);
		CUmodule m;
		CUfunction fn;
		long long count = 1024; // copy_f32(src, dst, n): an 8-byte slot, read as int
		void *args[] = {&p, &q, &count};
		if (cuModuleLoadData(&m, ptx) || cuModuleGetFunction(&fn, m, "copy_f32") ||
		    cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, s, args, NULL) || cuStreamSynchronize(s))
			return 5;
		printf("launched copy_f32; ");
	}
	printf("exiting with the stream alive\nPASS driver_exit\n");
	return 0;
}
