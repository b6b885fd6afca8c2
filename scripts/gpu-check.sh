#!/usr/bin/env bash
# gpu-check.sh: build here (x86-64, -tags stokecuda) everything the GPU check
# runs, into .gpu/ (ignored by git), and print the one command that runs it
# on a machine with only the NVIDIA driver (no Go, no network). On that
# machine `bash .gpu/run.sh` runs, in under 10 minutes, writing .gpu/log.txt
# (and $OUT/gpu-check.log when $OUT is set), cheapest part first:
#   - compute-sanitizer memcheck and racecheck over the kernel parity test,
#     when the machine has it;
#   - parity of every kernel with its CPU mirror (ref_kernels_test.go), forward and backward;
#   - GEMM TFLOPS of our sgemm and of cuBLAS at fp32, tf32 and bf16 on resnet18/50 shapes;
#   - step times of resnet18 at 224 px, batch 64, per GEMM (own, cuBLAS) and precision;
#   - BatchNorm forward + backward times at resnet18's 224 px batch 256 shapes;
#   - step times with cuda.graphs off and on (the quickstart's CNN at batch 64,
#     resnet50 at 224 px batch 4), alternating rounds, launches per step;
#   - the whole step (logits, loss, every weight and momentum after 3 SGD steps)
#     against the gorgonia CPU model on the same weights and batches;
#   - host->device GB/s, pinned vs pageable;
#   - the overlap of the copy of batch N+1 with the compute of batch N (events);
#   - a short training run whose loss falls, then the trainer itself for two
#     epochs on the GPU with pin_memory + non_blocking;
#   - `train bench` (the post's experiment: baseline, each switch, all three)
#     on the GPU, with PyTorch's rows when python3 has torch there.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/cuda-toolchain.sh --env)"
rm -rf .gpu && mkdir -p .gpu
echo '*' >.gpu/.gitignore # .gpu/ ignores itself (no write to git's own files; works in a worktree too)
flags=(-tags stokecuda -trimpath -ldflags=-s\ -w)
go test -c "${flags[@]}" -o .gpu/cudaops.test ./cudaops
go build "${flags[@]}" -o .gpu/train ./cmd/train
cat >.gpu/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs the GPU check (built by scripts/gpu-check.sh), cheapest part first, and
# writes each part's result as it finishes (.gpu/log.txt, and $OUT/ when set),
# so a part that runs out of time still leaves the earlier ones' evidence.
# Time limits: 60+60 (sanitizers) + 30 + 60 + 45 + 20 + 150 + 60 + 100 = 585 s, inside one
# 10-minute call. Exit 0 only when every part exited 0 and every GPU test
# passed (a skip counts as a failure here: this is the GPU).
cd "$(dirname "$0")/.."
log=.gpu/log.txt
: >"$log"
status=()
save() { # copy the evidence so far to $OUT
	[ -n "${OUT:-}" ] || return 0
	cp "$log" "$OUT/gpu-check.log"
	for f in bench.md bench.json chart.png; do cp "/tmp/stoke-gpu-bench/$f" "$OUT/" 2>/dev/null; done
	cp /tmp/stoke-gpu-bench/runs/all_three-r1/trace.json "$OUT/trace-all-three.json" 2>/dev/null
	cp /tmp/stoke-gpu-bench/runs/baseline-r1/trace.json "$OUT/trace-baseline.json" 2>/dev/null
	return 0
}
part() { # name, time limit (s), command...: runs it, logs its exit status
	local name=$1 limit=$2
	shift 2
	echo "== $name (limit ${limit}s)" >>"$log"
	timeout "$limit" "$@" >>"$log" 2>&1
	local rc=$?
	echo "$name: exit $rc" >>"$log"
	status+=("$name: exit $rc")
	save
	return $rc
}
# gputests TIMEOUT PATTERN [SKIP] (a script, not a function: timeout runs programs)
gputests=(bash -c 'cd cudaops && exec ../.gpu/cudaops.test -test.v -test.count=1 -test.timeout "$0" -test.run "$1" -test.skip "${2:-}"')
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$log" 2>&1
if command -v compute-sanitizer >/dev/null; then
	for tool in memcheck racecheck; do
		part "compute-sanitizer $tool, kernel parity" 60 bash -c "cd cudaops && compute-sanitizer --tool $tool --error-exitcode 9 \
			../.gpu/cudaops.test -test.v -test.count=1 -test.run '^TestGPUKernelParity\$'"
	done
else
	echo "compute-sanitizer: not on this machine; memcheck and racecheck NOT run" >>"$log"
fi
part "kernel parity" 30 "${gputests[@]}" 25s '^TestGPUKernelParity$'
part "GEMM TFLOPS: own sgemm and cuBLAS fp32 / tf32 / bf16 at resnet18 and resnet50 shapes" 60 "${gputests[@]}" 55s '^TestGPUGemmThroughput$'
part "step times: resnet18 224 px batch 64, own sgemm and cuBLAS at fp32 / tf32 / bf16" 45 "${gputests[@]}" 40s '^TestGPUStepTimes$'
part "BatchNorm times: fwd+bwd at resnet18 224 px batch 256 shapes, blocks per channel" 20 "${gputests[@]}" 15s '^TestGPUBatchNormTimes$'
part "CUDA Graphs: step times with cuda.graphs off and on (cnn batch 64, resnet50 224 px batch 4)" 25 "${gputests[@]}" 20s '^TestGPUGraphStepTimes$'
part "GPU tests: step parity, uint8, pinned reuse, copy order, overlap, bandwidth, loss" 150 "${gputests[@]}" 145s '^TestGPU' \
	'^(TestGPUGemmThroughput|TestGPUStepTimes|TestGPUBatchNormTimes|TestGPUGraphStepTimes)$'
part "trainer: 2 epochs on the GPU, pin_memory + non_blocking" 60 .gpu/train --device cuda --pin-memory=true \
	--non-blocking=true --epochs 2 --data.cache_dir /tmp/stoke-gpu-data --out /tmp/stoke-gpu-run --train.progress plain
part "bench: the post's experiment on the GPU" 100 .gpu/train bench --config configs/blog.yaml --device cuda --rounds 1 \
	--python python3 --out /tmp/stoke-gpu-bench
ok=1
for s in "${status[@]}"; do [ "${s##* }" = 0 ] || ok=0; done
# Every GPU test must have passed: a skip here means the device was not used.
# (TestGPUStateHashesUnchanged skips on a device whose hashes nobody has pinned yet: its log line
# says how to pin them.)
skips=$(grep -E '^--- SKIP: TestGPU' "$log" | grep -v 'TestGPUStateHashesUnchanged')
[ -n "$skips" ] && { echo "GPU tests skipped on the GPU machine:" >>"$log"; echo "$skips" >>"$log"; ok=0; }
grep -q '^--- PASS: TestGPUNetMatchesModel' "$log" || ok=0
[ "$ok" = 1 ] && verdict=PASS || verdict=FAIL
summary=$(printf '%s; ' "${status[@]}")
echo "gpu-check: $verdict (${summary%; })" | tee -a "$log"
save
[ "$ok" = 1 ]
RUN
chmod +x .gpu/run.sh
du -sh .gpu/* >&2
echo "Built .gpu/ ($(du -sm .gpu | cut -f1) MiB). On a machine with the NVIDIA driver, from the repo root:"
echo "  bash .gpu/run.sh            # < 10 min; log in .gpu/log.txt"
echo "With the device tool: run(command=\"bash .gpu/run.sh\", carry=[\".gpu\"], timeout_s=600)"
