#!/usr/bin/env bash
# Reproduces the "How 3 lines of PyTorch made my training ~5x faster" table on this machine:
# the baseline, each switch alone and all three, stoke and PyTorch side by side.
#
# Duration and GPU: on the CPU (the default; no GPU needed) about 2 min on a quiet 2-core machine
# and 355 s observed on a loaded one, plus the Go build and, the first time, the dataset's
# generation; the smallest, `scripts/bench-blog.sh --epochs 1 --rounds 1`, took 7.5 min on a
# machine loaded 17-36 (generation and build included). The GPU run (--device cuda, below) needs
# an NVIDIA GPU and has not been done yet.
#
#   scripts/bench-blog.sh                       # CPU, builds ./cmd/train (needs Go)
#   scripts/bench-blog.sh --epochs 2 --rounds 3 # any `train bench` flag passes through
#
# On a GPU machine without Go, with the trainer built here by scripts/gpu-check.sh:
#   STOKE_TRAIN=.gpu/train scripts/bench-blog.sh --device cuda --python python3
#
# PyTorch runs at its best (scripts/bench-env.sh installs OpenBLAS when it can; `train bench`
# gives the PyTorch process its own OpenBLAS core detection and a malloc that keeps memory) and the
# report names torch's BLAS, the CPU, the load and each run's CPU time, warning when the machine
# was busy or PyTorch not at its best. PYTHON (default /usr/bin/python3) is the python checked.
#
# Writes runs/bench/{bench.md,bench.json,bench.csv,chart.png,chart.svg,runs/*/trace.json}.
set -euo pipefail
echo "bench-blog.sh: CPU by default (no GPU needed); about 2 min on a quiet 2-core machine (120 s measured with the build), 355 s seen on a loaded one"
cd "$(dirname "$0")/.."
. scripts/bench-env.sh
machine_quiet
stoke_best
python=${PYTHON:-/usr/bin/python3}
if "$python" -c 'import torch, torchvision' 2>/dev/null; then
  torch_best "$python"
fi
bin=${STOKE_TRAIN:-}
if [ -z "$bin" ]; then
  mkdir -p .bin
  go build -o .bin/train ./cmd/train
  bin=.bin/train
fi
exec "$bin" bench --config configs/blog.yaml "$@"
