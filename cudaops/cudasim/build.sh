#!/usr/bin/env bash
# build.sh: build the stand-in libcuda.so.1 (a CPU implementation of the CUDA
# driver calls stoke makes, running kernels.cu compiled for the host) and the
# stand-in libcublas.so.11 (cuBLAS's handle, stream, math-mode and GEMM calls,
# cublas.cc) and libnccl.so.2 (NCCL's communicators and collectives between
# the processes of one machine, nccl.cc) into OUTDIR. Then any stokecuda binary, or a C program linked
# against the real libraries, uses them with LD_LIBRARY_PATH=OUTDIR.
#
#   cudaops/cudasim/build.sh OUTDIR [KERNELS.cu]
#
# KERNELS.cu defaults to cudaops/kernels.cu; the mutation checks of
# scripts/gpu-sim.sh pass a deliberately broken copy. Needs g++ (C++20) and
# the CUDA 11.8 header from scripts/cuda-toolchain.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: build.sh OUTDIR [KERNELS.cu]}"
src="${2:-$here/../kernels.cu}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cache="${STOKE_CUDA_CACHE:-$HOME/.cache/stoke/cuda-11.8}"
[ -s "$cache/include/cuda.h" ] && [ -s "$cache/include/cublas_v2.h" ] ||
	{ echo "cudasim: no cuda.h or cublas_v2.h in $cache/include; run scripts/cuda-toolchain.sh" >&2; exit 1; }
command -v g++ >/dev/null || { echo "cudasim: g++ not found (apt-get install g++)" >&2; exit 1; }

# Every pointer the kernels declare becomes a bounds-checked dptr<T>: the
# same source, each access checked against the allocation it points into.
sed -E 's/(const )?(unsigned char|float|double|int) \*/dptr<\1\2> /g' "$src" >"$out/kernels.host.inc"
# One STOKE_KERNEL(name, uses __syncthreads) per __global__ function.
awk '
	/__global__ void [A-Za-z_0-9]+\(/ { if (name != "") print "STOKE_KERNEL(" name ", " bar ")"; match($0, /__global__ void [A-Za-z_0-9]+/); name = substr($0, RSTART + 16, RLENGTH - 16); bar = "false" }
	/__syncthreads\(\)/ { bar = "true" }
	END { if (name != "") print "STOKE_KERNEL(" name ", " bar ")" }
' "$out/kernels.host.inc" >"$out/kernels.list.inc"
[ -s "$out/kernels.list.inc" ] || { echo "cudasim: no __global__ kernels in $src" >&2; exit 1; }

flags=(-std=c++20 -O3 -march=native -g -fPIC -pthread -Wall -Wno-unused-function -Wno-unknown-pragmas -Wno-sign-compare
	-I"$here" -I"$cache/include")
# The driver and the scheduler: small thread-locals, initial-exec (fast).
g++ "${flags[@]}" -ftls-model=initial-exec -c -o "$out/driver.o" "$here/driver.cc"
g++ "${flags[@]}" -ftls-model=initial-exec -c -o "$out/exec.o" "$here/exec.cc"
# The kernels: their __shared__ arrays are thread-locals too big for glibc's
# static TLS surplus, so they get a library of their own (dynamic TLS). Not
# through TLS descriptors (-mtls-dialect=gnu2): with Debian 12's glibc 2.36 a
# thread's first access to them (the resolver's slow path, which allocates
# the block) did not preserve the vector registers a descriptor call must, so
# sgemm's accumulators in registers came back wrong in the first fiber of
# the first block a host thread ran (glibc fixed that resolver upstream in
# 2.40); plain __tls_get_addr calls are ordinary calls.
g++ "${flags[@]}" -mtls-dialect=gnu -ftls-model=local-dynamic -Wno-unused-variable -DKERNELS_SRC="\"$out/kernels.host.inc\"" \
	-DKERNELS_LIST="\"$out/kernels.list.inc\"" -c -o "$out/kernels.o" "$here/kernels_host.cc"
g++ -shared -pthread -Wl,-soname,libcudasim-kernels.so -o "$out/libcudasim-kernels.so" "$out/kernels.o"
g++ -shared -pthread -Wl,-soname,libcuda.so.1 -Wl,-rpath,'$ORIGIN' -o "$out/libcuda.so.1" "$out/driver.o" "$out/exec.o" \
	-L"$out" -lcudasim-kernels
# cuBLAS on top of the driver stand-in: its work goes through cudasim::enqueue_host.
g++ "${flags[@]}" -c -o "$out/cublas.o" "$here/cublas.cc"
g++ -shared -pthread -Wl,-soname,libcublas.so.11 -Wl,-rpath,'$ORIGIN' -o "$out/libcublas.so.11" "$out/cublas.o" -L"$out" -l:libcuda.so.1
echo "cudasim: $out/libcublas.so.11 (cuBLAS 11 stand-in)" >&2
# NCCL for the processes of one machine, on the driver stand-in too.
g++ "${flags[@]}" -c -o "$out/nccl.o" "$here/nccl.cc"
g++ -shared -pthread -Wl,-soname,libnccl.so.2 -Wl,-rpath,'$ORIGIN' -o "$out/libnccl.so.2" "$out/nccl.o" -L"$out" -l:libcuda.so.1
echo "cudasim: $out/libnccl.so.2 (NCCL 2 stand-in)" >&2
echo "cudasim: $out/libcuda.so.1 ($(wc -l <"$out/kernels.list.inc") kernels from $src)" >&2
