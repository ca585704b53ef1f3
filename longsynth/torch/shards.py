"""Stored datasets: one split as a map-style torch dataset, and the collate that pads
variable-length samples (ListOps)."""
from __future__ import annotations

import torch
from torch.utils.data import Dataset as _TorchDataset

from longsynth import values
from longsynth.generators.listops.tree import PAD_ID  # 15: one past the ListOps vocabulary
from longsynth.store import open as _open_dataset
from longsynth.torch.encodings import IGNORE_INDEX, PRIMARY, _pick_encoding, _tensor


class ShardDataset(_TorchDataset):
    """One split of a stored dataset as a map-style torch dataset.

    ``ds[i]`` -> ``(x, y)``, or ``(x, y, extras)`` with ``extras=True`` where ``extras`` is
    a dict of the sample's stored extra keys (tensors) plus ``"index"`` (int). Only the
    keys needed are read, and only sample i of each. Pickling drops open HDF5 handles;
    every process opens its own on first read (fork and spawn workers both work).
    """

    def __init__(self, root, split="train", encode=True, extras=False, positional=None):
        ds = _open_dataset(root)
        self.root = ds.root
        self.manifest = ds.manifest
        self.task = ds.task.name
        self.family = ds.task.family
        self.split = ds[split]
        self.extras = bool(extras)
        self.encode = _pick_encoding(self.family, encode, positional)
        self.keys = list(self.split.specs) if self.extras else list(PRIMARY)
        self.extra_keys = [k for k in self.split.specs if k not in PRIMARY]

    def __len__(self):
        return len(self.split)

    def __getitem__(self, i):
        sample = self.split.read(i, self.keys)
        values.check(self.split.specs, sample, f"{self.split.name}[{i}]", self.root)  # before an embedding sees it
        x, y = self.encode(sample["inputs"], sample["targets"])
        if not self.extras:
            return x, y
        k, j = self.split.locate(i)
        extras = {key: _tensor(sample[key]) for key in self.extra_keys}
        extras["index"] = self.split.starts[k] + j
        return x, y, extras

    def close(self):
        """Close this process's HDF5 handles (they reopen on the next read)."""
        self.split.close()


def pad_collate(batch):
    """Collate variable-length samples (ListOps) by right-padding to the longest.

    ``batch`` is a list of ``(x, y)`` or ``(x, y, extras)`` with 1-d ``x``. Returns
    ``(x, y, lengths)``: x [B, n_max] padded with PAD_ID; y [B, n_max] padded with
    IGNORE_INDEX when targets are per token, or y [B] when they are scalars (classic
    ListOps); lengths int64 [B], the true lengths (``x[b, :lengths[b]]`` is sample b).
    With extras the result is ``(x, y, lengths, extras)``, extras a list of the per-sample
    dicts (their ragged keys do not stack).
    """
    xs = [item[0] for item in batch]
    ys = [item[1] for item in batch]
    lengths = torch.tensor([x.shape[0] for x in xs], dtype=torch.int64)
    n = int(lengths.max()) if len(xs) else 0
    x = torch.full((len(xs), n), PAD_ID, dtype=xs[0].dtype)
    for b, xb in enumerate(xs):
        x[b, : xb.shape[0]] = xb
    if ys[0].dim() == 0:
        y = torch.stack(ys)
    else:
        y = torch.full((len(ys), n), IGNORE_INDEX, dtype=ys[0].dtype)
        for b, yb in enumerate(ys):
            y[b, : yb.shape[0]] = yb
    if len(batch[0]) == 3:
        return x, y, lengths, [item[2] for item in batch]
    return x, y, lengths
