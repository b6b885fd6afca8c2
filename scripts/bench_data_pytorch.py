#!/usr/bin/python3
"""stoke's data loader against PyTorch's DataLoader, side by side.

Both read the same ImageFolder (DIR/train) with the same transforms:
RandomResizedCrop(S) + RandomHorizontalFlip + ColorJitter(b, c, s) + ToTensor +
Normalize (ImageNet), batch 64, float32 batches. Rounds alternate between the
two (stoke first in odd rounds, PyTorch first in even ones), because the
machine is shared and noisy: the ratios are taken within each round, and the
median over rounds is reported. 0-worker runs are pinned to CPU 0 on both
sides ("per core"); others may use every CPU.

    scripts/bench_data_pytorch.py --train BIN --config scripts/bench-data.yaml --data DIR

BIN is a `train` binary with the bench-data subcommand. Prints one JSON
object per measurement, then a summary table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torchvision.datasets as datasets
import torchvision.transforms as T


def torch_rate(root, size, workers, images, jitter, batch=64):
    tf = T.Compose([
        T.RandomResizedCrop(size),
        T.RandomHorizontalFlip(),
        T.ColorJitter(*jitter),
        T.ToTensor(),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(os.path.join(root, "train"), tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers)
    seen, start = -1, None
    while True:
        for x, _ in dl:
            if seen < 0:
                seen, start = 0, time.perf_counter()
            else:
                seen += x.shape[0]
            if seen >= images:
                return seen / (time.perf_counter() - start)


def go_rate(binary, config, root, size, workers, images, extra):
    cmd = [binary, "bench-data", "--config", config, "--data", root, "--image-size", str(size),
           "--workers", str(workers), "--images", str(images), "--json", "--stages=false"] + extra
    if workers == 0:
        cmd = ["taskset", "-c", "0"] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["img_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True, help="train binary")
    ap.add_argument("--config", required=True, help="stoke config (its augment.* must match --jitter)")
    ap.add_argument("--data", required=True, help="ImageFolder root (DIR/train is read)")
    ap.add_argument("--sizes", default="64,224")
    ap.add_argument("--workers", default="0,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--images", type=int, default=1280)
    ap.add_argument("--jitter", default="0.4,0.4,0.4", help="ColorJitter brightness,contrast,saturation")
    ap.add_argument("--go-args", default="", help="extra bench-data flags, space-separated")
    a = ap.parse_args()
    jitter = tuple(float(v) for v in a.jitter.split(","))
    sizes = [int(s) for s in a.sizes.split(",")]
    workers = [int(w) for w in a.workers.split(",")]
    extra = a.go_args.split()
    all_cpus = os.sched_getaffinity(0)
    print(f"# torch {torch.__version__}, {os.cpu_count()} CPUs, {a.rounds} rounds x {a.images} images", file=sys.stderr)
    res = {}  # (size, workers) -> list of (go, torch)
    for r in range(a.rounds):
        for size in sizes:
            for w in workers:
                def run_torch():
                    if w == 0:
                        os.sched_setaffinity(0, {min(all_cpus)})
                        torch.set_num_threads(1)
                    try:
                        return torch_rate(a.data, size, w, a.images, jitter)
                    finally:
                        os.sched_setaffinity(0, all_cpus)

                def run_go():
                    return go_rate(a.train, a.config, a.data, size, w, a.images, extra)

                if r % 2 == 0:
                    g = run_go(); t = run_torch()
                else:
                    t = run_torch(); g = run_go()
                res.setdefault((size, w), []).append((g, t))
                print(json.dumps({"round": r, "image_size": size, "workers": w, "stoke_img_per_s": round(g, 1),
                                  "torch_img_per_s": round(t, 1), "ratio": round(g / t, 3)}), flush=True)
    print("\nimage_size workers  stoke img/s  torch img/s  stoke/torch (median of rounds)")
    for (size, w), v in sorted(res.items()):
        print(f"{size:10d} {w:7d} {statistics.median(g for g, _ in v):12.0f} {statistics.median(t for _, t in v):12.0f}"
              f"  {statistics.median(g / t for g, t in v):.2f}x")
    for size in sizes:
        if (size, 0) in res and (size, 2) in res:
            sc = [g2 / g0 for (g0, _), (g2, _) in zip(res[(size, 0)], res[(size, 2)])]
            st = [t2 / t0 for (_, t0), (_, t2) in zip(res[(size, 0)], res[(size, 2)])]
            print(f"{size} px: 2 workers / 0 workers: stoke {statistics.median(sc):.2f}x, torch {statistics.median(st):.2f}x")


if __name__ == "__main__":
    main()
