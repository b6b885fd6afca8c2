#!/usr/bin/env bash
# gen-ptx.sh: compile cudaops/kernels.cu to cudaops/kernels.ptx (PTX for
# compute_80, embedded by the cuda build). Needs nvcc 11.8 (with gcc <= 11):
# scripts/cuda-toolchain.sh --nvcc installs it. Run after editing kernels.cu
# and commit both files; the build itself never needs nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null || { echo "gen-ptx: no nvcc; run scripts/cuda-toolchain.sh --nvcc" >&2; exit 1; }
ccbin=""
for c in g++-11 g++-10; do command -v "$c" >/dev/null && { ccbin="-ccbin $c"; break; }; done
# -lineinfo keeps source lines for profilers; no fast-math: parity with the CPU.
nvcc -ptx -arch=compute_80 $ccbin -lineinfo -o cudaops/kernels.ptx cudaops/kernels.cu
echo "gen-ptx: cudaops/kernels.ptx ($(nvcc --version | tail -1 | sed 's/^Build //'), $(grep -m1 '^.version' cudaops/kernels.ptx))"
