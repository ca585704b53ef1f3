"""Data values checked where they are used: a class label outside its classes, a token id
outside the vocabulary, NaN or an infinity in a task that has none.

A dataset whose checksums and manifest are consistent may still hold values its task
never draws (a modified generator wrote it; `verify` passes, `verify --deep` would not).
An exporter or a loader that feeds a model indexes tables and embeddings with those
values, so each checks the block it is about to use against the task's key specs
(``KeySpec.bounds``; float keys must be finite) and stops with one line. A min and a max
per key and block: cheap beside the read and its checksum.
"""
from __future__ import annotations

import numpy as np

from longsynth.errors import LongsynthError
from longsynth.task import Ragged


def problem(specs, block):
    """The first value of ``block`` ({key: array or Ragged}, one sample or many) that its
    key's spec rules out, as text; None when every value is allowed."""
    for key, col in block.items():
        spec = specs.get(key)
        if spec is None:
            continue
        a = np.asarray(col.values if isinstance(col, Ragged) else col)
        if not a.size:
            continue
        if a.dtype.kind == "f":
            bad = ~np.isfinite(a)
            if bad.any():
                return f"{key} holds {int(bad.sum()):,} NaN or infinite value(s), which the task never draws"
        if spec.bounds is not None:
            lo, hi = spec.bounds
            if spec.ignore is not None:
                a = a[a != spec.ignore]  # token targets: -100 where not scored
                if not a.size:
                    continue
            amin, amax = a.min(), a.max()
            if amin < lo or amax > hi:
                v = amin if amin < lo else amax
                what = "token id" if "token" in spec.doc or spec.ignore is not None else "value"
                return f"{key} holds the {what} {v.item()}, outside {lo}..{hi} ({spec.doc})"
    return None


def check(specs, block, where, root):
    """LongsynthError (one line naming ``where``, e.g. ``train[120..255]``) when ``block``
    holds a value its task never draws."""
    found = problem(specs, block)
    if found is not None:
        raise LongsynthError(f"{root}: {where}: {found}; not a sample of the task (run `longsynth verify --deep "
                             f"{root}`)")
