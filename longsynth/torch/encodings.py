"""The paper's input encodings per task family (the table in ``longsynth.torch``): in NumPy
for the loaders (``encoder``) and in torch ops for raw batches on any device
(``encode_batch``)."""
from __future__ import annotations

import numpy as np
import torch

from longsynth.errors import LongsynthError

IGNORE_INDEX = -100  # targets the loss must skip (torch.nn.CrossEntropyLoss default)
PRIMARY = ("inputs", "targets")


def positional_channels(T):
    """float32 [T, 2]: cos(2 pi i/T), sin(2 pi i/T) for i = 0..T-1 (computed in float64)."""
    angle = 2.0 * np.pi * np.arange(T, dtype=np.float64) / T
    return np.stack([np.cos(angle), np.sin(angle)], axis=1).astype(np.float32)


class _Positional:
    """Appends the positional channels along the last axis; tables cached per length."""

    def __init__(self):
        self._tables = {}

    def append(self, x):
        """x float32 [..., T, c] -> new float32 array [..., T, c+2]."""
        T, c = x.shape[-2], x.shape[-1]
        table = self._tables.get(T)
        if table is None:
            table = self._tables[T] = positional_channels(T)
        out = np.empty(x.shape[:-1] + (c + 2,), dtype=np.float32)
        out[..., :c] = x
        out[..., c:] = table
        return out


class AtomicEncoding:
    """inputs [..., T, c] -> float32 [..., T, c(+2)]; targets -> float32 unchanged."""

    default_positional = True

    def __init__(self, positional):
        self.positional = _Positional() if positional else None

    def __call__(self, inputs, targets):
        x = np.asarray(inputs, dtype=np.float32)
        x = self.positional.append(x) if self.positional is not None else np.ascontiguousarray(x)
        return torch.from_numpy(x), torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32))


_HALF = np.float32(127.5)


class PathfinderEncoding:
    """inputs uint8 [..., M, M] -> float32 [..., M*M, 1(+2)]; targets -> int64 [..., M*M]."""

    default_positional = False

    def __init__(self, positional):
        self.positional = _Positional() if positional else None

    def __call__(self, inputs, targets):
        lead = inputs.shape[:-2]
        # (p/255 - 0.5)/0.5 == (p - 127.5)/127.5: p - 127.5 is exact in float32, so x is the
        # correctly rounded value (equal to the float64 formula rounded to float32 for all p)
        x = np.subtract(inputs.reshape(lead + (-1, 1)), _HALF, dtype=np.float32)
        np.divide(x, _HALF, out=x)
        if self.positional is not None:
            x = self.positional.append(x)
        t = np.asarray(targets)
        if t.ndim == len(lead):  # classic Pathfinder: one label per image, kept a scalar
            return torch.from_numpy(x), _tensor(t.astype(np.int64))
        y = t.reshape(lead + (-1,)).astype(np.int64)
        return torch.from_numpy(x), torch.from_numpy(y)


class ListOpsEncoding:
    """token ids -> int64; targets -> int64 with the -1 sentinel mapped to IGNORE_INDEX.

    ListOps-Subtrees targets are one label per token ([n]); classic ListOps has one scalar
    target (the root value), which stays a scalar.
    """

    default_positional = False

    def __init__(self, positional):
        if positional:
            raise LongsynthError("positional: ListOps inputs are token ids; positional channels do not apply")

    def __call__(self, inputs, targets):
        x = np.asarray(inputs).astype(np.int64)
        t = np.asarray(targets).astype(np.int64)
        y = np.where(t < 0, IGNORE_INDEX, t)
        return torch.from_numpy(x), _tensor(y)


class TokensEncoding:
    """token tasks (MQAR, recall, copying): inputs and targets -> int64, values unchanged
    (targets already hold IGNORE_INDEX at every unscored position)."""

    default_positional = False

    def __init__(self, positional):
        if positional:
            raise LongsynthError("positional: token-task inputs are token ids; positional channels do not apply")

    def __call__(self, inputs, targets):
        return _tensor(np.asarray(inputs).astype(np.int64)), _tensor(np.asarray(targets).astype(np.int64))


ENCODINGS = {
    "atomic": AtomicEncoding,
    "pathfinder": PathfinderEncoding,
    "listops": ListOpsEncoding,
    "tokens": TokensEncoding,
}


def encoder(family, positional=None):
    """The encoding of a task family; ``positional=None`` takes the family's default."""
    if family not in ENCODINGS:
        raise LongsynthError(f"family: no encoding for task family {family!r}; known: {', '.join(ENCODINGS)}")
    cls = ENCODINGS[family]
    return cls(cls.default_positional if positional is None else bool(positional))


_TABLES = {}  # (T, device) -> float32 [T, 2] positional channels on that device


def _positional_on(T, device):
    table = _TABLES.get((T, device))
    if table is None:
        table = _TABLES[(T, device)] = torch.from_numpy(positional_channels(T)).to(device)
    return table


def _atomic_batch(x, y, positional):
    x = x.float()
    if positional:
        pos = _positional_on(x.shape[-2], x.device).expand(x.shape[:-1] + (2,))
        x = torch.cat([x, pos], dim=-1)
    return x, y.float()


def _pathfinder_batch(x, y, positional):
    lead = x.shape[:-2]
    x = x.reshape(lead + (-1, 1)).float().sub_(127.5).div_(127.5)
    if positional:
        x = torch.cat([x, _positional_on(x.shape[-2], x.device).expand(lead + (-1, 2))], dim=-1)
    if y.dim() == len(lead):  # classic Pathfinder: one label per image
        return x, y.long()
    return x, y.reshape(lead + (-1,)).long()


def _listops_batch(x, y, positional):
    if positional:
        raise LongsynthError("positional: ListOps inputs are token ids; positional channels do not apply")
    y = y.long()
    return x.long(), y.masked_fill(y < 0, IGNORE_INDEX)


def _tokens_batch(x, y, positional):
    if positional:
        raise LongsynthError("positional: token-task inputs are token ids; positional channels do not apply")
    return x.long(), y.long()


BATCH_ENCODINGS = {
    "atomic": _atomic_batch,
    "pathfinder": _pathfinder_batch,
    "listops": _listops_batch,
    "tokens": _tokens_batch,
}


def encode_batch(family, inputs, targets, positional=None):
    """The family's encoding in torch ops, for raw tensors on any device (``encode=False``).

    Loading raw and encoding on the GPU moves far fewer bytes through the DataLoader's
    shared memory and PCIe: a 512x512 Pathfinder sample is 0.5 MB raw (uint8 image and
    labels) against 3 MB encoded (float32 image, int64 labels). Equal to the loader's
    encoding bit for bit (padded raw ListOps targets may hold -100 or -1; both map to -100).
    """
    if family not in BATCH_ENCODINGS:
        raise LongsynthError(f"family: no encoding for task family {family!r}; known: {', '.join(BATCH_ENCODINGS)}")
    default = ENCODINGS[family].default_positional
    return BATCH_ENCODINGS[family](inputs, targets, default if positional is None else bool(positional))


def _pick_encoding(family, encode, positional):
    if encode:
        return encoder(family, positional)
    if positional is not None:
        raise LongsynthError("positional: only applies with encode=True")
    return _raw


def _tensor(a):
    """Tensor of an array, keeping 0-d values 0-d (np.ascontiguousarray would make them [1])."""
    a = np.asarray(a)
    return torch.from_numpy(a if a.flags.c_contiguous else a.copy())


def _raw(inputs, targets):
    return _tensor(inputs), _tensor(targets)
