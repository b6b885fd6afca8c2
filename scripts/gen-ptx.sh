#!/usr/bin/env bash
# gen-ptx.sh: compile cudaops/kernels.cu to cudaops/kernels.ptx (PTX for
# compute_80, embedded by the cuda build). Needs nvcc 11.8 (with gcc <= 11):
# scripts/cuda-toolchain.sh --nvcc installs it. Run after editing kernels.cu
# and commit both files; the build itself never needs nvcc.
#
#   scripts/gen-ptx.sh           regenerate cudaops/kernels.ptx
#   scripts/gen-ptx.sh --check   regenerate into a temporary file and fail (exit 1)
#                                when it differs from the committed one beyond
#                                the source's file path: the .file lines and the
#                                .debug_str section at the end (-lineinfo's names,
#                                which embed a hash of the path); CI runs this
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
--check) check=1 ;;
"") ;;
*) echo "gen-ptx: unknown argument $1 (--check)" >&2; exit 2 ;;
esac
command -v nvcc >/dev/null || { echo "gen-ptx: no nvcc; run scripts/cuda-toolchain.sh --nvcc" >&2; exit 1; }
ccbin=""
for c in g++-11 g++-10; do command -v "$c" >/dev/null && { ccbin="-ccbin $c"; break; }; done
out=cudaops/kernels.ptx
if [ "$check" = 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	out="$tmp/kernels.ptx"
fi
# -lineinfo keeps source lines for profilers; no fast-math: parity with the CPU.
nvcc -ptx -arch=compute_80 $ccbin -lineinfo -o "$out" cudaops/kernels.cu
echo "gen-ptx: $out ($(nvcc --version | tail -1 | sed 's/^Build //'), $(grep -m1 '^.version' "$out"))"
if [ "$check" = 1 ]; then
	strip_paths() { sed -e '/^[[:space:]]*\.section[[:space:]]*\.debug_str/,$d' "$1" | grep -v -E '^[[:space:]]*\.file[[:space:]]'; }
	if ! diff <(strip_paths cudaops/kernels.ptx) <(strip_paths "$out") >"$tmp/diff"; then
		echo "gen-ptx: cudaops/kernels.ptx is not what nvcc makes of cudaops/kernels.cu ($(grep -c '^[<>]' "$tmp/diff") lines differ):"
		head -20 "$tmp/diff"
		echo "gen-ptx: run scripts/gen-ptx.sh and commit cudaops/kernels.ptx"
		exit 1
	fi
	echo "gen-ptx: cudaops/kernels.ptx matches kernels.cu"
fi
