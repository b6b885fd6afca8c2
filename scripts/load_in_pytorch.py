#!/usr/bin/python3
"""Loads a stoke checkpoint's weights into the same CNN built in PyTorch and evaluates it.

    scripts/load_in_pytorch.py RUN_OR_CHECKPOINT_FOLDER [--data DIR] [--per-image FILE]
    scripts/load_in_pytorch.py RUN_OR_CHECKPOINT_FOLDER --print-data

Needs python3-torch, python3-torchvision and python3-yaml (Debian). Reads model.safetensors with
scripts/stoke_safetensors.py (the format by its specification: what safetensors.torch.load_file
does, which Debian does not package), maps stoke's names (conv<i>.weight, conv<i>.bias,
fc.weight, fc.bias: PyTorch's layouts) onto an nn.Sequential (for model.arch cnn; the ResNets are
torchvision's resnet18/34, the cifar stem after the README's two-line change, or He et al.'s
resnet20/32/56 as scripts/parity_pytorch.py builds them, loaded with strict=True under the
checkpoint's own names), and reports top-1 on the val split with torchvision's Resize +
CenterCrop + Normalize. Compare with `train eval --checkpoint ...`: the resamplers differ
slightly, the accuracy should not.

The dataset is the checkpoint's own, found as the trainer finds it: its config's data.root, or,
when that is empty, the generated dataset data.synthetic describes, in data.cache_dir (default
$XDG_CACHE_HOME/stoke or ~/.cache/stoke). --data DIR uses another one with the same classes;
--print-data prints the folder it would use and exits (no torch needed); --per-image FILE writes
each val image's top class and the gap between its top two probabilities, one JSON line each (for
comparing with `train predict --json`, image by image).
"""
import argparse
import json
import os
import sys

import yaml  # Debian: python3-yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def dataset_root(data):
    """The dataset folder of a config's data section, as the trainer resolves it
    (trainer.DatasetRoot): data.root when set, else the generated dataset's folder in the cache."""
    if data.get("root"):
        return data["root"], "data.root in the checkpoint's config"
    cache = data.get("cache_dir") or ""
    if not cache:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not base:
            base = os.path.join(os.environ.get("HOME", os.path.expanduser("~")), ".cache")
        cache = os.path.join(base, "stoke")
    s = data["synthetic"]
    name = f"synthetic-c{s['classes']}-train{s['train']}-val{s['val']}-px{s['size']}-seed{s['seed']}"
    return os.path.join(cache, name), "the generated dataset data.synthetic describes"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("--data", help="dataset folder (default: the checkpoint's own: data.root, or the generated one)")
    ap.add_argument("--print-data", action="store_true", help="print the dataset folder that would be used, and exit")
    ap.add_argument("--per-image", metavar="FILE",
                    help="also write one JSON line per val image to FILE: its path, the top class and the gap between the top two probabilities")
    args = ap.parse_args()
    ck = args.checkpoint
    if os.path.exists(os.path.join(ck, "latest.json")):
        ck = os.path.join(ck, json.load(open(os.path.join(ck, "latest.json")))["checkpoint"])
    if not os.path.exists(os.path.join(ck, "state.json")):
        sys.exit(f"{args.checkpoint} is neither a run folder (no latest.json) nor a checkpoint folder (no state.json)")
    state = json.load(open(os.path.join(ck, "state.json")))
    cfg = yaml.safe_load(state["config"])

    data, source = (args.data, "--data") if args.data else dataset_root(cfg["data"])
    if args.print_data:
        print(data)
        return
    if not os.path.isdir(os.path.join(data, "val")):
        hint = ("run `train eval --checkpoint " + args.checkpoint + "` once to generate it again, or pass --data DIR"
                if source.startswith("the generated") else
                "a relative data.root is read from the folder the run was started in: run from there, or pass --data DIR")
        sys.exit(f"dataset {data} ({source}) has no val/ folder here: {hint}")

    import torch
    import torch.nn as nn
    import torchvision
    import torchvision.transforms as T
    from stoke_safetensors import load_file
    from blog_pytorch import make_model  # the same CNN as the bench uses

    weights = load_file(os.path.join(ck, "model.safetensors"))
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

    tf = T.Compose([T.Resize(round(size / ratio)), T.CenterCrop(size), T.ToTensor(), T.Normalize(mean, std)])
    ds = torchvision.datasets.ImageFolder(os.path.join(data, "val"), tf)
    assert ds.classes == state["classes"], (ds.classes, state["classes"])
    hits = total = 0
    rows = []
    with torch.no_grad():
        for x, y in torch.utils.data.DataLoader(ds, batch_size=64):
            z = model(x)
            hits += (z.argmax(1) == y).sum().item()
            p = torch.softmax(z, 1).sort(1, descending=True)
            for i in range(len(y)):
                path = ds.samples[total + i][0]
                rows.append({"file": path, "class": ds.classes[p.indices[i, 0].item()],
                             "gap": (p.values[i, 0] - p.values[i, 1]).item() if z.shape[1] > 1 else 1.0})
            total += len(y)
    if args.per_image:
        with open(args.per_image, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    print(f"{ck}: PyTorch top-1 {100 * hits / total:.2f}% on {total} images of {data}/val")


if __name__ == "__main__":
    main()
