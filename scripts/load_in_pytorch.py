#!/usr/bin/python3
"""Loads a stoke checkpoint's weights into the same CNN built in PyTorch and evaluates it.

    scripts/load_in_pytorch.py RUN_OR_CHECKPOINT_FOLDER [--data DIR]

Needs python3-torch, python3-torchvision and python3-yaml (Debian). Reads model.safetensors by the
format's specification (8-byte header length, JSON header, raw
little-endian data: what safetensors.torch.load_file does, which Debian does not package), maps
stoke's names (conv<i>.weight, conv<i>.bias, fc.weight, fc.bias: PyTorch's layouts) onto an
nn.Sequential (for model.arch cnn; the ResNets are torchvision's resnet18/34, the cifar stem
after the README's two-line change, or He et al.'s resnet20/32/56 as scripts/parity_pytorch.py
builds them, loaded with strict=True under the checkpoint's own names), and reports top-1 on the val split with torchvision's Resize + CenterCrop +
Normalize. Compare with `train eval --checkpoint ...`: the resamplers differ slightly, the
accuracy should not.
"""
import argparse
import json
import os
import struct
import sys

import torch
import yaml
import torch.nn as nn
import torchvision
import torchvision.transforms as T

sys.path.insert(0, os.path.dirname(__file__))
from blog_pytorch import make_model  # noqa: E402  (the same CNN as the bench uses)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for name, h in header.items():
        assert h["dtype"] == "F32", (name, h["dtype"])
        b, e = h["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[b:e]), dtype=torch.float32).reshape(h["shape"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("--data", help="dataset folder (default: the one in the checkpoint's config)")
    args = ap.parse_args()
    ck = args.checkpoint
    if os.path.exists(os.path.join(ck, "latest.json")):
        ck = os.path.join(ck, json.load(open(os.path.join(ck, "latest.json")))["checkpoint"])
    state = json.load(open(os.path.join(ck, "state.json")))
    cfg_text = state["config"]
    weights = read_safetensors(os.path.join(ck, "model.safetensors"))

    cfg = yaml.safe_load(cfg_text)  # Debian: python3-yaml (a dependency of python3-torch's tools)
    size = cfg["data"]["image_size"]
    mean, std = cfg["augment"]["mean"], cfg["augment"]["std"]
    ratio = cfg["augment"]["eval_resize_ratio"]
    arch = cfg["model"].get("arch", "cnn")
    if arch != "cnn":
        from parity_pytorch import build  # noqa: E402
        model = build(arch, cfg["model"].get("stem", "imagenet"), len(state["classes"]))
        model.load_state_dict(weights, strict=True)
    else:
        convs = cfg["model"]["conv"]
        model = make_model({"conv": convs}, len(state["classes"]))
        # nn.Sequential names its layers by position; map stoke's names onto them.
        convs_in_model = [m for m in model if isinstance(m, nn.Conv2d)]
        sd = {}
        for j, m in enumerate(model):
            if isinstance(m, nn.Conv2d):
                k = convs_in_model.index(m)
                sd[f"{j}.weight"], sd[f"{j}.bias"] = weights[f"conv{k}.weight"], weights[f"conv{k}.bias"]
            elif isinstance(m, nn.Linear):
                sd[f"{j}.weight"], sd[f"{j}.bias"] = weights["fc.weight"], weights["fc.bias"]
        model.load_state_dict(sd, strict=True)
    model.eval()

    data = args.data
    if not data:
        data = cfg["data"]["root"]
    if not data:
        sys.exit("the checkpoint trained on the generated dataset: pass --data (its folder is printed by the run)")
    tf = T.Compose([T.Resize(round(size / ratio)), T.CenterCrop(size), T.ToTensor(), T.Normalize(mean, std)])
    ds = torchvision.datasets.ImageFolder(os.path.join(data, "val"), tf)
    assert ds.classes == state["classes"], (ds.classes, state["classes"])
    hits = total = 0
    with torch.no_grad():
        for x, y in torch.utils.data.DataLoader(ds, batch_size=64):
            hits += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    print(f"{ck}: PyTorch top-1 {100 * hits / total:.2f}% on {total} images of {data}/val")


if __name__ == "__main__":
    main()
