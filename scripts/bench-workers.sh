#!/usr/bin/env bash
# bench-workers.sh [ROUNDS=1] [EPOCHS_QUICKSTART=2] [EPOCHS_BLOG=5]:
# data.workers auto against each fixed count 0-4, training the quickstart
# (EPOCHS_QUICKSTART epochs of its 12) and the blog config (its 5) on the CPU, the
# counts alternating round by round. One line a run: training img/s of
# each epoch (metrics.jsonl img_per_s: training images per second of
# training wall time), their mean, the final weights' hash (the same on
# every line of a config: batches are bit-identical whatever the count),
# and for auto what it picked and kept (its "loader: auto ..." lines).
# Then a summary per config: the mean img/s of each count, auto's against
# the best fixed one. Needs jq. The runs go to a temporary folder, removed
# at the end. Quote it only from a quiet machine (`uptime`): about 5
# minutes with 1 round on a quiet 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1} qsEpochs=${2:-2} blogEpochs=${3:-5}
command -v jq >/dev/null || { echo "bench-workers.sh: needs jq (apt-get install jq)" >&2; exit 2; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
go build -o "$d/train" ./cmd/train
echo "load before the start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
for cfg in quickstart blog; do
	epochs=$blogEpochs
	[ "$cfg" = quickstart ] && epochs=$qsEpochs
	for r in $(seq "$rounds"); do
		for w in auto 0 1 2 3 4; do
			out=$d/$cfg-$w-$r
			"$d/train" --config "configs/$cfg.yaml" --workers "$w" --epochs "$epochs" --out "$out" --train.progress none >"$out.log" 2>&1 ||
				{ echo "$cfg workers $w: failed:"; tail -5 "$out.log"; exit 1; }
			rates=$(jq -r '.img_per_s | floor' "$out/metrics.jsonl" | paste -sd' ')
			mean=$(jq -s 'map(.img_per_s) | add / length | floor' "$out/metrics.jsonl")
			hash=$(sha256sum "$out/$(jq -r .checkpoint "$out/latest.json")/model.safetensors" | cut -c1-12)
			printf '%s\t%s\t%s\t%s\t%s\n' "$cfg" "$w" "$r" "$mean" "$hash" >>"$d/results.tsv"
			printf '%-10s workers %-4s round %d: img/s per epoch %s (mean %s), weights %s\n' "$cfg" "$w" "$r" "$rates" "$mean" "$hash"
			[ "$w" = auto ] && grep -o 'loader: auto [a-z].*' "$out.log" | grep -v '^loader: auto workers' | sed 's/^/    /'
		done
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "mean img/s over the rounds (auto's first epoch includes its inline measuring steps):"
for cfg in quickstart blog; do
	line="$cfg:"
	for w in auto 0 1 2 3 4; do
		line+=$(awk -F'\t' -v c="$cfg" -v w="$w" '$1 == c && $2 == w { s += $4; n++ } END { printf "  %s %d", w, s / n }' "$d/results.tsv")
	done
	echo "$line"
done
