#!/usr/bin/python3
"""Checks stoke's optimizers against torch.optim over a few training steps.

    scripts/optim_parity_pytorch.py DIR [-v]

DIR is what model's TestOptimizerParityWithPyTorch writes: case.json (arch, stem, classes, the
optimizer's settings, each step's lr and number of valid rows, tolerance, band), batch.safetensors
(x0, labels0, x1, ...: one batch a step), and for each step k = 0, 1, ...:
  state<k>.safetensors   stoke's weights, BatchNorm buffers and optimizer state after k steps
                         (state0: the initial ones), torchvision's and torch.optim's names
  grad<k>.safetensors    the gradient stoke took step k with, at state<k>'s weights on batch k:
                         train_logits, loss, grad.<param>, after.<bn buffer>, as
                         scripts/parity_pytorch.py reads them
  branch<k>.safetensors  the ReLU and max-pool branch of that step

Each step is checked in two halves, so that what is compared is the formulas, never a trajectory
(three steps of a ReLU net on its own gradients are chaotic: a pre-activation within rounding of 0
takes either side on different machines, and the runs part):
  1. the gradient: grad<k> against float64 on stoke's branch at state<k>'s weights, as
     scripts/parity_pytorch.py checks one step (the loss with label smoothing, the short batch's
     mean, the BatchNorm buffers after the step, which state<k+1>'s must equal too);
  2. the update: torch.optim.SGD (momentum, nesterov) or torch.optim.AdamW, with the parameters in
     two groups when weight decay spares BatchNorm parameters and biases (every 1-d tensor, as
     torchvision's references split them), starts from state0's weights and steps on stoke's
     gradients grad0, grad1, ...; after step k every weight and optimizer state tensor
     (momentum_buffer or exp_avg and exp_avg_sq, the step count) must match state<k+1>.
The update runs in float32 and float64; a tensor's error is max|stoke - PyTorch| / max|PyTorch|,
the smaller of the two. Exit 1 when any tensor of any step is past the case's tolerance.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from parity_pytorch import build, check, read_safetensors  # noqa: E402

OPT_SUFFIXES = (".momentum_buffer", ".exp_avg", ".exp_avg_sq")


def weights(state):
    """A state<k> file's state_dict: without the optimizer's tensors."""
    return {k: v for k, v in state.items() if not k.endswith(OPT_SUFFIXES) and k != "optimizer.step"}


def updates(case, state0, grads, dtype):
    """torch.optim stepping on stoke's gradients from state0: each step's weights and state."""
    net = build(case["arch"], case["stem"], case["classes"])
    net.load_state_dict(weights(state0), strict=True)
    net = net.to(dtype)
    named = list(net.named_parameters())
    wd = case["weight_decay"]
    if case["no_decay_norm_and_bias"]:
        groups = [{"params": [p for _, p in named if p.ndim > 1], "weight_decay": wd},
                  {"params": [p for _, p in named if p.ndim <= 1], "weight_decay": 0.0}]
    else:
        groups = [{"params": [p for _, p in named], "weight_decay": wd}]
    if case["optimizer"] == "adamw":
        b1, b2 = case["betas"]
        default = not (b1 or b2 or case["eps"])  # stoke's model.Options: all three 0 means PyTorch's
        opt = torch.optim.AdamW(groups, lr=case["lrs"][0], betas=(0.9, 0.999) if default else (b1, b2),
                                eps=1e-8 if default else case["eps"])
    else:
        opt = torch.optim.SGD(groups, lr=case["lrs"][0], momentum=case["momentum"], nesterov=case["nesterov"])
    out = []
    for k, (lr, g) in enumerate(zip(case["lrs"], grads)):
        for grp in opt.param_groups:
            grp["lr"] = lr
        for name, p in named:
            p.grad = g["grad." + name].to(dtype).reshape(p.shape)
        opt.step()
        st = {name: p.detach().clone() for name, p in named}
        for name, p in named:
            s = opt.state[p]
            if case["optimizer"] == "adamw":
                st[name + ".exp_avg"] = s["exp_avg"].clone()
                st[name + ".exp_avg_sq"] = s["exp_avg_sq"].clone()
            else:
                st[name + ".momentum_buffer"] = s["momentum_buffer"].clone()
        st["optimizer.step"] = torch.tensor([float(k + 1)])
        out.append(st)
    return out


def compare(refs, got, tol, verbose):
    """Each tensor of refs[0] against got, the smaller error over refs: (worst, its name, failures)."""
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
        if verbose:
            print(f"    {name}: " + ", ".join(f"{e:.2e}" for e in errs))
        if not err <= tol:
            failed.append(f"{name}: max abs error {err:.2e} x max|ref| > {tol:g}")
    extra = sorted(set(got) - set(refs[0]))
    if extra:
        failed.append(f"stoke has tensors PyTorch lacks: {extra[:5]}")
    return worst, worst_name, failed


def main():
    d, verbose = sys.argv[1], "-v" in sys.argv
    case = json.load(open(f"{d}/case.json"))
    batch = read_safetensors(f"{d}/batch.safetensors")
    steps = len(case["lrs"])
    states = [read_safetensors(f"{d}/state{k}.safetensors") for k in range(steps + 1)]
    grads = [read_safetensors(f"{d}/grad{k}.safetensors") for k in range(steps)]
    tol = case["tolerance"]
    ups = [updates(case, states[0], grads, dt) for dt in (torch.float32, torch.float64)]
    worst, failed = 0.0, []
    for k, (lr, n) in enumerate(zip(case["lrs"], case["ns"])):
        branch = {name: v.double() for name, v in read_safetensors(f"{d}/branch{k}.safetensors").items()}
        got = dict(grads[k])
        got["train_logits"] = got["train_logits"][:n]  # stoke's padded rows follow the n valid ones
        ref, lines, w, f = check(case, weights(states[k]), batch[f"x{k}"][:n], batch[f"labels{k}"].long()[:n],
                                 got, branch, skip=("eval_logits",), verbose=verbose)
        worst = max(worst, w)
        print(f"step {k + 1} ({n} rows, lr {lr:g}): gradient: {lines[0]}")
        for line in lines[1:]:
            print(line)
        failed += [f"step {k + 1}, gradient: {x}" for x in f]
        # The update, and the trained model's BatchNorm buffers, which the probe's must equal.
        after = weights(states[k + 1])
        bufs = {name: ref["after." + name] for name in after if "after." + name in ref}
        w, wname, f = compare([{**u[k], **bufs} for u in ups], states[k + 1], tol, verbose)
        worst = max(worst, w)
        print(f"  update: {len(ups[0][k]) + len(bufs)} tensors (weights, optimizer state, BatchNorm buffers), "
              f"worst error {w:.2e} of max|ref| ({wname}; tolerance {tol:g})")
        failed += [f"step {k + 1}, update: {x}" for x in f]
    print(f"{case['arch']} {case['optimizer']}{' nesterov' if case.get('nesterov') else ''}, {steps} steps on stoke's "
          f"gradients: worst error {worst:.2e} of max|ref| (tolerance {tol:g})")
    for f in failed:
        print("  FAIL", f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
