#!/bin/sh
# Loader throughput, stoke against PyTorch's DataLoader, on 256x256 q90 JPEGs,
# at 64 and 224 px output, in alternating rounds (see bench_data_pytorch.py).
#   scripts/bench-data.sh [ROUNDS]
# Needs /usr/bin/python3 with torch and torchvision (Debian: python3-torch
# python3-torchvision) and, for the fast decoder, libturbojpeg0.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-3}
work=${BENCH_DATA_DIR:-/tmp/stoke-bench-data}  # 2000 training images: more than one measurement reads, so no epoch boundary falls inside it
mkdir -p "$work"
go build -o "$work/train" ./cmd/train
[ -d "$work/ds256/train/00_red_circle" ] && [ "$(ls "$work/ds256/train/00_red_circle" | wc -l)" -ge 200 ] || "$work/train" gen-data --out "$work/ds256" --size 256 --quality 90 --classes 10 --train 200 --val 10
"$work/train" bench-data --config scripts/bench-data.yaml --data "$work/ds256" --image-size 64
"$work/train" bench-data --config scripts/bench-data.yaml --data "$work/ds256" --image-size 224
/usr/bin/python3 scripts/bench_data_pytorch.py --train "$work/train" --config scripts/bench-data.yaml \
	--data "$work/ds256" --rounds "$rounds"
