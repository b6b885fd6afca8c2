#!/usr/bin/python3
"""The PyTorch side of `train bench`: the same experiment, dataset, transforms and CNN.

Called by `train bench` with --spec JSON (bench.Spec: data folder, image size, batch size, epochs,
workers, device, augmentation, conv blocks, optimizer, variants). Each variant runs in a child
process of its own (so its peak RSS is its own) and prints one JSON object on stdout with the
fields of bench.Result, with what PyTorch ran on (bench_machine_pytorch.describe: BLAS, CPU
capability, what keeps it from its best) and how busy the machine was (CPU time, other processes'
cores). `train bench` runs it in PyTorch's best environment (bench.TorchEnv). Each epoch prints a
line on stderr, so that a run of a minute or more is not silent. No GPU needed (--device cuda in the
spec uses one). Needs Debian's python3-torch and python3-torchvision (1.13 / 0.14).
"""
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import warnings

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_machine_pytorch as machine  # noqa: E402

# The post's 8 workers on a machine of fewer cores are the experiment, not a mistake.
warnings.filterwarnings("ignore", message="This DataLoader will create")


def make_model(spec, classes):
    layers, cin = [], 3
    for block in spec["conv"]:
        k = block["kernel"]
        layers += [nn.Conv2d(cin, block["channels"], k, padding=k // 2), nn.ReLU()]
        if block.get("pool"):
            layers.append(nn.MaxPool2d(2))
        cin = block["channels"]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def lr_at(step, spec, steps_per_epoch):
    """The schedule of stoke's trainer: linear warm-up, then cosine to min_lr."""
    o = spec["optim"]
    total = spec["epochs"] * steps_per_epoch
    warm = min(round(o["WarmupEpochs"] * steps_per_epoch), total)
    if step < warm:
        return o["LR"] * (step + 1) / warm
    if total - warm <= 1:
        return o["LR"]
    p = min(max((step - warm) / (total - warm - 1), 0), 1)
    return o["MinLR"] + (o["LR"] - o["MinLR"]) * 0.5 * (1 + math.cos(math.pi * p))


def run_variant(spec, v):
    load = machine.Load()
    torch.set_num_threads(os.cpu_count())  # as stoke uses every core; a torch built without OpenMP stays at 1
    torch.manual_seed(spec["seed"])
    a = spec["augment"]
    tf = T.Compose([
        T.RandomResizedCrop(spec["image_size"], scale=tuple(a["Scale"]), ratio=tuple(a["Ratio"])),
        T.RandomHorizontalFlip(a["HFlip"]),
        T.ColorJitter(a["Brightness"], a["Contrast"], a["Saturation"]),
        T.ToTensor(),
        T.Normalize(a["Mean"], a["Std"]),
    ])
    ds = torchvision.datasets.ImageFolder(spec["data"] + "/train", tf)
    kw = dict(batch_size=spec["batch_size"], shuffle=True, num_workers=v["workers"],
              pin_memory=v["pin_memory"] and spec["device"] == "cuda")
    if v["workers"] > 0:
        kw["prefetch_factor"] = spec["prefetch"]
    loader = torch.utils.data.DataLoader(ds, **kw)
    device = torch.device(spec["device"])
    model = make_model(spec, len(ds.classes)).to(device)
    o = spec["optim"]
    opt = torch.optim.SGD(model.parameters(), lr=o["LR"], momentum=o["Momentum"], weight_decay=o["WeightDecay"])
    loss_fn = nn.CrossEntropyLoss()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    wait = copy = compute = train = 0.0
    step, images, loss_val = 0, 0, float("nan")
    for epoch in range(spec["epochs"]):
        model.train()
        t_epoch = time.perf_counter()
        it = iter(loader)
        while True:
            t0 = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            x = x.to(device, non_blocking=v["non_blocking"])
            y = y.to(device, non_blocking=v["non_blocking"])
            if not v["non_blocking"]:
                sync()
            t2 = time.perf_counter()
            for g in opt.param_groups:
                g["lr"] = lr_at(step, spec, len(loader))
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            loss_val = loss.item()  # syncs, as a training loop that logs its loss does
            t3 = time.perf_counter()
            wait, copy, compute = wait + t1 - t0, copy + t2 - t1, compute + t3 - t2
            step, images = step + 1, images + x.shape[0]
        train += time.perf_counter() - t_epoch
        print(f"pytorch {v['name']}: epoch {epoch + 1}/{spec['epochs']} {time.perf_counter() - t_epoch:.1f} s",
              file=sys.stderr, flush=True)
    del it, loader  # the workers exit, so that their CPU time is counted
    load = load.stop()
    d = machine.describe()
    return {
        "name": v["name"], "workers": v["workers"], "pin_memory": v["pin_memory"], "non_blocking": v["non_blocking"],
        "train_seconds": train, "s_per_epoch": train / spec["epochs"], "img_per_s": images / train,
        "wait_share": wait / train, "copy_share": copy / train, "compute_share": compute / train,
        "device_busy": compute / train, "final_loss": loss_val,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "note": "PyTorch %s, torchvision %s, %d threads" % (torch.__version__, torchvision.__version__, torch.get_num_threads()),
        "cpu_seconds": load["cpu_seconds"], "others_cores": load["others_cores"], "busy": machine.busy(load),
        "blas_kind": d["blas_kind"], "openblas_core": d["openblas_core"], "cpu_capability": d["cpu_capability"],
        "not_at_best": d["not_at_best"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--spec", required=True, help="the experiment, as JSON (bench.Spec)")
    ap.add_argument("--only", type=int, default=-1, help="run only this variant, in this process")
    args = ap.parse_args()
    spec = json.loads(args.spec)
    if args.only >= 0:
        print(json.dumps(run_variant(spec, spec["variants"][args.only])), flush=True)
        return
    for i in range(len(spec["variants"])):
        out = subprocess.run([sys.executable, __file__, "--spec", args.spec, "--only", str(i)],
                             stdout=subprocess.PIPE, check=True, text=True)
        sys.stdout.write(out.stdout)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
