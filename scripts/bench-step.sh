#!/bin/sh
# Side-by-side step time and peak RSS of stoke and PyTorch on the reference
# CNN (configs/ref-cnn.yaml), in alternating rounds so that both see the same
# machine load, and the ratio stoke/PyTorch per round and as a median.
# MODEL=resnet20 (32 px, batch 128), MODEL=resnet18-cifar (cifar stem, 32 px,
# batch 64), MODEL=resnet18-imagenet (imagenet stem, 224 px, batch 16) or
# MODEL=resnet50 (224 px, batch 4) benchmarks those instead (the 224 px ones take
# several minutes: a step is seconds).
#
# Duration: CPU only, no GPU. The defaults (3 rounds, 1 and 2 threads, 10 steps)
# take about a minute on a quiet 2-core machine plus the Go build (a minute when
# nothing is cached); `scripts/bench-step.sh 1 "1" 1`, the smallest, about 20 s.
# A loaded machine takes several times as long (the smallest took 1 min 45 s, build
# included, at a 1-minute load of 18; the load is printed and warned of).
#
# PyTorch runs at its best (scripts/bench-env.sh): OpenBLAS installed when this
# is root with apt-get, its own core detection, a malloc that keeps freed memory.
# When it cannot be, no ratio is printed. Each line records the CPU, torch's BLAS
# and CPU capability, the load and the CPU time beside the wall time.
#
# PRECISION=bf16 runs both at bf16: stoke's train.precision bf16 (the VDPBF16PS
# kernels where the CPU has AVX512_BF16) and PyTorch's CPU autocast to bf16.
#
# WINOGRAD=1 runs stoke with --winograd (train.winograd: its 3x3 stride-1 convs of 32
# channels and more by Winograd's F(2x2, 3x3), fp32 only); PyTorch as always (oneDNN's
# direct convolutions).
#
# usage: [MODEL=ref-cnn] [PRECISION=fp32] [WINOGRAD=1] scripts/bench-step.sh [rounds=3] [threads="1 2"] [steps=10]
# needs: go, /usr/bin/python3 with torch (Debian: apt-get install python3-torch)
set -eu
echo "bench-step.sh: CPU only, no GPU; about a minute (quiet 2-core machine, defaults) plus the build"
rounds=${1:-3}
threads=${2:-"1 2"}
steps=${3:-10}
cd "$(dirname "$0")/.."
. scripts/bench-env.sh
python=/usr/bin/python3
machine_quiet
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
resnet18-imagenet)
	cfg=$tmp/resnet18-imagenet.yaml
	printf 'data: {image_size: 224, batch_size: 16}\nmodel: {arch: resnet18, stem: imagenet}\n' > "$cfg"
	targs="--arch resnet18 --stem imagenet --size 224 --batch 16" ;;
resnet50)
	cfg=$tmp/resnet50.yaml
	printf 'data: {image_size: 224, batch_size: 4}\nmodel: {arch: resnet50, stem: imagenet}\n' > "$cfg"
	targs="--arch resnet50 --stem imagenet --size 224 --batch 4" ;;
*) echo "MODEL must be ref-cnn, resnet20, resnet18-cifar, resnet18-imagenet or resnet50" >&2; exit 2 ;;
esac
wino=
[ "${WINOGRAD:-0}" = 1 ] && wino=--winograd
torch_best "$python"
"$bin" bench-step --config "$cfg" --threads 1 --steps 1 --warmup 0 --precision "${PRECISION:-fp32}" $wino | head -3  # which GEMM, which model, which CPU
out=$tmp/rows
: > "$out"
r=1
while [ "$r" -le "$rounds" ]; do
	for t in $threads; do
		echo "round $r/$rounds, $t thread(s): stoke, then PyTorch" >&2
		printf '%s %s stoke ' "$r" "$t" >> "$out"
		"$bin" bench-step --config "$cfg" --threads "$t" --steps "$steps" --precision "${PRECISION:-fp32}" $wino --json >> "$out"
		printf '%s %s pytorch ' "$r" "$t" >> "$out"
		# OPENBLAS_NUM_THREADS: torch.set_num_threads holds ATen's OpenMP threads, not OpenBLAS's own
		# pool, which otherwise takes every core (seen: "1 thread" PyTorch at 1.93 cores of CPU a step)
		torch_env env OPENBLAS_NUM_THREADS="$t" "$python" scripts/bench_step_pytorch.py --threads "$t" --steps "$steps" --precision "${PRECISION:-fp32}" $targs >> "$out"
	done
	r=$((r + 1))
done
"$python" - "$out" "$TORCH_AT_BEST" <<'PY'
import json, statistics, sys
rows, at_best, busy = {}, sys.argv[2] == "1", []
for line in open(sys.argv[1]):
    r, t, impl, js = line.split(" ", 3)
    rows.setdefault((int(t), int(r)), {})[impl] = json.loads(js)
by_threads = {}
for (t, r), d in sorted(rows.items()):
    o, p = d["stoke"], d["pytorch"]
    by_threads.setdefault(t, []).append((o, p))
    for impl, v in d.items():
        if v.get("busy"):
            busy.append(f"round {r}, {t} thread(s), {impl}: {v['busy']}")
    if p.get("torch_threads", t) != t:
        busy.append(f"round {r}: PyTorch ran {p['torch_threads']} thread(s) where {t} were asked for")
    ratio = lambda k: f" (ratio {o[k] / p[k]:.3f})" if at_best else ""
    print(f"round {r} threads {t}: ms/step stoke {o['ms_per_step']:.1f} PyTorch {p['ms_per_step']:.1f}{ratio('ms_per_step')}; "
          f"best step {o['best_ms']:.1f} vs {p['best_ms']:.1f}{ratio('best_ms')}; "
          f"CPU/step {o['cpu_ms_per_step']:.0f} vs {p['cpu_ms_per_step']:.0f}; "
          f"peak RSS {o['peak_rss_bytes'] / 2**20:.0f} vs {p['peak_rss_bytes'] / 2**20:.0f} MiB{ratio('peak_rss_bytes')}; "
          f"other processes {o['others_cores']:.2f} / {p['others_cores']:.2f} cores, "
          f"PyTorch page faults/step {p['minflt_per_step']:.0f}")
p0 = next(iter(rows.values()))["pytorch"]
o0 = next(iter(rows.values()))["stoke"]
print(f"machine: {o0['cpu']} (family {o0['cpu_family']}, model {o0['cpu_model']}), SIMD {' '.join(o0['simd'] or [])}; "
      f"stoke: {o0['gemm']}{'; winograd' if o0.get('winograd') else ''}; PyTorch {p0['torch']}: BLAS {p0['blas_kind']} {p0['openblas_core']}, "
      f"CPU capability {p0['cpu_capability']}")
med = lambda rs, k: statistics.median(o[k] / p[k] for o, p in rs)
for t, rs in sorted(by_threads.items()):
    if not at_best:
        print(f"threads {t}: no ratio: PyTorch was not at its best (see the warnings above)")
        continue
    print(f"threads {t}: median stoke/PyTorch over {len(rs)} rounds: ms/step {med(rs, 'ms_per_step'):.3f}, "
          f"best step {med(rs, 'best_ms'):.3f}, CPU/step {med(rs, 'cpu_ms_per_step'):.3f}, "
          f"peak RSS {med(rs, 'peak_rss_bytes'):.3f}")
for b in busy:
    print(f"WARNING: machine busy: {b}")
if busy:
    print("WARNING: the machine was busy: these times are not this machine's speed; re-run on a quiet machine")
PY
