"""On-the-fly streams: freshly generated, encoded batches of the tasks with a ``batch``
kernel, split over DataLoader workers and ranks by sample index."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from longsynth.api import MAX_SEED, resolve
from longsynth.errors import LongsynthError
from longsynth.rng import split_name
from longsynth.torch.encodings import PRIMARY, _pick_encoding, _tensor
from longsynth.torch.ranks import _rank_world

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


def _first_index(step, rank, world, batch_size, name="step"):
    """The first sample index of ``step`` on rank ``rank`` of ``world``; one LongsynthError line where the step's
    samples pass the last index sample() and batch() take (2^63 - 1): past it the kernels' int64 wraps."""
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise LongsynthError(f"{name}: must be an integer >= 0, got {step!r}")
    first = (int(step) * world + rank) * batch_size
    if first + batch_size - 1 > MAX_SEED:
        raise LongsynthError(f"{name}: step {int(step):,} at batch_size {batch_size:,} (rank {rank} of {world}) reads "
                             f"samples {first:,}..{first + batch_size - 1:,}, past the last index {MAX_SEED:,} "
                             f"(2^63 - 1)")
    return first


class OnTheFlyDataset(IterableDataset):
    """Endless (or fixed-length) stream of freshly generated, encoded batches.

    Yields one batch per step: ``(x, y)`` with a leading axis of ``batch_size`` (use
    ``DataLoader(ds, batch_size=None, ...)``), or ``(x, y, extras)`` with ``extras=True``
    (extras: the task's extra keys stacked, and ``"index"`` int64 [batch_size]).

    Step ``s`` of rank ``r`` (of ``world_size``) holds samples
    ``(s * world_size + r) * batch_size + [0, batch_size)`` - exactly the samples a stored
    dataset of the same (task, params, seed, split) holds at those indices. DataLoader
    worker w of W yields steps ``start + w, start + w + W, ...``; the DataLoader delivers
    them in step order. ``start`` resumes the stream at a step counter; ``steps`` (counted
    from 0) ends it, so ``len(ds) == steps - start``; None streams forever. Every other keyword is
    the task's (a Chomsky task's ``length`` is its input length, as in ``longsynth.batch``).

    Rank and world size are ``rank`` / ``world_size`` when given, else torch.distributed's
    when iteration starts (so a stream built before ``init_process_group`` still splits
    over ranks), else 0 of 1.

    Workers: each worker generates with one Numba thread. Fork (the DataLoader default),
    spawn and forkserver workers all work: importing longsynth picks Numba's fork-safe
    threading layer unless you chose one. If you force GNU OpenMP ("omp") and the parent
    has run a parallel kernel, a forked worker raises a RuntimeError naming the way out.
    """

    def __init__(self, task, *, seed=0, split="train", steps=None, encode=True, extras=False, start=0,
                 batch_size=16, positional=None, rank=None, world_size=None, **params):
        try:
            t, cfg, seed, _, _ = resolve(task, seed, split, params)
        except LongsynthError as e:
            if str(e).startswith("length: not a parameter"):  # the stream's count of steps was once named length
                raise LongsynthError(f"length: not a parameter of {task}; the stream's number of steps is steps= "
                                     f"(length= is a Chomsky task's input length)") from None
            raise
        if not t.batchable:
            raise LongsynthError(f"task: {task} has variable-length samples; use a stored dataset (ShardDataset)")
        for name, value, lo in (("batch_size", batch_size, 1), ("start", start, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                raise LongsynthError(f"{name}: must be an integer >= {lo}, got {value!r}")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < start):
            raise LongsynthError(f"steps: must be None or an integer >= start ({start}), got {steps!r}")
        _first_index(start, 0, 1, batch_size, "start")  # its first step, rank 0 of 1, within what sample() takes
        # the resolved config: a resumed run that spells a default out is the same stream
        self.task, self.params, self.seed, self.split = t.name, dataclasses.asdict(cfg), seed, split_name(split)
        self.family = t.family
        self.batch_size, self.start, self.steps = batch_size, start, steps
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
        if self.steps is None:
            raise TypeError("OnTheFlyDataset: endless stream (steps=None) has no len()")
        return self.steps - self.start

    def indices(self, step):
        """Sample indices of ``step`` on this rank: int64 [batch_size]."""
        first = _first_index(step, self.rank, self.world_size, self.batch_size)
        return np.arange(first, first + self.batch_size, dtype=np.int64)

    def state_dict(self, step):
        """What identifies this stream, at training step ``step`` (the next step to run)."""
        return {"task": self.task, "params": dict(self.params), "seed": self.seed, "split": self.split,
                "batch_size": self.batch_size, "world_size": self.world_size, "step": int(step)}

    def load_state_dict(self, state):
        """Resume at ``state["step"]``; ValueError if the state is of another stream.

        Call before the DataLoader starts its workers (they copy the dataset).
        """
        if not isinstance(state, dict):
            raise LongsynthError(f"state: another stream (a {type(state).__name__}, not a dict of its fields)")
        step = state.get("step")
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise LongsynthError(f"state: another stream (its step is {str(step)[:40]!r}, not a count from 0)")
        mine = self.state_dict(step)
        diff = [k for k in mine if state.get(k) != mine[k]]
        if diff:
            raise LongsynthError(f"state: another stream ({', '.join(diff)} differ)")
        if self.steps is not None and step > self.steps:
            raise LongsynthError(f"state: step {step} is past steps {self.steps}")
        self.start = int(step)

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
        while self.steps is None or step < self.steps:
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
        first = _first_index(step, rank, world, self.batch_size)
        out = t.allocate(cfg, self.batch_size)  # fresh: yielded tensors share its memory
        t.fill(cfg, seed, code, first, out, fixed)
        _KERNEL_PID = os.getpid()
        x, y = self.encode(out["inputs"], out["targets"])
        if not self.extras:
            return x, y
        extras = {k: _tensor(v) for k, v in out.items() if k not in PRIMARY}
        extras["index"] = torch.from_numpy(np.arange(first, first + self.batch_size, dtype=np.int64))
        return x, y, extras
