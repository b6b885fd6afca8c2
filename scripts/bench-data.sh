#!/bin/sh
# Loader throughput, stoke against PyTorch's DataLoader, on 256x256 q90 JPEGs,
# at 64 and 224 px output, in alternating rounds (see bench_data_pytorch.py).
#
#   scripts/bench-data.sh [ROUNDS=3] [IMAGES=1280]
#
# Duration: CPU only, no GPU. About a minute (54 s measured) on a quiet 2-core machine with
# the defaults (the first run adds ~15 s to generate 2000 images and the Go build);
# `scripts/bench-data.sh 1 128`, the smallest, well under a minute. A loaded
# machine takes several times as long (the smallest took 4 min, build and
# gen-data included, at a 1-minute load of 17-19; the load is printed and warned of).
#
# Needs a python with torch and torchvision: $PYTHON, default /usr/bin/python3
# (Debian: apt-get install python3-torch python3-torchvision) and, for the
# fast decoder, libturbojpeg0. PyTorch runs at its best (scripts/bench-env.sh:
# OpenBLAS, its own core detection, a malloc that keeps freed batches). The
# ratios are taken side by side within each round, and every line records the
# other processes' cores: a loaded machine still skews them, and is warned of.
set -eu
echo "bench-data.sh: CPU only, no GPU; about a minute with the defaults on a quiet 2-core machine (54 s measured), plus the first generation of its images"
cd "$(dirname "$0")/.."
. scripts/bench-env.sh
rounds=${1:-3}
images=${2:-1280}
python=${PYTHON:-/usr/bin/python3}
work=${BENCH_DATA_DIR:-/tmp/stoke-bench-data}  # 2000 training images: more than one measurement reads, so no epoch boundary falls inside it
if ! "$python" -c 'import torch, torchvision' 2>/dev/null; then
	echo "bench-data.sh: $python cannot import torch and torchvision (Debian: apt-get install python3-torch python3-torchvision; or set PYTHON)" >&2
	exit 1
fi
machine_quiet
torch_best "$python"
stoke_best
mkdir -p "$work"
go build -o "$work/train" ./cmd/train
[ -d "$work/ds256/train/00_red_circle" ] && [ "$(ls "$work/ds256/train/00_red_circle" | wc -l)" -ge 200 ] || "$work/train" gen-data --out "$work/ds256" --size 256 --quality 90 --classes 10 --train 200 --val 10
"$work/train" bench-data --config scripts/bench-data.yaml --data "$work/ds256" --image-size 64 --images "$images"
"$work/train" bench-data --config scripts/bench-data.yaml --data "$work/ds256" --image-size 224 --images "$images"
torch_env "$python" scripts/bench_data_pytorch.py --train "$work/train" --config scripts/bench-data.yaml \
	--data "$work/ds256" --rounds "$rounds" --images "$images"
