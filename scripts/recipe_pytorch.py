#!/usr/bin/python3
"""Run a stoke training recipe in PyTorch: the accuracy side of issue 13.

    scripts/recipe_pytorch.py --config RUN/config.yaml [--seed S] [--precision fp32|bf16] [--out DIR]

reads a stoke config (a run folder's resolved config.yaml is the exact recipe of that run; a
shipped config works too when every setting it relies on is in it) and trains the same model
on the same ImageFolder with the same recipe:

  - data: ROOT/train and ROOT/val (data.root, or --data; when both are empty, the generated set
    data.synthetic names, in the cache folder where stoke made it), batch data.batch_size, shuffled per
    data.shuffle, data.drop_last, data.workers loader processes;
  - augmentation: RandomResizedCrop(image_size, scale, ratio), RandomHorizontalFlip(hflip),
    ColorJitter(brightness, contrast, saturation) when any is set, ToTensor, Normalize(mean, std);
    evaluation Resize(round(image_size / eval_resize_ratio)) + CenterCrop(image_size);
  - model.arch: cnn (model.conv blocks, as scripts/blog_pytorch.py), resnet18/34 (torchvision's,
    with model.stem) or resnet20/32/56 (He et al. 2016, section 4.2, with torchvision's module names
    and initialisation, as stoke's): the models scripts/parity_pytorch.py checks stoke against;
  - optimizer: SGD (momentum, nesterov, coupled weight decay) or AdamW (betas, eps, decoupled
    decay); no decay on BatchNorm parameters and biases when optim.decay_norm_and_bias is false;
  - CrossEntropyLoss(label_smoothing=optim.label_smoothing);
  - learning rate set every step by stoke's schedule (trainer/schedule.go): linear warm-up over
    warmup_epochs, then cosine to min_lr, or step / multistep decay by epoch.

It prints one line per epoch and, at the end, a JSON line (arch, seed, final val top-1 and top-5,
wall seconds, train seconds); with --out it writes that JSON and metrics.jsonl there. The random
streams are PyTorch's own (torch.manual_seed(seed)): the same seed does not give stoke's draws,
so compare over seeds, not run by run. Needs Debian's python3-torch, python3-torchvision and
python3-yaml.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as T
import yaml

sys.path.insert(0, os.path.dirname(__file__))
import blog_pytorch  # noqa: E402  (the cnn, as the blog benchmark builds it)
import parity_pytorch  # noqa: E402  (the ResNets, as the parity check builds them)


def make_model(cfg, classes):
    arch = cfg["model"].get("arch", "cnn")
    if arch == "cnn":
        return blog_pytorch.make_model(cfg["model"], classes)
    if arch not in ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "wide_resnet50_2",
                    "wide_resnet101_2", "resnet20", "resnet32", "resnet56"):
        raise SystemExit("recipe_pytorch.py: model.arch %r is not handled here "
                         "(cnn, resnet18/34/50/101/152, wide_resnet50_2/101_2, resnet20/32/56)" % arch)
    net = parity_pytorch.build(arch, cfg["model"].get("stem", "imagenet"), classes)
    if cfg["model"].get("zero_init_residual"):  # torchvision's rule, for its nets and He et al.'s
        import torch.nn as nn
        import torchvision
        for m in net.modules():
            if isinstance(m, torchvision.models.resnet.Bottleneck):
                nn.init.constant_(m.bn3.weight, 0)
            elif isinstance(m, (torchvision.models.resnet.BasicBlock, parity_pytorch.BasicBlock)):
                nn.init.constant_(m.bn2.weight, 0)
    return net


def synthetic_root(d):
    """The folder trainer/dataset.go's DatasetRoot generates data.synthetic into (Linux's cache)."""
    s = d.get("synthetic") or {}
    cache = d.get("cache_dir") or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "stoke")
    root = os.path.join(cache, "synthetic-c%d-train%d-val%d-px%d-seed%d" % (
        s.get("classes", 0), s.get("train", 0), s.get("val", 0), s.get("size", 0), s.get("seed", 0)))
    if not os.path.isdir(root):
        raise SystemExit("recipe_pytorch.py: the config's data.root is empty and its generated set %s does not exist: "
                         "run stoke on the config once (it generates it), or give --data" % root)
    return root


def lr_at(step, o, steps_per_epoch, epochs):
    """trainer/schedule.go's lr(step), line for line."""
    total = epochs * steps_per_epoch
    warm = min(int(math.floor(o["warmup_epochs"] * steps_per_epoch + 0.5)), total)
    if step < warm:
        return o["lr"] * (step + 1) / warm
    sched = o.get("schedule", "cosine")
    if sched in ("step", "multistep"):
        epoch = step // max(1, steps_per_epoch)
        if sched == "step":
            k = epoch // max(1, o["step_epochs"])
        else:
            k = sum(1 for m in o.get("milestones") or [] if epoch >= m)
        return o["lr"] * o["gamma"] ** k
    if total - warm <= 1:
        return o["lr"]
    p = min(max((step - warm) / (total - warm - 1), 0), 1)
    return o["min_lr"] + (o["lr"] - o["min_lr"]) * 0.5 * (1 + math.cos(math.pi * p))


def param_groups(model, o):
    if o.get("decay_norm_and_bias", True):
        return [{"params": list(model.parameters()), "weight_decay": o["weight_decay"]}]
    decay, no_decay = [], []
    for mod in model.modules():
        for name, p in mod.named_parameters(recurse=False):
            (no_decay if isinstance(mod, nn.BatchNorm2d) or name == "bias" else decay).append(p)
    return [{"params": decay, "weight_decay": o["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model, o):
    groups = param_groups(model, o)
    if o.get("optimizer", "sgd") == "adamw":
        return torch.optim.AdamW(groups, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"])
    return torch.optim.SGD(groups, lr=o["lr"], momentum=o["momentum"], nesterov=o.get("nesterov", False))


def evaluate(model, loader, autocast):
    model.eval()
    n = top1 = top5 = 0
    loss = 0.0
    with torch.no_grad():
        for x, y in loader:
            with autocast():
                out = model(x)
            out = out.float()
            loss += nn.functional.cross_entropy(out, y, reduction="sum").item()
            k = out.topk(min(5, out.shape[1]), 1).indices
            top1 += (k[:, 0] == y).sum().item()
            top5 += (k == y[:, None]).any(1).sum().item()
            n += y.shape[0]
    return loss / n, top1 / n, top5 / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="a stoke config, e.g. RUN/config.yaml (the resolved recipe of RUN)")
    ap.add_argument("--data", help="ImageFolder root (default: the config's data.root)")
    ap.add_argument("--seed", type=int, help="default: the config's train.seed")
    ap.add_argument("--epochs", type=int, help="default: the config's train.epochs")
    ap.add_argument("--out", help="folder for metrics.jsonl and result.json")
    ap.add_argument("--precision", choices=("fp32", "bf16"),
                    help="fp32, or bf16: torch.autocast('cpu', torch.bfloat16) around the forward, in training and "
                         "evaluation, the loss on the fp32 logits (default: the config's train.precision; fp32)")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    d, a, o, tr = cfg["data"], cfg["augment"], cfg["optim"], cfg["train"]
    root = args.data or d.get("root") or synthetic_root(d)
    seed = tr.get("seed", 1) if args.seed is None else args.seed
    epochs = args.epochs or tr["epochs"]
    precision = args.precision or tr.get("precision") or "fp32"
    if precision not in ("fp32", "bf16"):
        raise SystemExit("recipe_pytorch.py: train.precision %r: PyTorch's CPU autocast has fp32 and bf16 only" % precision)
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")  # noqa: E731
    threads = tr.get("threads") or os.cpu_count()
    torch.set_num_threads(threads)  # a torch built without OpenMP stays at 1
    torch.manual_seed(seed)

    size = d["image_size"]
    train_tf = [T.RandomResizedCrop(size, scale=tuple(a["scale"]), ratio=tuple(a["ratio"])),
                T.RandomHorizontalFlip(a["hflip"])]
    if a.get("brightness") or a.get("contrast") or a.get("saturation"):
        train_tf.append(T.ColorJitter(a["brightness"], a["contrast"], a["saturation"]))
    norm = [T.ToTensor(), T.Normalize(a["mean"], a["std"])]
    val_tf = [T.Resize(round(size / a.get("eval_resize_ratio", 0.875))), T.CenterCrop(size)]
    train_set = torchvision.datasets.ImageFolder(os.path.join(root, "train"), T.Compose(train_tf + norm))
    val_set = torchvision.datasets.ImageFolder(os.path.join(root, "val"), T.Compose(val_tf + norm))
    workers = d.get("workers", 0)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=d["batch_size"], shuffle=d.get("shuffle", True),
                                               drop_last=d.get("drop_last", False), num_workers=workers)
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=d["batch_size"], num_workers=workers)

    model = make_model(cfg, len(train_set.classes))
    opt = make_optimizer(model, o)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=o.get("label_smoothing", 0.0))
    steps = len(train_loader)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    metrics = open(os.path.join(args.out, "metrics.jsonl"), "w") if args.out else None
    t_start, train_s, step = time.perf_counter(), 0.0, 0
    for epoch in range(epochs):
        model.train()
        t0 = time.perf_counter()
        seen = correct = 0
        loss_sum = 0.0
        for x, y in train_loader:
            lr = lr_at(step, o, steps, epochs)
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad(set_to_none=True)
            with autocast():
                out = model(x)
            out = out.float()
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * y.shape[0]
            correct += (out.argmax(1) == y).sum().item()
            seen += y.shape[0]
            step += 1
        train_s += time.perf_counter() - t0
        rec = {"epoch": epoch + 1, "epochs": epochs, "train_loss": loss_sum / seen, "train_acc": correct / seen, "lr": lr}
        if epoch + 1 == epochs:
            rec["val_loss"], rec["val_top1"], rec["val_top5"] = evaluate(model, val_loader, autocast)
        print("epoch %d/%d  train loss %.4f acc %.1f%%%s  %.1fs" % (
            epoch + 1, epochs, rec["train_loss"], 100 * rec["train_acc"],
            "  val top1 %.1f%% top5 %.1f%%" % (100 * rec["val_top1"], 100 * rec["val_top5"]) if "val_top1" in rec else "",
            time.perf_counter() - t0), flush=True)
        if metrics:
            metrics.write(json.dumps(rec) + "\n")
            metrics.flush()
    result = {"arch": cfg["model"].get("arch", "cnn"), "engine": "pytorch", "seed": seed, "epochs": epochs,
              "val_top1": rec["val_top1"], "val_top5": rec["val_top5"], "wall_seconds": time.perf_counter() - t_start,
              "train_seconds": train_s, "precision": precision, "threads": torch.get_num_threads(),
              "note": "PyTorch %s, torchvision %s" % (torch.__version__, torchvision.__version__)}
    print(json.dumps(result), flush=True)
    if args.out:
        with open(os.path.join(args.out, "result.json"), "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
