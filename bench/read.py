"""Main-process read rate of one stored dataset through ShardDataset + DataLoader.

    python bench/read.py DIR [--batches 60] [--batch-size 16] [--json PATH]

For A/B comparisons of the read path between two checkouts on the same data (run each
checkout's interpreter on its own copy of the dataset, alternating, in one session):
prints samples/s of wall time and per CPU second, encoded (what a model sees) and raw
(encode=False), one torch thread, no workers, shuffled with a fixed seed.
"""
import argparse
import json
import time

import torch
from torch.utils.data import DataLoader

import longsynth
from longsynth.torch import ShardDataset, pad_collate
from _common import finish, machine


def rate(root, encode, batches, batch_size):
    ds = ShardDataset(root, encode=encode)
    collate = pad_collate if ds.family == "listops" else None
    loader = DataLoader(ds, batch_size=batch_size, shuffle=True, collate_fn=collate, num_workers=0,
                        generator=torch.Generator().manual_seed(0))
    it = iter(loader)
    next(it)  # opens the shard files
    t0, c0, n = time.perf_counter(), time.process_time(), 0
    for k, batch in enumerate(it):
        n += batch[0].shape[0]
        if k + 1 >= batches:
            break
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="a stored dataset directory")
    ap.add_argument("--batches", type=int, default=60, help="timed batches per setting")
    ap.add_argument("--batch-size", type=int, default=16, help="samples per batch")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {"root": args.root, "longsynth_path": longsynth.__file__, "machine": machine(torch=torch.__version__)}
    for encode in (True, False):
        wall, cpu = rate(args.root, encode, args.batches, args.batch_size)
        out[f"encode_{encode}"] = {"wall_samples_s": wall, "cpu_samples_s": cpu}
        print(f"{args.root} encode={encode!s:5s} {wall:9.0f} samples/s wall {cpu:9.0f} per CPU second")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**out, "machine": finish(out["machine"])}, fh, indent=1)


if __name__ == "__main__":
    main()
