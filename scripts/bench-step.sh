#!/bin/sh
# Side-by-side step time and peak RSS of stoke and PyTorch on the reference
# CNN (configs/ref-cnn.yaml), in alternating rounds so that both see the same
# machine load, and the ratio stoke/PyTorch per round and as a median.
# MODEL=resnet20 (32 px, batch 128) or MODEL=resnet18-cifar (cifar stem, 32 px,
# batch 64) benchmarks those instead.
#
# usage: [MODEL=ref-cnn] scripts/bench-step.sh [rounds=3] [threads="1 2"] [steps=10]
# needs: go, /usr/bin/python3 with torch (Debian: apt-get install python3-torch)
set -eu
rounds=${1:-3}
threads=${2:-"1 2"}
steps=${3:-10}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${STOKE_TRAIN:-$tmp/train}   # STOKE_TRAIN: a train binary already built
[ -n "${STOKE_TRAIN:-}" ] || go build -o "$bin" ./cmd/train
cfg=configs/ref-cnn.yaml
targs="--conv 32p,64p,128"
case ${MODEL:-ref-cnn} in
ref-cnn) ;;
resnet20)
	cfg=$tmp/resnet20.yaml
	printf 'data: {image_size: 32, batch_size: 128}\nmodel: {arch: resnet20}\n' > "$cfg"
	targs="--arch resnet20 --size 32 --batch 128" ;;
resnet18-cifar)
	cfg=$tmp/resnet18-cifar.yaml
	printf 'data: {image_size: 32, batch_size: 64}\nmodel: {arch: resnet18, stem: cifar}\n' > "$cfg"
	targs="--arch resnet18 --stem cifar --size 32 --batch 64" ;;
*) echo "MODEL must be ref-cnn, resnet20 or resnet18-cifar" >&2; exit 2 ;;
esac
"$bin" bench-step --config "$cfg" --threads 1 --steps 1 --warmup 0 | head -2  # which GEMM, which model
out=$tmp/rows
: > "$out"
r=1
while [ "$r" -le "$rounds" ]; do
	for t in $threads; do
		ours=$("$bin" bench-step --config "$cfg" --threads "$t" --steps "$steps" --json)
		theirs=$(/usr/bin/python3 scripts/bench_step_pytorch.py --threads "$t" --steps "$steps" $targs)
		echo "$r $t $ours $theirs" >> "$out"
	done
	r=$((r + 1))
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, t, rest = line.split(" ", 2)
    ours, theirs = rest.strip().split("} {")
    o, p = json.loads(ours + "}"), json.loads("{" + theirs)
    rows.setdefault(int(t), []).append((o, p))
    print(f"round {r} threads {t}: ms/step stoke {o['ms_per_step']:.1f} PyTorch {p['ms_per_step']:.1f} "
          f"(ratio {o['ms_per_step']/p['ms_per_step']:.3f}); best step {o['best_ms']:.1f} vs {p['best_ms']:.1f} "
          f"(ratio {o['best_ms']/p['best_ms']:.3f}); CPU/step {o['cpu_ms_per_step']:.0f} vs {p['cpu_ms_per_step']:.0f}; "
          f"peak RSS {o['peak_rss_bytes']/2**20:.0f} vs {p['peak_rss_bytes']/2**20:.0f} MiB "
          f"(ratio {o['peak_rss_bytes']/p['peak_rss_bytes']:.3f})")
med = lambda rs, k: statistics.median(o[k] / p[k] for o, p in rs)
for t, rs in sorted(rows.items()):
    print(f"threads {t}: median stoke/PyTorch over {len(rs)} rounds: ms/step {med(rs, 'ms_per_step'):.3f}, "
          f"best step {med(rs, 'best_ms'):.3f}, CPU/step {med(rs, 'cpu_ms_per_step'):.3f}, "
          f"peak RSS {med(rs, 'peak_rss_bytes'):.3f}")
PY
