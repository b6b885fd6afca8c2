#!/bin/sh
# Loader throughput, stoke against PyTorch's DataLoader, on 256x256 q90 JPEGs,
# at 64 and 224 px output, in alternating rounds (see bench_data_pytorch.py).
#   scripts/bench-data.sh [ROUNDS]
# Needs a python with torch and torchvision: $PYTHON, default /usr/bin/python3
# (Debian: apt-get install python3-torch python3-torchvision) and, for the
# fast decoder, libturbojpeg0. Run `uptime` beside it: the ratios are taken
# side by side within each round, but a loaded machine still skews them.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-3}
python=${PYTHON:-/usr/bin/python3}
work=${BENCH_DATA_DIR:-/tmp/stoke-bench-data}  # 2000 training images: more than one measurement reads, so no epoch boundary falls inside it
if ! "$python" -c 'import torch, torchvision' 2>/dev/null; then
	echo "bench-data.sh: $python cannot import torch and torchvision (Debian: apt-get install python3-torch python3-torchvision; or set PYTHON)" >&2
	exit 1
fi
mkdir -p "$work"
go build -o "$work/train" ./cmd/train
[ -d "$work/ds256/train/00_red_circle" ] && [ "$(ls "$work/ds256/train/00_red_circle" | wc -l)" -ge 200 ] || "$work/train" gen-data --out "$work/ds256" --size 256 --quality 90 --classes 10 --train 200 --val 10
"$work/train" bench-data --config scripts/bench-data.yaml --data "$work/ds256" --image-size 64
"$work/train" bench-data --config scripts/bench-data.yaml --data "$work/ds256" --image-size 224
"$python" scripts/bench_data_pytorch.py --train "$work/train" --config scripts/bench-data.yaml \
	--data "$work/ds256" --rounds "$rounds"
