#!/usr/bin/env bash
# Reproduces the "How 3 lines of PyTorch made my training ~5x faster" table on this machine:
# the baseline, each switch alone and all three, stoke and PyTorch side by side.
#
#   scripts/bench-blog.sh                       # CPU, builds ./cmd/train (needs Go)
#   scripts/bench-blog.sh --epochs 2 --rounds 3 # any `train bench` flag passes through
#
# On a GPU machine without Go, with the trainer built here by scripts/gpu-check.sh:
#   STOKE_TRAIN=.gpu/train scripts/bench-blog.sh --device cuda --python python3
#
# Writes runs/bench/{bench.md,bench.json,bench.csv,chart.png,chart.svg,runs/*/trace.json}.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STOKE_TRAIN:-}
if [ -z "$bin" ]; then
  mkdir -p .bin
  go build -o .bin/train ./cmd/train
  bin=.bin/train
fi
exec "$bin" bench --config configs/blog.yaml "$@"
