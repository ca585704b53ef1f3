"""PyTorch data layer: stored shards, on-the-fly streams, and the paper's input encodings.

This is the only longsynth module that imports torch (``import longsynth`` never does).

    from longsynth.torch import ShardDataset, OnTheFlyDataset, pad_collate, seeded_sampler

* :class:`ShardDataset` - map-style dataset over one split of a stored dataset directory.
  HDF5 files are opened lazily in the process that reads them (each DataLoader worker opens
  its own handles; see pytorch issue #11929), and ``ds[i]`` reads sample i only.
* :class:`OnTheFlyDataset` - iterable stream of freshly generated batches for tasks with a
  ``batch`` kernel (the atomic tasks): batch ``s`` of rank ``r`` holds the samples with
  indices ``(s * world_size + r) * batch_size + [0, batch_size)``, so no two workers or
  ranks ever yield the same index, and a run resumes from its step counter exactly.
* Encodings (``encode=True``), chosen by the task's ``family`` field:

  ========== ============================================== ================================
  family     x                                              y
  ========== ============================================== ================================
  atomic     float32 [T, c+2]: task channels, then           float32 as stored
             cos(2 pi i/T), sin(2 pi i/T) (``positional``)
  pathfinder float32 [M*M, 1]: (p/255 - 0.5)/0.5 row-major   int64 [M*M] (labels 0, 1, 2;
                                                             classic pathfinder: int64 scalar)
             (+ the two positional channels with
             ``positional=True``, T = M*M)
  listops    int64 [n] token ids                             int64 [n], -1 -> -100
                                                             (classic listops: int64 scalar)
  tokens     int64 [L] token ids                             int64 [L] as stored (-100: not scored)
  ========== ============================================== ================================

  ``encode=False`` returns the stored arrays as tensors, unchanged; :func:`encode_batch`
  then applies the same encoding to a batch on the GPU (6x fewer bytes for Pathfinder).
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import torch
from torch.utils.data import Dataset as _TorchDataset
from torch.utils.data import DistributedSampler, IterableDataset, get_worker_info

from longsynth import values
from longsynth.api import resolve
from longsynth.errors import LongsynthError
from longsynth.generators.listops_tree import PAD_ID  # 15: one past the ListOps vocabulary
from longsynth.rng import split_name
from longsynth.store import open as _open_dataset

IGNORE_INDEX = -100  # targets the loss must skip (torch.nn.CrossEntropyLoss default)
PRIMARY = ("inputs", "targets")

__all__ = [
    "IGNORE_INDEX",
    "PAD_ID",
    "OnTheFlyDataset",
    "ShardDataset",
    "encode_batch",
    "encoder",
    "pad_collate",
    "positional_channels",
    "seeded_sampler",
]


# ---------------------------------------------------------------- encodings


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


# ---------------------------------------------------------------- stored datasets


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


def seeded_sampler(dataset, *, seed, shuffle=True, drop_last=False, rank=None, world_size=None):
    """A DistributedSampler whose epoch-e order is a pure function of (seed, e).

    Call ``sampler.set_epoch(e)`` before each epoch. Rank and world size come from
    torch.distributed when it is initialised, else from the arguments (default 0 of 1),
    so the same code shuffles reproducibly on one process and on many.
    """
    rank, world_size = _rank_world(rank, world_size)
    return DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed,
                              drop_last=drop_last)


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


def _rank_world(rank, world_size):
    if (rank is None) != (world_size is None):
        raise LongsynthError("rank, world_size: give both or neither")
    if rank is None:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise LongsynthError(f"world_size: must be an integer >= 1, got {world_size!r}")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
        raise LongsynthError(f"rank: must be an integer in [0, {world_size - 1}], got {rank!r}")
    return rank, world_size


# ---------------------------------------------------------------- on-the-fly streams

_KERNEL_PID = None  # process that last ran a generation kernel from this module


def _check_numba_fork():
    """RuntimeError if this process was forked after its parent started GNU OpenMP.

    Numba's "omp" threading layer with GNU OpenMP terminates a forked child that runs a
    parallel kernel. A DataLoader worker is such a child when the parent generated
    anything before the loader forked; spawn and forkserver workers are always safe.
    """
    from numba.np.ufunc import parallel

    if not parallel._is_initialized or _KERNEL_PID == os.getpid():
        return
    if parallel._threading_layer != "omp":
        return
    from numba.np.ufunc import omppool

    if omppool.openmp_vendor == "GNU":
        raise RuntimeError(
            "OnTheFlyDataset: this DataLoader worker was forked after the parent process ran a Numba "
            "parallel kernel (GNU OpenMP is not fork-safe); pass multiprocessing_context='spawn' "
            "(or 'forkserver') to the DataLoader, or use num_workers=0"
        )


class OnTheFlyDataset(IterableDataset):
    """Endless (or fixed-length) stream of freshly generated, encoded batches.

    Yields one batch per step: ``(x, y)`` with a leading axis of ``batch_size`` (use
    ``DataLoader(ds, batch_size=None, ...)``), or ``(x, y, extras)`` with ``extras=True``
    (extras: the task's extra keys stacked, and ``"index"`` int64 [batch_size]).

    Step ``s`` of rank ``r`` (of ``world_size``) holds samples
    ``(s * world_size + r) * batch_size + [0, batch_size)`` - exactly the samples a stored
    dataset of the same (task, params, seed, split) holds at those indices. DataLoader
    worker w of W yields steps ``start + w, start + w + W, ...``; the DataLoader delivers
    them in step order. ``start`` resumes the stream at a step counter; ``length`` (in
    steps, counted from 0) ends it, so ``len(ds) == length - start``; None streams forever.

    Rank and world size are ``rank`` / ``world_size`` when given, else torch.distributed's
    when iteration starts (so a stream built before ``init_process_group`` still splits
    over ranks), else 0 of 1.

    Workers: each worker generates with one Numba thread. Fork (the DataLoader default),
    spawn and forkserver workers all work: importing longsynth picks Numba's fork-safe
    threading layer unless you chose one. If you force GNU OpenMP ("omp") and the parent
    has run a parallel kernel, a forked worker raises a RuntimeError naming the way out.
    """

    def __init__(self, task, *, seed=0, split="train", length=None, encode=True, extras=False, start=0,
                 batch_size=16, positional=None, rank=None, world_size=None, **params):
        t, cfg, seed, _, _ = resolve(task, seed, split, params)
        if not t.batchable:
            raise LongsynthError(f"task: {task} has variable-length samples; use a stored dataset (ShardDataset)")
        for name, value, lo in (("batch_size", batch_size, 1), ("start", start, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                raise LongsynthError(f"{name}: must be an integer >= {lo}, got {value!r}")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < start):
            raise LongsynthError(f"length: must be None or an integer >= start ({start}), got {length!r}")
        # the resolved config: a resumed run that spells a default out is the same stream
        self.task, self.params, self.seed, self.split = t.name, dataclasses.asdict(cfg), seed, split_name(split)
        self.family = t.family
        self.batch_size, self.start, self.length = batch_size, start, length
        # explicit rank / world size, checked now; None: torch.distributed's at iteration
        self._given = None if rank is None and world_size is None else _rank_world(rank, world_size)
        self.extras = bool(extras)
        self.encode = _pick_encoding(self.family, encode, positional)
        self._resolved = None  # batch(): (task, config, seed, split code, fixed draws)

    @property
    def rank(self):
        return self._resolve()[0]

    @property
    def world_size(self):
        return self._resolve()[1]

    def _resolve(self):
        return self._given if self._given is not None else _rank_world(None, None)

    def __getstate__(self):
        # pickled for a spawn / forkserver worker, where torch.distributed is not
        # initialised: carry the rank of the process that starts the workers
        state = dict(self.__dict__)
        if state["_given"] is None:
            state["_given"] = _rank_world(None, None)
        return state

    def __len__(self):
        if self.length is None:
            raise TypeError("OnTheFlyDataset: endless stream (length=None) has no len()")
        return self.length - self.start

    def indices(self, step):
        """Sample indices of ``step`` on this rank: int64 [batch_size]."""
        first = (step * self.world_size + self.rank) * self.batch_size
        return np.arange(first, first + self.batch_size, dtype=np.int64)

    def state_dict(self, step):
        """What identifies this stream, at training step ``step`` (the next step to run)."""
        return {"task": self.task, "params": dict(self.params), "seed": self.seed, "split": self.split,
                "batch_size": self.batch_size, "world_size": self.world_size, "step": int(step)}

    def load_state_dict(self, state):
        """Resume at ``state["step"]``; ValueError if the state is of another stream.

        Call before the DataLoader starts its workers (they copy the dataset).
        """
        mine = self.state_dict(state["step"])
        diff = [k for k in mine if state.get(k) != mine[k]]
        if diff:
            raise LongsynthError(f"state: another stream ({', '.join(diff)} differ)")
        if self.length is not None and state["step"] > self.length:
            raise LongsynthError(f"state: step {state['step']} is past length {self.length}")
        self.start = int(state["step"])

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        if info is not None:
            _check_numba_fork()
            from numba import set_num_threads

            set_num_threads(1)
        resolved = resolve(self.task, self.seed, self.split, self.params)
        rank, world = self._resolve()  # once, when iteration starts
        step = self.start + worker
        while self.length is None or step < self.length:
            yield self._make(resolved, step, rank, world)
            step += workers

    def batch(self, step):
        """The batch of ``step`` on this rank, as iteration yields it (random access by step)."""
        rank, world = self._resolve()
        if self._resolved is None:  # the config and fixed draws, once
            self._resolved = resolve(self.task, self.seed, self.split, self.params)
        return self._make(self._resolved, step, rank, world)

    def _make(self, resolved, step, rank, world):
        global _KERNEL_PID
        t, cfg, seed, code, fixed = resolved
        first = (step * world + rank) * self.batch_size
        out = t.allocate(cfg, self.batch_size)  # fresh: yielded tensors share its memory
        t.fill(cfg, seed, code, first, out, fixed)
        _KERNEL_PID = os.getpid()
        x, y = self.encode(out["inputs"], out["targets"])
        if not self.extras:
            return x, y
        extras = {k: _tensor(v) for k, v in out.items() if k not in PRIMARY}
        extras["index"] = torch.from_numpy(np.arange(first, first + self.batch_size, dtype=np.int64))
        return x, y, extras
