//go:build stokecuda

// driver.c loads the CUDA driver at run time instead of linking it: a binary
// built with -tags cuda needs only libc to start, and says what is wrong when
// there is no driver (libcuda.so.1 missing), only NVIDIA's link stub (error
// 34), or no device (error 100). gorgonia.org/cu's package init calls cuInit
// and exits the process when it fails; our cuInit never fails, it records
// the driver's answer for stoke_cuda_status. See docs/cuda.md.

#define _GNU_SOURCE // dladdr
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "tramp.h"
#include "driver.h"
#include "counters.h"

static int not_loaded(void) { return 3; } // CUDA_ERROR_NOT_INITIALIZED

// stoke_cu_fn is the jump table of tramp_linux_amd64.S.
void *stoke_cu_fn[STOKE_CU_N] = {[0 ... STOKE_CU_N - 1] = (void *)not_loaded};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int status = STOKE_CUDA_NOT_TRIED;
static int init_result;
static char detail[512];

static void load(void) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(detail, sizeof detail, "%s", dlerror());
		status = STOKE_CUDA_NO_LIBRARY;
		return;
	}
	int (*real_init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	if (!real_init) {
		snprintf(detail, sizeof detail, "libcuda.so.1 has no cuInit");
		status = STOKE_CUDA_NO_LIBRARY;
		return;
	}
	for (int i = 0; i < STOKE_CU_N; i++) {
		void *p = dlsym(h, stoke_cu_names[i]);
		if (p) stoke_cu_fn[i] = p; // an older driver may lack a newer function
	}
	stoke_counters_install(); // counting wrappers in front of some (counters.c)
	Dl_info info;
	if (dladdr((void *)real_init, &info) && info.dli_fname) snprintf(detail, sizeof detail, "%s", info.dli_fname);
	init_result = real_init(0);
	status = init_result == 0 ? STOKE_CUDA_OK : STOKE_CUDA_INIT_FAILED;
}

// cuInit replaces the driver's: cu's package init calls it and exits the
// process on any error, before our code could explain. The real result is
// kept for stoke_cuda_status, which cudaops.Open checks before any other call.
int cuInit(unsigned int flags) {
	(void)flags;
	pthread_once(&once, load);
	return 0;
}

int stoke_cuda_status(int *result, char *buf, int n) {
	pthread_once(&once, load);
	*result = init_result;
	snprintf(buf, n, "%s", detail);
	return status;
}
