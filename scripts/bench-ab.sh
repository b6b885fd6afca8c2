#!/usr/bin/env bash
# bench-ab.sh BEFORE AFTER [ROUNDS=2]: stoke's training step, two train
# binaries (e.g. a build of an older commit and one of yours) alternating
# run by run, for the ref-cnn, resnet20 (32 px, batch 128) and resnet18 with
# the cifar stem (32 px, batch 64), at 1 and 2 threads. One line a run: ms
# per step, best step, peak RSS, the cores other processes kept busy, and
# the GEMM kernel. CPU only, no GPU; about 5 minutes with 2 rounds on a quiet
# 2-core machine. Quote it only from a quiet machine (`uptime`; the
# "others" column says what the runs saw). Environment such as STOKE_GEMM
# reaches both binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/bench-ab.sh BEFORE_BINARY AFTER_BINARY [ROUNDS]" >&2; exit 2; }
before=$1 after=$2 rounds=${3:-2}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
printf 'data: {image_size: 32, batch_size: 128}\nmodel: {arch: resnet20}\n' >"$d/resnet20.yaml"
printf 'data: {image_size: 32, batch_size: 64}\nmodel: {arch: resnet18, stem: cifar}\n' >"$d/resnet18-cifar.yaml"
echo "load before the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in ref-cnn:configs/ref-cnn.yaml:10 resnet20:$d/resnet20.yaml:5 resnet18-cifar:$d/resnet18-cifar.yaml:3; do
	IFS=: read -r name cfg steps <<<"$m"
	for t in 1 2; do
		for r in $(seq "$rounds"); do
			for which in before after; do
				bin=$before
				[ "$which" = after ] && bin=$after
				"$bin" bench-step --config "$cfg" --threads "$t" --steps "$steps" --json 2>/dev/null | tail -1 |
					python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], "ms/step %.1f best %.1f peak RSS %d MiB others %.2f cores;" % (d["ms_per_step"], d["best_ms"], d["peak_rss_bytes"]>>20, d["others_cores"]), d["gemm"])' \
						"$name threads $t round $r $which"
			done
		done
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
