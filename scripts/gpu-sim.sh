#!/usr/bin/env bash
# gpu-sim.sh: run stoke's GPU path on a machine without a GPU, under the CPU
# stand-in for the CUDA driver (cudaops/cudasim, loaded through
# LD_LIBRARY_PATH by the unchanged stokecuda binaries). In order:
#   0. the stand-ins (libcuda.so.1, libcublas.so.11, libnccl.so.2) against C programs
#      written from NVIDIA's documentation alone (cudaops/cudasim/spec: cuBLAS, NCCL, stream
#      capture and graph launch, an exit with streams alive);
#   1. the GPU test binary (cudaops.test): kernel parity, the same graph on
#      the CPU and GPU engines (float32, uint8, padded), whole-step parity
#      with the CPU model, uint8 path, pinned-buffer reuse, loss falls, copy
#      order, the missing-copy-wait catch, the ResNets against the CPU graph
#      and against PyTorch, the state after 3 steps of each arch against
#      testdata/state_hashes_gpu.json (bit for bit, run again on one host
#      thread: split-K atomics add in timing order on several); only the tests that
#      time real hardware, and the PyTorch parity where /usr/bin/python3
#      lacks torch, may skip; resnext50_32x4d against PyTorch on its own
#      (grouped convs; ~150 s on one host thread), where there is torch; then the
#      trainer's GPU tests (trainer.test -test.run ^TestGPU): 2 and 3 ranks
#      of data-parallel training on --device cuda against one rank, over MPI
#      and with train.dist nccl, and the per-step driver counters of
#      metrics.jsonl against the driver's; train.dist nccl under mpirun
#      (cmd/train.test: 2 and 3 ranks against one process, a killed rank,
#      NCCL missing); and
#      dist's NCCL binding on the NCCL stand-in (3 ranks under mpirun);
#   2. mutations: kernels.cu with an index off by one must fail kernel
#      parity, and one reading past its buffer must be reported out of bounds;
#   3. `train --device cuda`, pin_memory + non_blocking on, then off (both on
#      cuBLAS: cuda.gemm auto finds the stand-in's), then on our own GEMM
#      (cuda.gemm own), against `--device cpu`: 10 steps, final weights
#      within 1e-4 relative; then 2
#      quickstart epochs, final train loss within 5e-2 relative (the weights'
#      difference is printed beside what a 1e-7 nudge does on the CPU alone);
#      a quickstart epoch with cuda.graphs on (graph true, <= 0.1 host waits
#      and no allocation a step) against off (weights within 1e-6);
#      then resnet20: 1 step on float32 batches (weights within 1e-4), 4 steps on float32
#      (loss within 1e-4) and on uint8 batches (loss within 5e-2);
#   4. `train bench --device cuda --epochs 1 --rounds 1`: every variant runs
#      (its figures are the host's, and the table says so), and the device's
#      table has its driver calls per step.
# Each step's output is in $STOKE_GPU_SIM_DIR (default /tmp/stoke-gpu-sim);
# the last line is the summary. Exit 0 when every step passed, 1 otherwise.
# Needs g++ and the CUDA 11.8 header (scripts/cuda-toolchain.sh).
#
#   scripts/gpu-sim.sh -- CMD ARGS...
# runs one command of your own under the stand-ins instead, from the folder
# you are in: it builds them and a stokecuda `train` into
# $STOKE_GPU_SIM_DIR (default /tmp/stoke-gpu-sim-run), puts the libraries
# first on LD_LIBRARY_PATH and that `train` first on PATH, then runs CMD
# (e.g. `scripts/gpu-sim.sh -- train --device cuda --config quickstart
# --out runs/sim`, or an mpirun of it). Its exit status is CMD's.
set -uo pipefail
orig=$PWD
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--" ]; then
	shift
	[ $# -gt 0 ] || { echo "usage: scripts/gpu-sim.sh -- CMD ARGS... (a command to run under the stand-ins)" >&2; exit 2; }
	work="${STOKE_GPU_SIM_DIR:-/tmp/stoke-gpu-sim-run}"
	mkdir -p "$work/bin" || exit 1
	eval "$(scripts/cuda-toolchain.sh --env)" || { echo "gpu-sim: no CUDA header (scripts/cuda-toolchain.sh failed)" >&2; exit 3; }
	cudaops/cudasim/build.sh "$work/lib" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 3; }
	GOFLAGS="${GOFLAGS:--buildvcs=false}" go build -tags stokecuda -o "$work/bin/train" ./cmd/train || exit 3
	echo "gpu-sim: running under the stand-ins ($work/lib; train is $work/bin/train): $*" >&2
	cd "$orig" || exit 1
	export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$work/bin:$PATH"
	exec "$@"
fi
t0=$(date +%s)
work="${STOKE_GPU_SIM_DIR:-/tmp/stoke-gpu-sim}"
rm -rf "$work" && mkdir -p "$work" || exit 1
tc=$(scripts/cuda-toolchain.sh --env) || { echo "gpu-sim: no CUDA header (scripts/cuda-toolchain.sh failed)"; exit 3; }
eval "$tc"
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
set -e
cudaops/cudasim/build.sh "$work/lib"
go test -c -tags stokecuda -o "$work/cudaops.test" ./cudaops
go test -c -tags stokecuda -o "$work/trainer.test" ./trainer
go test -c -tags stokecuda -o "$work/dist.test" ./dist
mkdir -p "$work/cmd"
go test -c -tags stokecuda -o "$work/cmd/train.test" ./cmd/train
go build -tags stokecuda -o "$work/train" ./cmd/train
go build -o "$work/cmpweights" ./cudaops/cudasim/cmpweights
set +e
sim="$work/lib"
summary=()
failed=0
fail() { echo "gpu-sim: FAIL: $*"; summary+=("FAIL $1"); failed=1; }
# stand_in_errors: lines where the stand-in caught a bug (none allowed in a passing step).
stand_in_errors() { grep -c '^cudasim: error' "$1"; }

echo "== gpu-sim 0/4: the stand-in libraries against C programs written from NVIDIA's documentation"
# cudaops/cudasim/spec/*.c know only the driver API, cuBLAS and NCCL references;
# each prints PASS NAME and exits 0 (they pass --stand-in for the checks only
# a stand-in can make, such as its out-of-bounds reports), and none may hang
# at exit with its streams and handles alive.
inc="$(echo "$CGO_CFLAGS" | sed 's/^-I//')"
for src in cudaops/cudasim/spec/*.c; do
	name=$(basename "$src" .c)
	if ! gcc -std=c11 -Wall -O1 -I"$inc" -Icudaops/cudasim -o "$work/$name" "$src" -L"$sim" -l:libnccl.so.2 -l:libcublas.so.11 -l:libcuda.so.1 -lm \
		>"$work/$name.log" 2>&1; then
		fail "$name" "does not compile against the CUDA headers ($work/$name.log)"
		continue
	fi
	LD_LIBRARY_PATH="$sim" timeout 120 "$work/$name" --stand-in >>"$work/$name.log" 2>&1
	rc=$?
	if [ "$rc" = 0 ] && grep -q "^PASS $name\$" "$work/$name.log"; then
		summary+=("$name: pass")
		echo "$name: pass"
	else
		grep '^FAIL' "$work/$name.log" | head -20
		fail "$name" "exit $rc$([ "$rc" = 124 ] && echo ' (timed out: a hang, at exit or in a call)') (see $work/$name.log)"
	fi
done

echo "== gpu-sim 1/4: the GPU tests under the stand-in"
log="$work/tests.log"
(cd cudaops && LD_LIBRARY_PATH="$sim" timeout 600 "$work/cudaops.test" -test.v -test.count=1 -test.timeout 590s) >"$log" 2>&1
rc=$?
grep -E '^(--- |ok|FAIL|PASS)|^cudasim: error' "$log"
passed=$(grep -c '^--- PASS' "$log")
skipped=$(grep '^--- SKIP' "$log" | awk '{print $3}' | tr '\n' ' ')
missing=""
for t in TestGPUKernelParity TestGPUNetMatchesModel TestGPUU8MatchesFloat TestGPUU8AsyncCopy TestGPUTrainingLossFalls \
	TestGPUCopyOrder TestStandInCatchesMissingCopyWait TestStandInCopySemantics TestStandInNullStream TestStandInReports \
	TestGPUGraphMatchesCPU TestGPUGraphU8MatchesCPU TestGPUStateError \
	TestGPUAdd TestGPUConv2d TestGPUBatchNorm TestGPUMaxPoolK TestGPUAddReLU TestGPUOptimizers \
	TestGPUResNetGraphMatchesCPU TestGPUResNetU8MatchesCPU \
	TestGPUCublasGemm TestGPUCublasMissingNamesWhereItLooked TestGPUDriverCounters TestGPUBackendDriverCounters \
	TestGPUGemmStepsMatchCPU TestGPUGemmPrecision TestGPUGemmPrecisionSteps TestGPUGemmSelection TestGPUGemmBadCublas \
	TestGPUPrecisionStepsMatchCPU TestGPUGraphCaptureReplay TestGPUGraphCaptureRefusesSync TestStandInGraphReportsFreedMemory TestGPUGraphCaptureForkJoin \
	TestGPUNonFiniteLossDeferred TestGPUIm2colSteps TestGPUIm2colKept TestGPUNaNInputPropagates; do
	grep -q "^--- PASS: $t " "$log" || missing+="$t "
done
extra_skips=$(echo "$skipped" | tr ' ' '\n' | grep -v -x -e '' -e TestGPUBandwidth -e TestGPUOverlap -e TestGPUParityWithPyTorch -e TestGPUBottleneckParityWithPyTorch -e TestGPUStateHashesUnchanged -e TestGPULossStaysOnDevice -e TestGPUGemmThroughput -e TestGPUStepTimes -e TestGPUBatchNormTimes -e TestGPUResNeXtParityWithPyTorch -e TestGPUGraphStepsEqualLaunches -e TestGPUGraphCaptureFailure -e TestGPUGraphStepTimes | tr '\n' ' ')
if [ "$rc" != 0 ] || [ -n "$missing" ] || [ -n "$extra_skips" ] || [ "$(stand_in_errors "$log")" != 0 ]; then
	fail tests "exit $rc; not passed: ${missing:-none}; unexpected skips: ${extra_skips:-none}; stand-in errors: $(stand_in_errors "$log") (see $log)"
else
	summary+=("tests: $passed passed, skipped (hardware timing): ${skipped% }")
fi

# required NAME PKG PATTERN MUST_PASS SUMMARY LIMIT [VAR=VALUE...]: runs PKG's
# test binary (-test.run PATTERN, at most LIMIT seconds) under the stand-in
# with the extra environment, and fails NAME unless it exits 0, every test
# MUST_PASS names (separated by spaces) passes and the stand-in reported no
# error.
required() {
	local name=$1 pkg=$2 run=$3 must=$4 ok=$5 limit=$6 log="$work/$1.log" t notpassed=""
	shift 6
	(cd "$pkg" && env LD_LIBRARY_PATH="$sim" "$@" timeout "$limit" "$work/$pkg.test" -test.run "$run" -test.v -test.count=1) >"$log" 2>&1
	local rc=$?
	grep -E '^(--- |ok|FAIL|PASS)|^cudasim: error|want|weights within' "$log"
	for t in $must; do
		grep -q "^--- PASS: $t " "$log" || notpassed+="$t "
	done
	if [ "$rc" != 0 ] || [ -n "$notpassed" ] || [ "$(stand_in_errors "$log")" != 0 ]; then
		fail "$name" "exit $rc; must pass: $must; not passed: ${notpassed:-none} (see $log)"
	else
		summary+=("$ok")
	fi
}
# The state after 3 steps of every arch, bit for bit: on one host thread,
# where sgemm's split-K atomics add in block order (on several, in timing
# order, and the test skips).
required state-hashes cudaops '^TestGPUStateHashesUnchanged$' TestGPUStateHashesUnchanged \
	"state hashes after 3 steps: unchanged (1 host thread)" 900 STOKE_CUDASIM_THREADS=1
# The loss on the device against the loss on the host, 33 steps of two
# trajectories: on one host thread too, for the same reason.
required loss-on-device cudaops '^TestGPULossStaysOnDevice$' TestGPULossStaysOnDevice \
	"loss on the device: <= 0.1 host waits a step, the host path's steps (1 host thread)" 600 STOKE_CUDASIM_THREADS=1
# cuda.graphs: steps captured once and replayed against the same steps
# launched kernel by kernel (cnn with SGD, resnet20 with AdamW; bit for bit,
# one launch a replayed step), and a capture the driver invalidates (auto
# falls back, on fails naming it): on one host thread too.
required graphs cudaops '^TestGPUGraph(StepsEqualLaunches|CaptureFailure)$' "TestGPUGraphStepsEqualLaunches TestGPUGraphCaptureFailure" \
	"cuda.graphs: replayed steps bit-equal to launched ones, one launch a step; a failed capture falls back or names cuda.graphs on (1 host thread)" 900 STOKE_CUDASIM_THREADS=1
# resnext50_32x4d's step against PyTorch (grouped 3x3 convs; a 25M-parameter
# model, ~150 s on one host thread: out of the 590 s of the run above), where
# /usr/bin/python3 has torch and torchvision; the test skips without
# STOKE_PARITY_RESNEXT=1 under the stand-in.
if /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
	required resnext-parity cudaops '^TestGPUResNeXtParityWithPyTorch$' TestGPUResNeXtParityWithPyTorch \
		"resnext50_32x4d against PyTorch on the GPU engine" 600 STOKE_PARITY_RESNEXT=1
fi
# The trainer's GPU tests: data-parallel training on --device cuda (each
# rank its own CUDA backend, the gradients summed on host copies), and the
# per-step driver counters in metrics.jsonl (plausible, and equal to the
# driver's counts around the same steps).
required trainer-tests trainer '^TestGPU(DataParallel|Counters|GraphsOnRefused)' "TestGPUDataParallelMatchesOneProcess TestGPUCountersPerStep TestGPUCountersAgreeWithDriver TestGPUGraphsOnRefusedWithDist" \
	"data parallel on cuda: 2 and 3 ranks match one rank, cuda.graphs on refused; gpu counters per step agree with the driver's" 600
# train.dist nccl: the gradients summed on the device by the NCCL stand-in,
# ranks as goroutines of one process (trainer), then as processes under
# mpirun (cmd/train: against one process, a killed rank, NCCL missing).
required trainer-nccl trainer '^TestGPU(NCCLMatchesOneProcess|AutoChoosesNCCL)$' TestGPUNCCLMatchesOneProcess \
	"train.dist nccl on cuda: 2 and 3 ranks (an empty slice) match one rank" 300
required cmd-nccl-ranks cmd/train '^TestMPINCCLRanksAreOneRank$' TestMPINCCLRanksAreOneRank \
	"train.dist nccl under mpirun: 2 x 32 and 3 x 32 match 1 x 64 and 1 x 96" 900
required cmd-nccl-killed cmd/train '^TestMPINCCLKilledRankEndsTheJob$' TestMPINCCLKilledRankEndsTheJob \
	"train.dist nccl: a killed rank ends the job, named" 300
required cmd-nccl-missing cmd/train '^TestMPINCCLMissingSaysWhereItLooked$' TestMPINCCLMissingSaysWhereItLooked \
	"train.dist nccl without NCCL says where it looked" 300
required trainer-deferred-loss trainer '^TestGPU(DeferredLoss|NonFiniteLossNamed)$' "TestGPUDeferredLoss TestGPUNonFiniteLossNamed" \
	"train on cuda: the loss read at the refresh, <= 0.1 host waits a step" 300
# dist's NCCL binding on the NCCL stand-in, 3 processes under mpirun (needed),
# device memory and a stream of the driver stand-in.
required dist-nccl dist '^TestMPINCCLOnDevice$' TestMPINCCLOnDevice \
	"NCCL binding on the NCCL stand-in: 3 ranks agree" 300 STOKE_NCCL_LIB="$sim/libnccl.so.2"

echo "== gpu-sim 2/4: mutations the stand-in must catch"
mutate() { # name, sed expression on kernels.cu, what the parity run's output must show[, tests to run]
	local name=$1 expr=$2 want=$3 run=${4:-TestGPUKernelParity} dir="$work/mut-$1"
	mkdir -p "$dir"
	sed -E "$expr" cudaops/kernels.cu >"$dir/kernels.cu"
	if cmp -s cudaops/kernels.cu "$dir/kernels.cu"; then
		fail "mutation-$name" "the sed expression did not change kernels.cu: update scripts/gpu-sim.sh"
		return
	fi
	cudaops/cudasim/build.sh "$dir/lib" "$dir/kernels.cu" 2>"$dir/build.log" || { fail "mutation-$name" "build failed ($dir/build.log)"; return; }
	(cd cudaops && LD_LIBRARY_PATH="$dir/lib" timeout 120 "$work/cudaops.test" -test.run "^($run)\$" -test.count=1) >"$dir/out.log" 2>&1
	local rc=$?
	if [ "$rc" != 0 ] && grep -q -E "$want" "$dir/out.log"; then
		echo "mutation $name: caught ($(grep -m1 -E "$want" "$dir/out.log" | sed 's/^ *//' | cut -c1-150))"
		summary+=("mutation $name caught")
	else
		fail "mutation-$name" "kernel parity passed (exit $rc) with $name ($dir/out.log)"
	fi
}
# bias_relu reads the next channel's bias: in bounds, wrong values.
mutate off-by-one 's/\+ bias\[c\];/+ bias[(c + 1) % Cout];/' 'bias_relu\[[0-9]+\] = '
# avg_pool reads one element past each plane: past the end of x for the last.
mutate out-of-bounds 's/s \+= x\[i \* HW \+ p\];/s += x[i * HW + p + 1];/' 'cudasim: error: kernel avg_pool: out-of-bounds'
# bn_forward moves the running variance toward the biased variance, not PyTorch's unbiased one.
mutate biased-running-var 's/\+ 0\.1 \* unbiased\);/+ 0.1 * var);/' 'bn running var .*want' TestGPUBatchNorm

echo "== gpu-sim 3/4: train --device cuda against --device cpu"
# The CPU reference takes uint8 batches too (data.batch_dtype uint8, as auto
# means on the GPU): float32 batches are other data (not rounded to 8 bits).
train() { # name, args...
	local name=$1
	shift
	LD_LIBRARY_PATH="$sim" timeout 900 "$work/train" --config configs/quickstart.yaml --out "$work/run-$name" \
		--train.progress plain --data.batch_dtype uint8 "$@" >"$work/run-$name.log" 2>&1
}
compare() { # name, reference, cmpweights flags, what
	local name=$1 ref=$2 flags=$3 what=$4 out
	if [ "$(stand_in_errors "$work/run-$name.log")" != 0 ]; then
		fail "$name" "the stand-in reported errors ($work/run-$name.log)"
	elif out=$("$work/cmpweights" $flags "$work/run-$name" "$work/run-$ref"); then
		echo "$name: $out"
		summary+=("$what: weights $(echo "$out" | sed -E 's/.*difference ([^ ]+) .*/\1/'), loss $(echo "$out" | sed -E 's/.*\(([^ ]+) relative\)$/\1/')")
	else
		fail "$name" "$out"
	fi
}
# a) 10 steps (the quickstart's model and augmentation on 64 images per class):
#    the whole trainer path, weights within 1e-4 relative of the CPU's.
short=(--epochs 1 --data.synthetic.train 64 --data.synthetic.val 16)
train short-cpu --device cpu "${short[@]}" || fail short-cpu "exit $? ($work/run-short-cpu.log)"
for mode in on off; do
	[ "$mode" = on ] && sw=true || sw=false
	if train "short-cuda-$mode" --device cuda --pin-memory=$sw --non-blocking=$sw "${short[@]}"; then
		compare "short-cuda-$mode" short-cpu "-tol 1e-4 -loss-tol 1e-4" "10 steps cuda $mode vs cpu"
	else
		fail "short-cuda-$mode" "exit $? ($work/run-short-cuda-$mode.log)"
	fi
done
grep -q 'gemm=cublas' "$work/run-short-cuda-on.log" || fail short-cuda-on "cuda.gemm auto did not find the stand-in's cuBLAS ($work/run-short-cuda-on.log)"
if train short-cuda-own --device cuda --cuda.gemm own "${short[@]}"; then
	compare short-cuda-own short-cpu "-tol 1e-4 -loss-tol 1e-4" "10 steps cuda own GEMM vs cpu"
else
	fail short-cuda-own "exit $? ($work/run-short-cuda-own.log)"
fi
# b) the quickstart, 2 epochs (126 steps). Training amplifies rounding: on the
#    CPU alone, moving augment.mean[0] by 1e-7 changes the final weights by
#    ~6e-2 (relative, largest tensor) and the last train loss by 1.5e-2. So
#    the GPU run must end with the CPU's loss to 5e-2 relative; its weight
#    difference is printed beside the CPU's own sensitivity (the nudged run).
train cpu --device cpu --epochs 2 || fail train-cpu "exit $? ($work/run-cpu.log)"
train cpu-nudged --device cpu --epochs 2 --augment.mean=0.4850001,0.456,0.406 || fail train-cpu-nudged "exit $?"
compare cpu-nudged cpu "-tol 1 -loss-tol 1" "2 epochs cpu with mean[0]+1e-7 vs cpu"
for mode in on off; do
	[ "$mode" = on ] && sw=true || sw=false
	s=$(date +%s)
	if train "cuda-$mode" --device cuda --pin-memory=$sw --non-blocking=$sw --epochs 2; then
		grep -m1 '^device:' "$work/run-cuda-$mode.log"
		grep '^epoch 2/2 ' "$work/run-cuda-$mode.log" | tr '\r' '\n' | grep 'train loss' | tail -1
		compare "cuda-$mode" cpu "-tol 1 -loss-tol 5e-2" "2 epochs cuda $mode ($(($(date +%s) - s)) s) vs cpu"
	else
		fail "train-cuda-$mode" "exit $? ($work/run-cuda-$mode.log)"
		tail -5 "$work/run-cuda-$mode.log"
	fi
done

# c) resnet20 (BatchNorm, residual fan-out, the ResNet kernels) on a tiny
#    generated set: 4 classes at 16 px, batch 16. Float32 batches, one step
#    (4 images a class): weights within 1e-4 of the CPU's (measured 1.3e-6).
#    Then one epoch (16 a class, 4 steps): the loss within 1e-4 (measured
#    9.3e-6), the weights printed: after 4 steps a BatchNorm bias is still
#    near 0, so its relative difference measures where a rounding landed
#    (1.6e-6 on one machine of this kind, 5.8e-3 on another, with the same
#    loss to 1e-5), not whether the engines agree. uint8 batches: the device
#    normalizes (x/255 - m)/s where the host uses a table of
#    (x·(1/255) - m)·(1/s), an ulp apart on many inputs, and a ResNet
#    amplifies that (a ReLU or BatchNorm that falls the other side); so that
#    run must train and end with the CPU's loss to 5e-2.
r20=(--model.arch resnet20 --epochs 1 --data.synthetic.classes 4 --data.synthetic.val 4
	--data.synthetic.size 32 --image-size 16 --batch-size 16 --optim.warmup_epochs 0 --optim.lr 0.02)
for run in float32-1step float32 uint8; do
	dt=${run%-1step}
	extra=(--data.synthetic.train 16)
	[ "$run" = float32-1step ] && extra=(--data.synthetic.train 4)
	train "r20-cpu-$run" --device cpu "${r20[@]}" "${extra[@]}" --data.batch_dtype $dt || fail "r20-cpu-$run" "exit $? ($work/run-r20-cpu-$run.log)"
	case $run in
	float32-1step) tol="-tol 1e-4 -loss-tol 1e-4" what="1 step" ;;
	float32) tol="-tol 1 -loss-tol 1e-4" what="4 steps" ;;
	*) tol="-tol 1 -loss-tol 5e-2" what="4 steps" ;;
	esac
	s=$(date +%s)
	if train "r20-cuda-$run" --device cuda --pin-memory=true --non-blocking=true "${r20[@]}" "${extra[@]}" --data.batch_dtype $dt; then
		compare "r20-cuda-$run" "r20-cpu-$run" "$tol" "resnet20 $what $dt cuda ($(($(date +%s) - s)) s) vs cpu"
	else
		fail "r20-cuda-$run" "exit $? ($work/run-r20-cuda-$run.log)"
		tail -5 "$work/run-r20-cuda-$run.log"
	fi
done

# d) cuda.graphs: the quickstart, 1 epoch (63 steps), pin_memory and
#    non_blocking on, progress none, on one host thread (the order of every
#    addition fixed), with graphs on and off. On: the epoch's record must say
#    graph true, at most 0.1 host waits and no allocation a step; off: graph
#    false; and the weights of the two within 1e-6 relative (measured: equal).
gpu_field() { # run, field: the field of the run's last "gpu" record
	grep -o "\"$2\":[^,}]*" "$work/run-$1/metrics.jsonl" | tail -1 | cut -d: -f2
}
for g in on off; do
	s=$(date +%s)
	if STOKE_CUDASIM_THREADS=1 train "graphs-$g" --device cuda --pin-memory=true --non-blocking=true --epochs 1 \
		--train.progress none --cuda.graphs $g; then
		echo "graphs-$g ($(($(date +%s) - s)) s): launches $(gpu_field "graphs-$g" launches_per_step), host syncs $(gpu_field "graphs-$g" host_syncs_per_step), allocs $(gpu_field "graphs-$g" allocs_per_step), graph $(gpu_field "graphs-$g" graph) a step"
	else
		fail "graphs-$g" "exit $? ($work/run-graphs-$g.log)"
		tail -5 "$work/run-graphs-$g.log"
	fi
done
if [ -f "$work/run-graphs-on/metrics.jsonl" ] && [ -f "$work/run-graphs-off/metrics.jsonl" ]; then
	syncs=$(gpu_field graphs-on host_syncs_per_step) allocs=$(gpu_field graphs-on allocs_per_step)
	if [ "$(gpu_field graphs-on graph)" != true ] || [ "$(gpu_field graphs-off graph)" != false ] ||
		! awk -v s="$syncs" -v a="$allocs" 'BEGIN { exit !(s <= 0.1 && a == 0) }'; then
		fail graphs "cuda.graphs on: graph $(gpu_field graphs-on graph), $syncs host syncs and $allocs allocs a step (want true, <= 0.1, 0); off: graph $(gpu_field graphs-off graph) (want false)"
	else
		compare graphs-on graphs-off "-tol 1e-6 -loss-tol 1e-6" "quickstart epoch cuda.graphs on ($syncs host syncs, $allocs allocs, $(gpu_field graphs-on launches_per_step) launches a step) vs off ($(gpu_field graphs-off launches_per_step) launches)"
	fi
fi

echo "== gpu-sim 4/4: train bench --device cuda --epochs 1"
log="$work/bench.log"
LD_LIBRARY_PATH="$sim" timeout 900 "$work/train" bench --device cuda --epochs 1 --rounds 1 --python "" --out "$work/bench" >"$log" 2>&1
rc=$?
cat "$work/bench/bench.md" 2>/dev/null
# The device's table: a row of driver calls per step for each variant, ending in its graph column.
counted=$(grep -cE '^\| stoke .*\| (true|false) \|$' "$work/bench/bench.md" 2>/dev/null)
variants=$(($(grep -c '^| stoke ' "$work/bench/bench.md" 2>/dev/null) - ${counted:-0}))
if [ "$rc" = 0 ] && [ "$variants" -ge 5 ] && [ "${counted:-0}" -ge 5 ] && [ "$(stand_in_errors "$log")" = 0 ]; then
	summary+=("bench: $variants variants, each with its driver counters per step")
else
	fail bench "exit $rc, $variants variants in bench.md, ${counted:-0} rows of driver counters ($log)"
	tail -5 "$log"
fi

verdict=PASS
[ "$failed" = 0 ] || verdict=FAIL
line=$(printf '%s; ' "${summary[@]}")
echo "gpu-sim: $verdict in $(($(date +%s) - t0)) s: ${line%; } (logs in $work)"
exit "$failed"
