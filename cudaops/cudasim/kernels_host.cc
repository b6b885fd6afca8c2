// kernels_host.cc: kernels.cu compiled for the host, with a typed launcher
// per kernel (its argument list unpacked from cu's 8-byte slots into the
// kernel's parameter types). build.sh defines KERNELS_SRC (kernels.cu with
// pointer types rewritten to dptr<T>) and KERNELS_LIST (one
// STOKE_KERNEL(name, uses_barrier) per kernel).
#include "shim.h"

#include <cstring>
#include <tuple>
#include <utility>

#include "exec.h"

#include KERNELS_SRC

namespace cudasim {

// ---- typed launches: argument conversion and the per-kernel job
template <class T> struct Arg;
template <class T> struct Arg<dptr<T>> {
	static constexpr ParamInfo info{8, true};
	static dptr<T> get(const LaunchArgs &a, int i) { return dptr<T>{(T *)a.host[i], a.lo[i], a.hi[i], i}; }
};
template <> struct Arg<int> {
	static constexpr ParamInfo info{4, false};
	static int get(const LaunchArgs &a, int i) {
		int v;
		memcpy(&v, &a.slot[i], 4); // little-endian: the low bytes of cu's 8-byte slot
		return v;
	}
};
template <> struct Arg<unsigned> {
	static constexpr ParamInfo info{4, false};
	static unsigned get(const LaunchArgs &a, int i) { return (unsigned)a.slot[i]; }
};
template <> struct Arg<float> {
	static constexpr ParamInfo info{4, false};
	static float get(const LaunchArgs &a, int i) {
		float v;
		memcpy(&v, &a.slot[i], 4);
		return v;
	}
};

template <auto F> struct Kernel;
template <class... A, void (*F)(A...)> struct Kernel<F> {
	using Tuple = std::tuple<A...>;

	template <size_t... I> static Tuple unpack(const LaunchArgs &a, std::index_sequence<I...>) { return Tuple{Arg<A>::get(a, (int)I)...}; }
	static void thread(void *p) { std::apply(F, *(Tuple *)p); }

	struct J : Job {
		Tuple args;
		void block(long long) override {
			const LaunchArgs &la = *a;
			if (def->barrier) {
				run_fibers(*this, &thread, &args);
				return;
			}
			bool rev = la.seed && (t_block.x & 1); // chaos: some blocks run their threads backwards
			unsigned bx = la.block[0], by = la.block[1], bz = la.block[2];
			for (unsigned z = 0; z < bz; z++)
				for (unsigned y = 0; y < by; y++)
					for (unsigned x = 0; x < bx; x++) {
						t_thread = dim3{rev ? bx - 1 - x : x, y, z};
						std::apply(F, args);
					}
		}
	};

	static bool run(const KernelDef *d, const LaunchArgs &a) {
		J j;
		j.def = d;
		j.a = &a;
		j.total = (long long)a.grid[0] * a.grid[1] * a.grid[2];
		j.args = unpack(a, std::index_sequence_for<A...>{});
		run_job(j);
		return !j.failed;
	}

	static KernelDef def(const char *name, bool barrier) {
		static_assert(sizeof...(A) <= kMaxParams, "too many kernel parameters");
		KernelDef d{name, barrier, (int)sizeof...(A), {Arg<A>::info...}, &run};
		return d;
	}
};

static const KernelDef table[] = {
#define STOKE_KERNEL(name, barrier) Kernel<&::name>::def(#name, barrier),
#include KERNELS_LIST
#undef STOKE_KERNEL
};

const KernelDef *kernels(int *n) {
	*n = (int)(sizeof table / sizeof table[0]);
	return table;
}

} // namespace cudasim
