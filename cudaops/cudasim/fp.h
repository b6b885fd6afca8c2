// fp.h: the reduced-precision conversions the stand-ins share (the cuBLAS
// stand-in's TF32/bf16 input rounding and bf16 operands, the NCCL stand-in's
// bf16 reductions): rounding to nearest, ties to even; Inf stays Inf, a NaN
// stays a (quiet) NaN.
#pragma once
#include <cstdint>
#include <cstring>

namespace cudasim {

// round_mantissa rounds x to keep of float's 23 mantissa bits (TF32 keeps
// 10, bfloat16 7).
inline float round_mantissa(float x, int keep) {
	uint32_t u;
	memcpy(&u, &x, 4);
	if ((u & 0x7f800000u) == 0x7f800000u) {
		if (u & 0x007fffffu) u |= 0x00400000u;
	} else {
		int drop = 23 - keep;
		uint32_t half = (1u << (drop - 1)) - 1 + ((u >> drop) & 1);
		u = (u + half) & ~((1u << drop) - 1);
	}
	memcpy(&x, &u, 4);
	return x;
}

inline float bf16_to_float(uint16_t b) {
	uint32_t u = uint32_t(b) << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

inline uint16_t float_to_bf16(float f) {
	f = round_mantissa(f, 7);
	uint32_t u;
	memcpy(&u, &f, 4);
	return uint16_t(u >> 16);
}

} // namespace cudasim
