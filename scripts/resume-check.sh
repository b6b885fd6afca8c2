#!/bin/sh
# The command-line check that an interrupted run resumes exactly: trains CONFIG once through, then
# again in a second folder, sends that one a Ctrl-C (SIGINT) in the middle of epoch EPOCH (counted
# from 1, as the progress lines count), resumes it with `train --resume`, and compares the two
# runs' last checkpoints (model.safetensors, optimizer.safetensors: sha256) and their metrics.jsonl
# (every field but the timings). Exit 0 when both match, 1 when anything differs.
#
# With no arguments it checks a progressive-resizing resnet50 (configs/imagenet-resnet50-ffcv.yaml on
# 4 generated classes of 8 train and 4 val images, batch 8, 4 epochs with the side ramping 96 -> 128
# -> 160 -> 192 px, eval at 224 px), interrupted in epoch 3 (160 px, the middle of the ramp). Other
# settings go after the config as flags (`--model.arch resnet18`); the run folders are temporary and
# removed at the end.
#
# Duration: CPU only. The default took 2.5 minutes on a quiet 2-core machine (three runs of a
# resnet50 on 32 images; 2026-12-03) plus the Go build, and peaks at about 6.5 GB RSS.
#
# usage: scripts/resume-check.sh [CONFIG [EPOCH [FLAGS...]]]
# needs: go, /usr/bin/python3 (the comparison of metrics.jsonl)
set -eu
cd "$(dirname "$0")/.."
if [ $# -ge 1 ]; then cfg=$1; shift; else cfg=configs/imagenet-resnet50-ffcv.yaml; fi
if [ $# -ge 1 ]; then epoch=$1; shift; else epoch=3; fi
if [ "$cfg" = configs/imagenet-resnet50-ffcv.yaml ] && [ $# -eq 0 ]; then
	set -- --epochs 4 --batch-size 8 --lr 0.002 --optim.warmup_epochs 1 --workers 2 \
		--data.synthetic.classes 4 --data.synthetic.train 8 --data.synthetic.val 4 \
		--data.progressive.start 96 --data.progressive.end 192 \
		--data.progressive.start_epoch 0 --data.progressive.end_epoch 3
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${STOKE_TRAIN:-$tmp/train} # STOKE_TRAIN: a train binary already built
[ -n "${STOKE_TRAIN:-}" ] || go build -o "$bin" ./cmd/train

echo "== 1/3: $cfg $*, uninterrupted ($tmp/full)"
"$bin" --config "$cfg" --out "$tmp/full" "$@" > "$tmp/full.log" 2>&1 || { cat "$tmp/full.log"; exit 1; }
grep -E '^epoch ' "$tmp/full.log" || true

echo "== 2/3: the same in $tmp/cut, Ctrl-C (SIGINT) once epoch $epoch has begun"
"$bin" --config "$cfg" --out "$tmp/cut" "$@" > "$tmp/cut.log" 2>&1 &
pid=$!
# Its first progress line of epoch EPOCH ("epoch 3/4 step 1/4 ..."; train.progress must not be
# off): past the evaluation of the epoch before and the rebuild at the new side, inside the epoch.
until grep -q "^epoch $epoch/[0-9]* step " "$tmp/cut.log" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null; do
	sleep 0.2
done
kill -INT "$pid" 2>/dev/null || true
rc=0
wait "$pid" || rc=$?
grep -E '^epoch |interrupt|--resume' "$tmp/cut.log" || true
if [ "$rc" != 130 ]; then
	echo "FAIL: the interrupted run exited $rc, want 130 (interrupted, checkpoint written); its log:"
	cat "$tmp/cut.log"
	exit 1
fi
echo "interrupted run: exit 130, latest checkpoint $(cat "$tmp/cut/latest.json")"

echo "== 3/3: train --resume $tmp/cut"
"$bin" --resume "$tmp/cut" > "$tmp/resume.log" 2>&1 || { cat "$tmp/resume.log"; exit 1; }
grep -E '^epoch |resum' "$tmp/resume.log" || true

last() { sed -n 's/.*"checkpoint": *"\([^"]*\)".*/\1/p' "$1/latest.json"; }
fail=0
for f in model.safetensors optimizer.safetensors; do
	a=$(sha256sum < "$tmp/full/$(last "$tmp/full")/$f" | cut -c1-64)
	b=$(sha256sum < "$tmp/cut/$(last "$tmp/cut")/$f" | cut -c1-64)
	if [ "$a" = "$b" ]; then echo "same $f: sha256 $a"; else echo "DIFFERENT $f: $a (uninterrupted) vs $b (resumed)"; fail=1; fi
done
/usr/bin/python3 - "$tmp/full/metrics.jsonl" "$tmp/cut/metrics.jsonl" <<'PY' || fail=1
import json, sys
# what depends on the machine's speed or on how the run was split, not on the numbers
TIMINGS = {"img_per_s", "wait_share", "copy_share", "compute_share", "train_seconds", "eval_seconds",
           "epoch_seconds", "rss_bytes", "peak_rss_bytes", "workers", "auto_workers", "gpu"}
def rows(p):
    out = []
    for line in open(p):
        r = json.loads(line)
        if "epoch" not in r:
            continue
        out.append({k: v for k, v in r.items() if k not in TIMINGS})
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
if a == b:
    print(f"same metrics.jsonl: {len(a)} epochs, sides {[r.get('image_size') for r in a]} (eval {a[-1].get('eval_size')}), val top-1 {[r['val_top1'] for r in a]}")
    sys.exit(0)
print("DIFFERENT metrics.jsonl (timings left out):")
for i, (x, y) in enumerate(zip(a, b)):
    for k in sorted(set(x) | set(y)):
        if x.get(k) != y.get(k):
            print(f"  epoch {i+1} {k}: {x.get(k)} vs {y.get(k)}")
if len(a) != len(b):
    print(f"  {len(a)} epochs vs {len(b)}")
sys.exit(1)
PY
[ "$fail" = 0 ] && echo "PASS: the interrupted and resumed run ends bit-identical to the uninterrupted one" || echo "FAIL"
exit "$fail"
