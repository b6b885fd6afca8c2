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

PyTorch's side is PyTorch at its best: run it through scripts/bench-env.sh's
torch_env (scripts/bench-data.sh does), so that glibc's malloc keeps freed
memory: as installed it gives each freed batch (38 MB at 224 px) back to
the system, and every batch pays its first-touch page faults again, where
stoke's loader reuses its batch buffers. The workers persist across epochs
(persistent_workers), as stoke's do, and each line has the main process's
page faults per image. Each line also records how busy the machine was
(other processes' cores, CPU time beside wall time) and the summary the CPU.
CPU only, no GPU; bench-data.sh states the duration.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch
import torchvision.datasets as datasets
import torchvision.transforms as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_machine_pytorch as machine  # noqa: E402


def torch_rate(root, size, workers, images, jitter, batch=64):
    tf = T.Compose([
        T.RandomResizedCrop(size),
        T.RandomHorizontalFlip(),
        T.ColorJitter(*jitter),
        T.ToTensor(),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(os.path.join(root, "train"), tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                                     persistent_workers=workers > 0)
    seen, start, f0 = -1, None, 0
    while True:
        for x, _ in dl:
            if seen < 0:
                seen, start = 0, time.perf_counter()
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            else:
                seen += x.shape[0]
            if seen >= images:
                faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / seen
                return seen / (time.perf_counter() - start), faults


def go_rate(binary, config, root, size, workers, images, extra):
    cmd = [binary, "bench-data", "--config", config, "--data", root, "--image-size", str(size),
           "--workers", str(workers), "--images", str(images), "--json", "--stages=false"] + extra
    if workers == 0:
        cmd = ["taskset", "-c", "0"] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


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
    desc = machine.describe()
    for line in machine.summary(desc):
        print("# " + line, file=sys.stderr)
    res, busy = {}, []  # (size, workers) -> list of (go, torch); why the machine was busy
    for r in range(a.rounds):
        for size in sizes:
            for w in workers:
                threads = 1 if w == 0 else min(w, os.cpu_count())

                def run_torch():
                    if w == 0:
                        os.sched_setaffinity(0, {min(all_cpus)})
                        torch.set_num_threads(1)
                    try:
                        load = machine.Load()
                        rate, faults = torch_rate(a.data, size, w, a.images, jitter)
                        return rate, faults, load.stop()
                    finally:
                        os.sched_setaffinity(0, all_cpus)

                def run_go():
                    return go_rate(a.train, a.config, a.data, size, w, a.images, extra)

                if r % 2 == 0:
                    gl = run_go(); t, faults, tl = run_torch()
                else:
                    t, faults, tl = run_torch(); gl = run_go()
                g = gl["img_per_s"]
                res.setdefault((size, w), []).append((g, t))
                for impl, why in (("stoke", gl.get("busy", "")), ("torch", machine.busy(tl, threads))):
                    if why:
                        busy.append(f"round {r}, {size} px, {w} workers, {impl}: {why}")
                print(json.dumps({"round": r, "image_size": size, "workers": w, "stoke_img_per_s": round(g, 1),
                                  "torch_img_per_s": round(t, 1), "ratio": round(g / t, 3),
                                  "stoke_others_cores": round(gl.get("others_cores", -1), 2),
                                  "torch_others_cores": round(tl["others_cores"], 2),
                                  "torch_cpu_seconds": round(tl["cpu_seconds"], 2), "torch_wall_seconds": round(tl["wall_seconds"], 2),
                                  "torch_page_faults_per_image": round(faults, 1)}), flush=True)
    print("\nimage_size workers  stoke img/s  torch img/s  stoke/torch (median of rounds)")
    for (size, w), v in sorted(res.items()):
        print(f"{size:10d} {w:7d} {statistics.median(g for g, _ in v):12.0f} {statistics.median(t for _, t in v):12.0f}"
              f"  {statistics.median(g / t for g, t in v):.2f}x")
    for size in sizes:
        if (size, 0) in res and (size, 2) in res:
            sc = [g2 / g0 for (g0, _), (g2, _) in zip(res[(size, 0)], res[(size, 2)])]
            st = [t2 / t0 for (_, t0), (_, t2) in zip(res[(size, 0)], res[(size, 2)])]
            print(f"{size} px: 2 workers / 0 workers: stoke {statistics.median(sc):.2f}x, torch {statistics.median(st):.2f}x")
    print(f"machine: {desc['cpu']} (family {desc['cpu_family']}, model {desc['cpu_model']}), {desc['cpus']} CPUs, "
          f"SIMD {' '.join(desc['simd'])}; PyTorch {desc['torch']}")
    for w in desc["not_at_best"]:
        print(f"WARNING: PyTorch is not at its best: {w}")
    for b in busy:
        print(f"WARNING: machine busy: {b}")
    if busy:
        print("WARNING: the machine was busy: these rates are not this machine's speed; re-run on a quiet machine")


if __name__ == "__main__":
    main()
