"""Remake tests/data/s4_copying.npz by running S4's ``torch_copying_data``.

    python bench/copying_fixtures.py /path/to/s4    # a checkout of state-spaces/s4 @ e757cef5

S4's code is run, never copied: ``src/dataloaders/datasets/copying.py`` is loaded from the
checkout by path (its only import of the repository, ``src.utils.distributed``, gets an
empty stand-in). Per case, ``torch.manual_seed(seed)`` then ``torch_copying_data(L, M, A,
variable=True, batch_shape=(count,))``, as S4's ``CopyingEvalDataset`` makes a set: ``c/params``
(L, M, A, count, seed), ``c/x`` and ``c/y`` (int16). Needs torch.
"""
import argparse
import os

import numpy as np

from longsynth import crosscheck as _authors

CASES = {  # name: (L, M, A, count, seed)
    "tiny": (4, 2, 6, 8, 0),
    "mamba": (4064, 16, 16, 8, 1),
    "s4-like": (200, 10, 10, 2000, 2),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("s4", help="path of an S4 checkout (state-spaces/s4 @ e757cef5)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "s4_copying.npz"))
    args = ap.parse_args()
    import torch

    copying = _authors.s4_copying(args.s4)
    arrays = {}
    for name, (L, M, A, count, seed) in CASES.items():
        torch.manual_seed(seed)
        x, y = copying.torch_copying_data(L, M, A, variable=True, batch_shape=(count,))
        arrays[f"{name}/params"] = np.array([L, M, A, count, seed], dtype=np.int64)
        arrays[f"{name}/x"] = x.numpy().astype(np.int16)
        arrays[f"{name}/y"] = y.numpy().astype(np.int16)
        print(f"{name}: {count} rows of {x.shape[1]}")
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {os.path.abspath(args.out)} ({os.path.getsize(args.out):,} bytes)")


if __name__ == "__main__":
    main()
