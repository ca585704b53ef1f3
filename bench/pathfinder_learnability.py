"""Is a classic Pathfinder dataset learnable? A small CNN as a control.

    python bench/pathfinder_learnability.py DIR [--steps 2000] [--train 40000] [--json bench/results/learnability.json]

The reference models (DLR, DSS) see an image as a sequence of M*M pixels, and on Pathfinder
they sit at chance for a long time before they learn (docs/validation.md). When such a run
stays at 50%, this script separates "the data cannot be learned" (labels unrelated to the
images) from "the sequence model has not left its plateau": a 6-layer CNN, which sees the
image in 2D, trained on the same stored samples with Adam on the CPU. It reads the first
``--train`` training samples and the first 2,048 test samples of DIR and prints test
accuracy every 250 steps. Torch threads: torch's default.
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn

import longsynth
from _common import finish, machine


def load(ds, split, n):
    """(images [n, 1, M, M] in [-1, 1], labels [n]) of the first n samples of a split."""
    xs, ys = [], []
    for _, block in ds[split].iter_blocks(["inputs", "targets"], chunk=4096, stop=n):
        xs.append(np.asarray(block["inputs"]))
        ys.append(np.asarray(block["targets"]))
    x = torch.from_numpy(np.concatenate(xs).astype(np.float32) / 127.5 - 1)  # [n, M, M]
    y = torch.from_numpy(np.concatenate(ys).astype(np.int64)).reshape(-1)  # [n]
    return x[:, None], y


def cnn(c=32):
    def pair(cin):
        return [nn.Conv2d(cin, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1), nn.ReLU()]

    return nn.Sequential(*pair(1), nn.MaxPool2d(2), *pair(c), nn.MaxPool2d(2), *pair(c),
                         nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(c, 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="a dataset directory of the pathfinder task")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--train", type=int, default=40000, help="training samples to read")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    record = machine(torch=torch.__version__)
    ds = longsynth.open(args.root)
    if ds.task.name != "pathfinder":
        raise SystemExit(f"{args.root}: a {ds.task.name} dataset; this control is for the pathfinder task")
    torch.manual_seed(args.seed)
    xtr, ytr = load(ds, "train", args.train)
    xte, yte = load(ds, "test", 2048)
    net = cnn()
    opt = torch.optim.Adam(net.parameters(), args.lr)
    g = torch.Generator().manual_seed(args.seed)
    history, losses, t0 = [], [], time.perf_counter()
    for step in range(1, args.steps + 1):
        i = torch.randint(0, len(xtr), (args.batch_size,), generator=g)
        loss = nn.functional.cross_entropy(net(xtr[i]), ytr[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 250 == 0 or step == args.steps:
            with torch.no_grad():
                acc = float((torch.cat([net(xte[j : j + 512]).argmax(-1) for j in range(0, len(xte), 512)]) == yte)
                            .float().mean())
            row = {"step": step, "train_loss": float(np.mean(losses[-250:])), "test_accuracy": acc,
                   "wall_s": round(time.perf_counter() - t0, 1)}
            history.append(row)
            print(f"step {step:6d}  train loss {row['train_loss']:.4f}  test accuracy {acc:.3f}  "
                  f"{row['wall_s']:.0f} s", flush=True)
    out = {"dataset": os.path.abspath(args.root), "params": ds.manifest["params"], "train_samples": len(xtr),
           "test_samples": len(xte), "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
           "torch_threads": torch.get_num_threads(), "history": history}
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({**out, "machine": finish(record)}, f, indent=1)


if __name__ == "__main__":
    main()
