# shellcheck shell=sh
# Sourced by scripts/bench-step.sh, bench-data.sh and bench-blog.sh: every PyTorch comparison runs
# PyTorch at its best on this machine, or says loudly that it does not. No GPU; a few seconds.
#
#   torch_env CMD...   runs CMD (a PyTorch process) with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
#                      unset (these machines set Haswell, which holds OpenBLAS to AVX2; OpenBLAS
#                      detects the core itself), or OPENBLAS_CORETYPE=$TORCH_OPENBLAS_CORE where
#                      torch_best found that detection falls back to a generic core on this CPU,
#                      and glibc's malloc keeping freed memory
#                      (MALLOC_MMAP_THRESHOLD_ 4 GiB, MALLOC_TRIM_THRESHOLD_ 64 GiB): as installed, it
#                      gives PyTorch's freed tensors back to the system and every step pays the
#                      first-touch page faults again, ~10x the cost of reusing memory on these VMs.
#   torch_best PYTHON  installs libopenblas0-pthread when torch is on the reference BLAS (Debian's
#                      python3-torch uses whatever libblas.so.3 is installed) and this is root with
#                      apt-get; prints torch's BLAS, CPU capability and the CPU (torch_best_lines);
#                      sets TORCH_AT_BEST=1, or 0 when something is still wrong (the scripts then
#                      print no stoke/PyTorch ratio; STOKE_BENCH_ANY_BLAS=1 prints them anyway).
#
# Why glibc's settings rather than jemalloc through LD_PRELOAD: they are measured (FACTS.md: the
# ref-cnn step 1115 ms as installed, 173-184 ms with OpenBLAS and these), they need no package and
# no library path, and PyTorch keeps its own allocator, with only the rule for giving memory back
# changed. glibc 2.36 honours a threshold this high: a freed 40 MB or 200 MB block is reused with 0
# page faults, against 10650 and 61442 per reuse without it.
#
# `train bench` (bench-blog.sh) sets the same environment for its PyTorch process itself
# (bench.TorchEnv); the install is done here, as a Go program should not call apt-get.

torch_env() {
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${TORCH_OPENBLAS_CORE:+OPENBLAS_CORETYPE=$TORCH_OPENBLAS_CORE} \
		MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736 "$@"
}

torch_best() {
	_py=$1
	_here=scripts # every bench script runs from the repository root
	if ! torch_env "$_py" "$_here/bench_machine_pytorch.py" > /dev/null 2>&1; then
		if torch_env "$_py" "$_here/bench_machine_pytorch.py" 2>/dev/null | grep -q "BLAS is "; then
			if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
				echo "torch is on the reference BLAS: installing OpenBLAS (apt-get install -y libopenblas0-pthread)" >&2
				DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0-pthread > /dev/null ||
					echo "apt-get install libopenblas0-pthread failed: PyTorch stays on the reference BLAS" >&2
			fi
		fi
	fi
	# OpenBLAS 0.3.21 takes a CPU it does not know for a generic one (an Intel Xeon of family 6 model
	# 207 for a Prescott, SSE3 kernels at a seventh of the AVX-512 ones' speed): then PyTorch gets the
	# widest core type the CPU's flags allow (bench_machine_pytorch.py core_choice), and so does
	# `train bench`'s PyTorch process (bench.TorchEnv reads TORCH_OPENBLAS_CORE).
	TORCH_OPENBLAS_CORE=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$_py" "$_here/bench_machine_pytorch.py" --openblas-core 2>/dev/null || true)
	export TORCH_OPENBLAS_CORE
	if [ -n "$TORCH_OPENBLAS_CORE" ]; then
		echo "OpenBLAS does not know this CPU (its own detection fell back to a generic core): PyTorch runs with OPENBLAS_CORETYPE=$TORCH_OPENBLAS_CORE"
	fi
	TORCH_AT_BEST=1
	torch_best_lines=$(torch_env "$_py" "$_here/bench_machine_pytorch.py" 2>&1) || TORCH_AT_BEST=0
	echo "$torch_best_lines"
	if [ "$TORCH_AT_BEST" = 0 ]; then
		echo "WARNING: PyTorch is not at its best on this machine (above): its times are slower than it can be," >&2
		if [ "${STOKE_BENCH_ANY_BLAS:-0}" = 1 ]; then
			echo "WARNING: and STOKE_BENCH_ANY_BLAS=1: the stoke/PyTorch ratios below understate PyTorch." >&2
			TORCH_AT_BEST=1
		else
			echo "WARNING: so no stoke/PyTorch ratio is printed (STOKE_BENCH_ANY_BLAS=1 prints them anyway)." >&2
		fi
	fi
}

# machine_quiet: warns when the 1-minute load is above 0.5 before the bench starts.
machine_quiet() {
	_l=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
	echo "load before the start: $(cat /proc/loadavg 2>/dev/null || echo unknown)"
	if awk "BEGIN{exit !($_l > 0.5)}"; then
		echo "WARNING: the machine is busy (1-minute load $_l, above 0.5): the timings below are not this machine's speed" >&2
	fi
}

# stoke_best: stoke's loader decodes JPEGs with libjpeg-turbo when libturbojpeg.so.0 is there (the
# README's loader figures were measured with it), else with Go's image/jpeg, several times slower.
# Installs libturbojpeg0 when it is missing and this is root with apt-get; else warns.
stoke_best() {
	if ldconfig -p 2>/dev/null | grep -q 'libturbojpeg\.so\.0 '; then
		return 0
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
		echo "libturbojpeg.so.0 missing: installing it (apt-get install -y libturbojpeg0)" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libturbojpeg0 > /dev/null || true
	fi
	ldconfig -p 2>/dev/null | grep -q 'libturbojpeg\.so\.0 ' ||
		echo "WARNING: stoke decodes JPEGs with Go's image/jpeg (no libturbojpeg.so.0: apt-get install libturbojpeg0): its loader is not at its best" >&2
}
