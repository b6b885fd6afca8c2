#!/usr/bin/env bash
# cuda-toolchain.sh: the CUDA 11.8 headers (the driver API's and cuBLAS's) and link stub (and, with --nvcc, the
# compiler) from Debian's non-free component, for building stoke with -tags stokecuda
# on a machine without a GPU. See docs/cuda.md.
#
#   scripts/cuda-toolchain.sh            fetch (or reuse) the header + stub, print the cgo flags
#   scripts/cuda-toolchain.sh --nvcc     also install nvcc 11.8 (nvidia-cuda-toolkit, pulls gcc-11)
#   eval "$(scripts/cuda-toolchain.sh --env)"   export CGO_CFLAGS / CGO_LDFLAGS into this shell
#
# The header and stub are extracted from nvidia-cuda-dev's .deb (about 774 MB,
# downloaded, never installed) into a cache folder outside the repo
# (STOKE_CUDA_CACHE, default ~/.cache/stoke/cuda-11.8); a second run reuses it.
#
# Exit status: 0 ok; 2 usage; 3 the download failed (registry, network or disk):
# callers such as .ci/run print a SKIPPED line on 3 and go on; 4 anything else.
set -euo pipefail

cache="${STOKE_CUDA_CACHE:-$HOME/.cache/stoke/cuda-11.8}"
want_nvcc=0
env_only=0
for a in "$@"; do
	case "$a" in
	--nvcc) want_nvcc=1 ;;
	--env) env_only=1 ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "cuda-toolchain: unknown argument $a (--nvcc, --env)" >&2; exit 2 ;;
	esac
done

log() { echo "cuda-toolchain: $*" >&2; }
fail_download() { log "FAILED to download: $*"; exit 3; }
sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# enable_nonfree adds Debian's non-free component on the mirror main comes from.
enable_nonfree() {
	local f=/etc/apt/sources.list.d/stoke-nonfree.sources
	if grep -rqsE '(^Components:.*[[:space:]]non-free([[:space:]]|$))|(^deb .* non-free( |$))' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; then
		return 0
	fi
	local uri suite
	uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/debian.sources | head -1 | awk '{print $2}')
	uri="${uri:-http://deb.debian.org/debian}"
	suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	log "enabling Debian non-free ($uri $suite) in $f"
	sudo_ tee "$f" >/dev/null <<EOF
# Added by stoke's scripts/cuda-toolchain.sh: nvidia-cuda-dev / nvidia-cuda-toolkit.
Types: deb
URIs: $uri
Suites: $suite $suite-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	sudo_ apt-get update -qq >&2 || fail_download "apt-get update"
}

# The headers: the driver API's, and cuBLAS's with what it includes (the cuBLAS
# stand-in, cudaops/cudasim/cublas.cc, and its spec tests are built against them).
headers=(cuda.h cudaTypedefs.h cublas_v2.h cublas_api.h driver_types.h library_types.h vector_types.h cuComplex.h
	cuda_fp16.h cuda_fp16.hpp cuda_bf16.h cuda_bf16.hpp crt/host_defines.h)
have_headers() {
	local h
	for h in "${headers[@]}"; do [ -s "$cache/include/$h" ] || return 1; done
	[ -s "$cache/lib/stubs/libcuda.so" ]
}

# copy_headers ROOT: ROOT/usr/include/... and the stub into the cache.
copy_headers() {
	local h
	mkdir -p "$cache/include/crt" "$cache/lib/stubs"
	for h in "${headers[@]}"; do cp "$1/usr/include/$h" "$cache/include/$h" || return 1; done
	cp "$1/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" "$cache/lib/stubs/"
}

# An installed nvidia-cuda-dev (nvcc's toolkit pulls it in) has them already.
if ! have_headers && [ -s /usr/lib/x86_64-linux-gnu/stubs/libcuda.so ] && [ -s /usr/include/cublas_v2.h ] &&
	dpkg -S /usr/include/cublas_v2.h 2>/dev/null | grep -q '^nvidia-cuda-dev'; then
	copy_headers / && echo "installed $(dpkg-query -W -f '${Package} ${Version}' nvidia-cuda-dev)" >"$cache/SOURCE" &&
		log "headers copied from the installed nvidia-cuda-dev into $cache"
fi

if ! have_headers; then
	command -v apt-get >/dev/null || { log "FAILED: no apt-get here; fetch cuda.h and stubs/libcuda.so (CUDA 11.8) into $cache by hand"; exit 4; }
	enable_nonfree
	tmp="$cache.tmp.$$"
	mkdir -p "$tmp" || fail_download "cannot create $tmp"
	trap 'rm -rf "$tmp"' EXIT
	log "downloading nvidia-cuda-dev (about 774 MB) into $tmp"
	(cd "$tmp" && apt-get download -q nvidia-cuda-dev >&2) || fail_download "apt-get download nvidia-cuda-dev"
	deb=$(ls "$tmp"/nvidia-cuda-dev_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || fail_download "no .deb after apt-get download"
	mkdir -p "$tmp/x"
	members=()
	for h in "${headers[@]}"; do members+=("./usr/include/$h"); done
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" "${members[@]}" './usr/lib/x86_64-linux-gnu/stubs/libcuda.so' ||
		fail_download "extracting from $deb (disk full?)"
	copy_headers "$tmp/x" || fail_download "copying the headers into $cache (disk full?)"
	echo "$(basename "$deb")" >"$cache/SOURCE"
	rm -rf "$tmp"
	trap - EXIT
	have_headers || fail_download "a header or libcuda.so missing after extraction"
	log "cached in $cache ($(cat "$cache/SOURCE"))"
fi

if [ "$want_nvcc" = 1 ] && ! command -v nvcc >/dev/null; then
	enable_nonfree
	# nvidia-cuda-toolkit depends on the driver library (libcuda.so.1 >= 520),
	# which a machine without a GPU must not get: nvcc only compiles, and the
	# no-driver checks need it absent. An empty package provides the name.
	nodrv="$cache/stoke-cuda-toolkit-nodriver.deb"
	if [ ! -s "$nodrv" ]; then
		d=$(mktemp -d)
		mkdir -p "$d/DEBIAN"
		printf '%s\n' 'Package: stoke-cuda-toolkit-nodriver' 'Version: 1.0' 'Architecture: amd64' \
			'Maintainer: stoke <stoke@localhost>' 'Provides: libcuda.so.1 (= 520), libnvidia-ml.so.1 (= 520)' \
			'Description: lets nvidia-cuda-toolkit install on a machine without a GPU' \
			' Installs no files: nvcc only compiles, so the driver library is not needed.' >"$d/DEBIAN/control"
		dpkg-deb --build "$d" "$nodrv" >/dev/null || { log "FAILED: dpkg-deb --build"; exit 4; }
		rm -rf "$d"
	fi
	log "installing nvidia-cuda-toolkit (nvcc 11.8 + gcc-11; several GB)"
	DEBIAN_FRONTEND=noninteractive sudo_ apt-get install -y -q --no-install-recommends "$nodrv" nvidia-cuda-toolkit >&2 ||
		fail_download "apt-get install nvidia-cuda-toolkit"
fi

cflags="-I$cache/include"
ldflags="-L$cache/lib/stubs"
if [ "$env_only" = 1 ]; then
	echo "export CGO_CFLAGS='$cflags'"
	echo "export CGO_LDFLAGS='$ldflags'"
else
	echo "CUDA 11.8 header and stub in $cache"
	echo "  export CGO_CFLAGS='$cflags'"
	echo "  export CGO_LDFLAGS='$ldflags'"
	echo "  go build -tags stokecuda ./...   # the binary needs only libc at run time; see docs/cuda.md"
	command -v nvcc >/dev/null && echo "  nvcc: $(command -v nvcc) ($(nvcc --version | tail -1))"
fi
exit 0
