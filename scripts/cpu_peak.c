// One core's FP32 FMA and VDPBF16PS peak and its clock, measured (scripts/cpu-peak.sh):
// 12 independent zmm accumulators in asm, so that nothing spills and the latency is
// hidden; the clock from a chain of dependent 1-cycle integer adds. The bf16 figure
// counts VDPBF16PS's 32 products and 32 adds as 64 flops.
#include <stdio.h>
#include <time.h>
static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
#define R1(op, r) op " %%zmm12,%%zmm13,%%zmm" #r "\n\t"
#define R12(op) R1(op, 0) R1(op, 1) R1(op, 2) R1(op, 3) R1(op, 4) R1(op, 5) R1(op, 6) R1(op, 7) R1(op, 8) R1(op, 9) R1(op, 10) R1(op, 11)
#define CLOBBER "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"
int main(void) {
	long n = 400000000, m = 100000000;
	double t0 = now();
	long x = 0, one = 1;
	// A register operand, not an immediate: Intel's Golden Cove cores fold a chain of
	// add-immediates at rename, which read 6.6-8.9 GHz on an Intel Xeon of family 6 model 207.
	for (long i = 0; i < n; i++)
		__asm__ volatile("add %1,%0\n\tadd %1,%0\n\tadd %1,%0\n\tadd %1,%0" : "+r"(x) : "r"(one));
	double ghz = 4.0 * n / (now() - t0) / 1e9;
	printf("clock %.2f GHz (dependent integer adds)\n", ghz);
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f")) {
		printf("no AVX-512F: no zmm figures\n");
		return 0;
	}
	__asm__ volatile("vpxord %%zmm12,%%zmm12,%%zmm12\n\tvpxord %%zmm13,%%zmm13,%%zmm13" ::: "xmm12", "xmm13");
	t0 = now();
	for (long i = 0; i < m; i++)
		__asm__ volatile(R12("vfmadd231ps")::: CLOBBER);
	double fma = 12.0 * m * 32 / (now() - t0) / 1e9;
	printf("fp32 FMA (zmm): %.1f GFLOPS, %.1f flop/cycle\n", fma, fma / ghz);
	if (!__builtin_cpu_supports("avx512bf16")) {
		printf("no AVX512_BF16: no VDPBF16PS figure\n");
		return 0;
	}
	t0 = now();
	for (long i = 0; i < m; i++)
		__asm__ volatile(R12("vdpbf16ps")::: CLOBBER);
	double bf = 12.0 * m * 64 / (now() - t0) / 1e9;
	printf("bf16 VDPBF16PS (zmm): %.1f GFLOPS, %.1f flop/cycle\n", bf, bf / ghz);
	return 0;
}
