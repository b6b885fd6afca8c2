#!/usr/bin/python3
"""Checks stoke's optimizers against torch.optim over a few training steps.

    scripts/optim_parity_pytorch.py DIR [-v]

DIR is what model's TestOptimizerParityWithPyTorch writes: case.json (arch, stem, classes, the
optimizer's settings, each step's lr and number of valid rows), state.safetensors (the initial
weights and BatchNorm buffers, torchvision's names), batch.safetensors (x0, labels0, x1, ...: one
batch a step) and out.safetensors (stoke's weights, buffers and optimizer state after the steps).
This script loads the initial state with strict=True into the network scripts/parity_pytorch.py
builds, trains the same steps with torch.optim.SGD (momentum, nesterov) or torch.optim.AdamW, with
the parameters in two groups when weight decay spares BatchNorm parameters and biases (every 1-d
tensor, as torchvision's references split them), and nn.CrossEntropyLoss(label_smoothing), in
float32 and float64, and compares every tensor: weights, buffers, momentum_buffer or exp_avg and
exp_avg_sq, and the step count. The error of a tensor is max|stoke - PyTorch| / max|PyTorch|, the
smaller of the two against float32 and float64; exit 1 past the case's tolerance.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from parity_pytorch import build, load_case  # noqa: E402


def train(case, state, batch, dtype):
    net = build(case["arch"], case["stem"], case["classes"])
    net.load_state_dict(state, strict=True)
    net = net.to(dtype).train()
    named = list(net.named_parameters())
    wd = case["weight_decay"]
    if case["no_decay_norm_and_bias"]:
        groups = [{"params": [p for _, p in named if p.ndim > 1], "weight_decay": wd},
                  {"params": [p for _, p in named if p.ndim <= 1], "weight_decay": 0.0}]
    else:
        groups = [{"params": [p for _, p in named], "weight_decay": wd}]
    if case["optimizer"] == "adamw":
        b1, b2 = case["betas"]
        opt = torch.optim.AdamW(groups, lr=case["lrs"][0], betas=(b1 or 0.9, b2 or 0.999), eps=case["eps"] or 1e-8)
    else:
        opt = torch.optim.SGD(groups, lr=case["lrs"][0], momentum=case["momentum"], nesterov=case["nesterov"])
    lossf = nn.CrossEntropyLoss(label_smoothing=case["label_smoothing"])
    for k, (lr, n) in enumerate(zip(case["lrs"], case["ns"])):
        for g in opt.param_groups:
            g["lr"] = lr
        x = batch[f"x{k}"].to(dtype)[:n]
        y = batch[f"labels{k}"].long()[:n]
        opt.zero_grad()
        lossf(net(x), y).backward()
        opt.step()
    out = {name: p.detach() for name, p in named}
    for name, b in net.named_buffers():
        out[name] = b
    for name, p in named:
        st = opt.state[p]
        if case["optimizer"] == "adamw":
            out[name + ".exp_avg"] = st["exp_avg"]
            out[name + ".exp_avg_sq"] = st["exp_avg_sq"]
        else:
            out[name + ".momentum_buffer"] = st["momentum_buffer"]
    out["optimizer.step"] = torch.tensor([float(len(case["lrs"]))])
    return out


def main():
    case, state, batch, got = load_case(sys.argv[1])
    refs = [train(case, state, batch, dt) for dt in (torch.float32, torch.float64)]
    tol = case["tolerance"]
    worst, worst_name, failed = 0.0, "", []
    for name in sorted(refs[0]):
        if name not in got:
            failed.append(f"{name}: missing from stoke's output")
            continue
        g = got[name].double().reshape(-1)
        if refs[0][name].numel() != g.numel():
            failed.append(f"{name}: shape {tuple(got[name].shape)}, PyTorch {tuple(refs[0][name].shape)}")
            continue
        errs = []
        for rr in refs:
            r = rr[name].double().reshape(-1)
            errs.append((r - g).abs().max().item() / max(r.abs().max().item(), 1e-12))
        err = min(errs)
        if err > worst:
            worst, worst_name = err, name
        if "-v" in sys.argv:
            print(f"  {name}: {errs[0]:.2e} of PyTorch float32, {errs[1]:.2e} of float64")
        if not err <= tol:
            failed.append(f"{name}: max abs error {err:.2e} x max|ref| > {tol:g}")
    extra = sorted(set(got) - set(refs[0]))
    if extra:
        failed.append(f"stoke has tensors PyTorch lacks: {extra[:5]}")
    print(f"{case['arch']} {case['optimizer']}{' nesterov' if case.get('nesterov') else ''}, {len(case['lrs'])} steps: "
          f"{len(refs[0])} tensors, worst error {worst:.2e} of max|ref| ({worst_name}; tolerance {tol:g})")
    for f in failed:
        print("  FAIL", f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
