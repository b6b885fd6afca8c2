// driver_exit.c: a program may exit with a stream alive (the driver API
// reference asks no one to destroy streams before exit), and must then exit.
// Against the stand-in, a static destructor of its condition variable used
// to wait on the stream workers for ever. Prints "PASS driver_exit".
#include <cuda.h>
#include <stdio.h>
int main(void) {
	CUdevice d; CUcontext c; CUstream s; CUdeviceptr p; float h[4] = {1,2,3,4};
	if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) return 2;
	if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuMemAlloc(&p, 16) || cuMemcpyHtoDAsync(p, h, 16, s) || cuStreamSynchronize(s)) return 3;
	printf("PASS driver_exit\n");
	return 0;
}
