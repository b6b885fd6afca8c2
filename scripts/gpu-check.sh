#!/usr/bin/env bash
# gpu-check.sh: build here (x86-64, -tags stokecuda) everything the GPU check
# runs, into .gpu/ (ignored by git), and print the one command that runs it
# on a machine with only the NVIDIA driver (no Go, no network). On that
# machine `bash .gpu/run.sh` runs, in under 10 minutes, writing .gpu-log.txt
# (and $OUT/gpu-check.log when $OUT is set):
#   - parity of every kernel with its CPU mirror (ref.go), forward and backward;
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
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu/' >>.git/info/exclude; }
rm -rf .gpu && mkdir -p .gpu
flags=(-tags stokecuda -trimpath -ldflags=-s\ -w)
go test -c "${flags[@]}" -o .gpu/cudaops.test ./cudaops
go build "${flags[@]}" -o .gpu/train ./cmd/train
cat >.gpu/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs the GPU check (built by scripts/gpu-check.sh); log in .gpu-log.txt.
cd "$(dirname "$0")/.."
log=.gpu-log.txt
{
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
	echo "== GPU tests"
	(cd cudaops && timeout 240 ../.gpu/cudaops.test -test.v -test.count=1 -test.timeout 230s)
	echo "tests: exit $?"
	echo "== trainer: 2 epochs on the GPU, pin_memory + non_blocking"
	timeout 120 .gpu/train --device cuda --pin-memory=true --non-blocking=true --epochs 2 \
		--data.cache_dir /tmp/stoke-gpu-data --out /tmp/stoke-gpu-run --train.progress plain
	echo "trainer: exit $?"
	echo "== bench: the post's experiment on the GPU"
	timeout 200 .gpu/train bench --config configs/blog.yaml --device cuda --rounds 2 \
		--python python3 --out /tmp/stoke-gpu-bench
	echo "bench: exit $?"
} 2>&1 | tee "$log"
if [ -n "${OUT:-}" ]; then
	cp "$log" "$OUT/gpu-check.log"
	for f in bench.md bench.json chart.png; do cp "/tmp/stoke-gpu-bench/$f" "$OUT/" 2>/dev/null; done
	cp /tmp/stoke-gpu-bench/runs/all_three-r1/trace.json "$OUT/trace-all-three.json" 2>/dev/null
	cp /tmp/stoke-gpu-bench/runs/baseline-r1/trace.json "$OUT/trace-baseline.json" 2>/dev/null
fi
grep -q '^--- FAIL' "$log" && exit 1
grep -q 'trainer: exit 0' "$log" || exit 1
exit 0
RUN
chmod +x .gpu/run.sh
du -sh .gpu/* >&2
echo "Built .gpu/ ($(du -sm .gpu | cut -f1) MiB). On a machine with the NVIDIA driver, from the repo root:"
echo "  bash .gpu/run.sh            # < 10 min; log in .gpu-log.txt"
echo "With the device tool: run(command=\"bash .gpu/run.sh\", carry=[\".gpu\"], timeout_s=600)"
