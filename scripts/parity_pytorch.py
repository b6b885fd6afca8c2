#!/usr/bin/python3
"""Parity of stoke's ResNets with PyTorch, on the same weights and batch.

    scripts/parity_pytorch.py DIR

DIR holds what stoke computed (float32), written by internal/paritytest (model's
TestParityWithPyTorch, cudaops's TestGPUParityWithPyTorch):
  case.json                 arch, stem, classes, tolerance, label_smoothing, band
  state.safetensors         the initial state_dict (weights and BatchNorm buffers)
  batch.safetensors         x (B,3,S,S) and labels (as float32)
  out.safetensors           eval_logits (eval mode, the initial running stats),
                            train_logits, loss, grad.<param> (train mode) and
                            after.<bn>.running_mean / running_var / num_batches_tracked
  branch.safetensors        the branch stoke's train-mode step took: relu.<k>, the
                            mask (1 where open) of the k-th ReLU it ran (the fused
                            BatchNorm+ReLUs and the residual add+ReLUs, in forward
                            order); maxpool.<k>, the k-th max-pool's float32 input

The same network is built in PyTorch (torchvision's resnet18/34/50/101/152 and
wide_resnet50_2/101_2, the cifar stem with conv1 = 3x3 stride 1 and maxpool = Identity; He et al.'s resnet20/32/56
defined below with torchvision's module names), the state dict loaded with
strict=True, and everything recomputed in float64 on stoke's branch. Each stoke
tensor must be within tol * max|reference| (max abs error) of it; `-v` prints
every tensor's error. Exit 0 when all pass, 1 otherwise.

Why stoke's branch: a ReLU is not differentiable at 0, nor a max-pool at a tie.
A value within float32 rounding of 0 at a ReLU (or of its window's runner-up at a
max-pool) can fall either side depending on the order of float operations, and
with a batch of 4 the BatchNorm before it spreads that one element's gradient
over a whole channel: seen, resnet18's imagenet stem at 64 px, batch 4, on the
GPU engine under the stand-in, layer1.1's residual add+ReLU at sample 3,
channel 0, (10, 0): a+b = +1.2e-6 in float64, +1.5e-6 in PyTorch's float32,
+6.0e-7 on stoke's CPU engine, -1.7e-6 on its GPU engine; that element's
gradient, -7.3e-4, is exactly the difference of layer1.1.bn2.bias's gradient
between the engines, 1.5% of its largest value, and everything below differs.
Such values are not rare: at that size each site has about one element within
PyTorch's own float32 error of 0, so no seed is free of them. So the reference
takes stoke's side wherever the float64 value is within `band` (case.json) times
PyTorch's own float32 error at that site (its largest |float32 - float64|), and
everywhere else stoke's branch must be float64's: a mask or argmax that differs
outside the band is a FAIL (a bug, not rounding). What the branch check proves
is printed: how many elements each side of the band, the closest call.
"""
import json
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        b, e = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[b:e], dtype="<f4").copy().reshape(info["shape"]))
    return out


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:  # He et al.'s option B: projection
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


class CifarResNet(nn.Module):
    """He et al. 2016, section 4.2: 6n+2 layers, widths 16/32/64, torchvision's names (also the
    model scripts/recipe_pytorch.py trains)."""

    def __init__(self, n, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        cin, layers = 16, []
        for i, w in enumerate([16, 32, 64]):
            blocks = []
            for b in range(n):
                blocks.append(BasicBlock(cin, w, 2 if i > 0 and b == 0 else 1))
                cin = w
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)
        # torchvision's ResNet initialisation, which stoke's model/resnet.go follows (the parity
        # check loads stoke's weights over it).
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build(arch, stem, classes):
    if arch in ("resnet20", "resnet32", "resnet56"):
        return CifarResNet({"resnet20": 3, "resnet32": 5, "resnet56": 9}[arch], classes)
    net = getattr(torchvision.models, arch)(num_classes=classes)
    if stem == "cifar":  # the README's two-line change
        net.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        net.maxpool = nn.Identity()
    return net


class Sites:
    """Forward hooks on every ReLU and max-pool of net. Recording: each call's input is kept
    (PyTorch's float32 run: the error scale at each site). Forcing: each call's output is
    recomputed on stoke's branch (its mask, or the argmax of its own float32 input), after
    checking that branch against this run's own where the value is outside the band."""

    def __init__(self, net, branch=None, scale=None, band=None):
        self.branch, self.scale, self.band = branch, scale, band
        self.inputs, self.report, self.k = [], [], {"relu": 0, "maxpool": 0}
        for m in net.modules():
            if isinstance(m, nn.ReLU):
                m.inplace = False  # the same values; the input stays readable
                m.register_forward_hook(self.hook("relu"))
            elif isinstance(m, nn.MaxPool2d):
                m.register_forward_hook(self.hook("maxpool"))

    def hook(self, kind):
        def f(mod, inp, out):
            k = self.k[kind]
            self.k[kind] += 1
            name = f"{kind}.{k}"
            x = inp[0]
            self.inputs.append((name, x.detach()))
            if self.branch is None or not torch.is_grad_enabled():
                return None
            if name not in self.branch:
                raise SystemExit(f"branch.safetensors has no {name}: stoke ran fewer {kind}s than PyTorch")
            lim = self.band * self.scale[name]
            b = self.branch[name]
            if b.numel() != x.numel():  # a short batch: stoke's padded rows follow the n valid ones
                b = b.reshape(-1, *x.shape[1:])[: x.shape[0]]
            if kind == "relu":
                mask = b.reshape(x.shape).to(x.dtype)
                differ = (mask > 0) != (x.detach() > 0)
                gap = x.detach().abs()
                y = x * mask
            else:
                _, idx = torch.nn.functional.max_pool2d(
                    b.reshape(x.shape), mod.kernel_size, mod.stride, mod.padding, return_indices=True)
                _, own = torch.nn.functional.max_pool2d(
                    x.detach(), mod.kernel_size, mod.stride, mod.padding, return_indices=True)
                flat = x.flatten(2)
                y = flat.gather(2, idx.flatten(2)).reshape(out.shape)
                differ = idx != own
                gap = (flat.detach().gather(2, own.flatten(2)) - flat.detach().gather(2, idx.flatten(2))).reshape(out.shape)
                # A window is near a tie when its two largest values are within the band; exact
                # ties at 0 (all of the window shut by the ReLU before it) pass no gradient.
                k, st, pd = (mod.kernel_size, mod.stride, mod.padding)
                win = torch.nn.functional.unfold(
                    torch.nn.functional.pad(x.detach(), (pd,) * 4, value=-float("inf")), k, stride=st)
                top = win.reshape(x.shape[0], x.shape[1], k * k, -1).topk(2, dim=2).values
                near = ((top[:, :, 0] - top[:, :, 1] <= lim) & (top[:, :, 0] > 0)).sum()
            if kind == "relu":
                near = (gap <= lim).sum()
            outside = differ & (gap > lim)
            self.report.append((name, x.numel(), int(differ.sum()), int(near), int(outside.sum()),
                                gap[differ].max().item() / self.scale[name] if differ.any() else 0.0))
            return y
        return f


def reference(state, case, x, y, smoothing, dtype, branch=None, scale=None, inputs_only=False):
    """PyTorch's eval logits, then train logits, loss, gradients and updated buffers; and the
    hooks, which hold each ReLU and max-pool input (and, forced on a branch, its report).
    inputs_only: only the train-mode forward, for the hooks' inputs."""
    net = build(case["arch"], case["stem"], case["classes"])
    net.load_state_dict(state, strict=True)  # names, shapes, nothing missing or extra
    net = net.to(dtype)
    x = x.to(dtype)
    ref = {}
    if inputs_only:
        sites = Sites(net)
        net.train()
        with torch.no_grad():
            net(x)
        return ref, sites
    net.eval()
    with torch.no_grad():
        ref["eval_logits"] = net(x)
    sites = Sites(net, branch, scale, case.get("band"))
    net.train()
    logits = net(x)
    loss = nn.CrossEntropyLoss(label_smoothing=smoothing)(logits, y)
    loss.backward()
    ref["train_logits"] = logits.detach()
    ref["loss"] = loss.detach().reshape(1)
    for name, p in net.named_parameters():
        ref["grad." + name] = p.grad
    for name, b in net.named_buffers():
        ref["after." + name] = b.double()
    return ref, sites


def load_case(d):
    """A case folder as the Go tests write it: case.json, the initial state, the batch, stoke's output."""
    case = json.load(open(f"{d}/case.json"))
    return case, read_safetensors(f"{d}/state.safetensors"), read_safetensors(f"{d}/batch.safetensors"), \
        read_safetensors(f"{d}/out.safetensors")


def check(case, state, x, y, got, branch, skip=(), verbose=False):
    """Checks one training step of stoke (got: its tensors, branch: its ReLU and max-pool branch)
    against float64 on stoke's branch, every tensor of the reference but those in skip. Returns
    the reference, the lines to print (a summary of the tensors and of the branch), the worst
    error and the failures."""
    smoothing = case.get("label_smoothing", 0.0)
    # PyTorch's own float32 error at each site: the largest |float32 - float64| of its input.
    _, s32 = reference(state, case, x, y, smoothing, torch.float32, inputs_only=True)
    _, s64 = reference(state, case, x, y, smoothing, torch.float64, inputs_only=True)
    scale = {}
    for (name, a), (_, b) in zip(s32.inputs, s64.inputs):
        scale[name] = max((a.double() - b).abs().max().item(), 1e-30)
    ref, sites = reference(state, case, x, y, smoothing, torch.float64, branch, scale)
    for name in skip:
        ref.pop(name, None)

    tol = case["tolerance"]
    worst, failed, lines = 0.0, [], []
    if len(sites.report) != len(branch):
        failed.append(f"stoke ran {len(branch)} ReLUs and max-pools, PyTorch {len(sites.report)}")
    near = sum(r[3] for r in sites.report)
    differ = sum(r[2] for r in sites.report)
    closest = max([r[5] for r in sites.report] + [0.0])
    for name, n, dif, within, outside, far in sites.report:
        if verbose:
            lines.append(f"  {name}: {n} values, {within} within the band, stoke's side differs from float64's at {dif}"
                         + (f" (farthest {far:.2f} x float32 error)" if dif else ""))
        if outside:
            failed.append(f"{name}: stoke's branch differs from float64's at {outside} values outside the band "
                          f"(up to {far:.1f} x PyTorch's float32 error there)")
    for name in sorted(ref):
        if name not in got:
            failed.append(f"{name}: missing from stoke's output")
            continue
        g = got[name].double().reshape(-1)
        if ref[name].numel() != g.numel():
            failed.append(f"{name}: shape {tuple(got[name].shape)}, PyTorch {tuple(ref[name].shape)}")
            continue
        r = ref[name].double().reshape(-1)
        err = (r - g).abs().max().item() / max(r.abs().max().item(), 1e-12)
        worst = max(worst, err)
        if verbose:
            lines.append(f"  {name}: {err:.2e}")
        if not err <= tol:
            failed.append(f"{name}: max abs error {err:.2e} x max|ref| > {tol:g}")
    what = ", ".join(w for w in ("eval logits", "train logits", "loss") if w.replace(" ", "_") in ref)
    lines.insert(0, f"{len(ref)} tensors ({what}, {sum(1 for n in ref if n.startswith('grad.'))} gradients, "
                    f"{sum(1 for n in ref if n.startswith('after.'))} buffers), worst error {worst:.2e} of max|ref| "
                    f"(tolerance {tol:g}) against float64 on stoke's branch")
    lines.insert(1, f"  branch: {len(sites.report)} ReLUs and max-pools, {near} values within {case.get('band')} x "
                    f"PyTorch's float32 error of a kink or tie; stoke's side differs from float64's at {differ}"
                    + (f" (farthest {closest:.2f} x that error)" if differ else ""))
    return ref, lines, worst, failed


def main():
    d = sys.argv[1]
    case, state, batch, got = load_case(d)
    branch = {k: v.double() for k, v in read_safetensors(f"{d}/branch.safetensors").items()}
    _, lines, _, failed = check(case, state, batch["x"], batch["labels"].long(), got, branch, verbose="-v" in sys.argv)
    label = case["arch"] + (" " + case["stem"] if case["arch"] not in ("resnet20", "resnet32", "resnet56") else "")
    print(f"{label}: {lines[0]}")
    for line in lines[1:]:
        print(line)
    for f in failed:
        print("  FAIL", f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
