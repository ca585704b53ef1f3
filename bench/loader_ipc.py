"""What one DataLoader worker can hand to the main process, with no HDF5 involved.

    python bench/loader_ipc.py [--json bench/results/loader_ipc.json]

A dataset returns the same in-memory 512 x 512 sample every time, as uint8 (what a
pathfinder-seg-512 shard stores) or float32 (what the paper encoding makes of the
image alone); one spawn worker, batches of 8 and 32. The figures bound any loader on this
machine: the encoded Pathfinder-512 sample is 3 MB (float32 image + int64 labels).
"""
import argparse
import json
import os
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from _common import finish, machine


class Constant(Dataset):
    def __init__(self, dtype):
        self.x = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (512, 512), dtype=np.uint8))
        self.dtype = dtype

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return self.x if self.dtype == "uint8" else self.x.float()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results", "loader_ipc.json"))
    ap.add_argument("--batches", type=int, default=60)
    args = ap.parse_args()
    record = machine(torch=torch.__version__)
    torch.set_num_threads(1)
    rows = []
    for dtype in ("uint8", "float32"):
        for bs in (8, 32):
            dl = DataLoader(Constant(dtype), batch_size=bs, num_workers=1, multiprocessing_context="spawn",
                            persistent_workers=True)
            it = iter(dl)
            next(it)
            t0, n = time.perf_counter(), 0
            for _ in range(args.batches):
                n += next(it).shape[0]
            rate = n / (time.perf_counter() - t0)
            mb = rate * 512 * 512 * (1 if dtype == "uint8" else 4) / 1e6
            rows.append({"dtype": dtype, "batch_size": bs, "samples_per_s": rate, "mb_per_s": mb})
            print(f"512x512 {dtype:7s} batch {bs:2d}: {rate:7.0f} samples/s through one worker ({mb:6.0f} MB/s)")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"machine": finish(record), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
