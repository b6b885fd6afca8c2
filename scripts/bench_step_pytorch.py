#!/usr/bin/python3
"""PyTorch's side of `train bench-step`: the same CNN, batch and SGD step on
random data, timed alone, printing the same JSON line.

usage: bench_step_pytorch.py --threads N [--steps 10] [--warmup 2]
       [--size 64] [--batch 64] [--classes 10] [--conv 32p,64p,128]

--conv lists the conv blocks' channels, "p" marking a 2x2 max-pool after.
--arch resnet18|resnet34 [--stem imagenet|cifar] or resnet20|resnet32|resnet56
builds that ResNet instead (as scripts/parity_pytorch.py does).

The line also says what PyTorch ran on (bench_machine_pytorch.describe: its BLAS, CPU capability,
the CPU, what keeps it from its best) and how busy the machine was (load, CPU and wall time, other
processes' cores, minor page faults per step). Run it through scripts/bench-env.sh's torch_env, as
scripts/bench-step.sh does, for PyTorch at its best.
"""
import argparse
import json
import resource
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_machine_pytorch as machine  # noqa: E402


def build(conv, classes):
    layers, cin = [], 3
    for c in conv.split(","):
        pool = c.endswith("p")
        cout = int(c.rstrip("p"))
        layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True)]
        if pool:
            layers.append(nn.MaxPool2d(2))
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--conv", default="32p,64p,128")
    ap.add_argument("--arch", default="cnn")
    ap.add_argument("--stem", default="imagenet")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                    help="bf16: torch.autocast('cpu', dtype=torch.bfloat16) around the forward and loss (PyTorch's CPU autocast: convs and linears in bf16)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.arch == "cnn":
        net = build(a.conv, a.classes)
    else:
        import parity_pytorch
        net = parity_pytorch.build(a.arch, a.stem, a.classes)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(a.batch, 3, a.size, a.size)
    y = torch.randint(0, a.classes, (a.batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    load = machine.Load()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0, c0 = time.perf_counter(), time.process_time()
    best = float("inf")
    for _ in range(a.steps):
        s0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - s0)
    per = (time.perf_counter() - t0) / a.steps
    cpu = (time.process_time() - c0) / a.steps
    ru = resource.getrusage(resource.RUSAGE_SELF)
    faults = (ru.ru_minflt - f0) / a.steps
    load = load.stop()
    print(json.dumps({"threads": a.threads, "precision": a.precision, "ms_per_step": per * 1e3, "img_per_s": a.batch / per,
                      "peak_rss_bytes": ru.ru_maxrss * 1024, "best_ms": best * 1e3,
                      "cpu_ms_per_step": cpu * 1e3, "minflt_per_step": faults,
                      "busy": machine.busy(load, a.threads), **load, **machine.describe()}))


if __name__ == "__main__":
    main()
