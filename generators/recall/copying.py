"""selective-copying: Mamba's selective copying task (docs/tasks/selective-copying.md).

Definition (Gu and Dao, Mamba, appendix E.1; the law of S4's ``torch_copying_data(L, M, A,
variable=True)``, state-spaces/s4 ``src/dataloaders/datasets/copying.py``, the nearest
released code): A tokens; 0 is noise, A - 1 the marker, 1..A-2 the data tokens. M data
tokens, each uniform on 1..A-2, are placed in order at M distinct positions, uniform among
the M-subsets of the L + M first positions; every other of those positions is 0; then
come M markers. inputs [L + 2M]; targets [L + 2M] are -100 except the last M, which are
the data tokens in order: the model must reproduce them at the markers.

Draw order (stream(seed, split, index); below: longsynth.rng's exact multiply-shift draw):
the M tokens, 1 + below(A - 2) each; then the positions by Floyd's algorithm with
n = L + M: for t = n - M .. n - 1: r = below(t + 1); t is chosen if r already is, else r.
Tokens go to the chosen positions in increasing order.

Worked example (L = 4, M = 2, A = 6): tokens (3, 1), positions {1, 4}:
    inputs   0    3    0    0    1    0    5    5
    targets -100 -100 -100 -100 -100 -100  3    1
"""
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.errors import LongsynthError
from longsynth.generators._authors import Authors, Stream, block_rows
from longsynth.generators._tokens import IGNORE, REVISION, token_dtype
from longsynth.rng import below, stream
from longsynth.task import KeySpec, Task, param

MAX_L = 1 << 24

MAMBA = """@article{gu2023mamba,
  title   = {Mamba: Linear-Time Sequence Modeling with Selective State Spaces},
  author  = {Gu, Albert and Dao, Tri},
  journal = {arXiv:2312.00752},
  year    = {2023}
}"""


@dataclass(frozen=True)
class CopyingConfig:
    L: int = param(4064, "noise positions: the data tokens lie among the first L + M positions (S4's L; at least "
                         "1: with none there is nothing to select)", lo=1, hi=MAX_L)
    M: int = param(16, "data tokens to reproduce, then as many markers (S4's M)", lo=1, hi=1 << 16)
    A: int = param(16, "vocabulary: 0 noise, 1..A-2 data, A-1 the marker (S4's A)", lo=3, hi=1 << 15)


@njit(cache=True)
def copying_one(seed, split, index, A, taken, pos, inp, tgt):
    """inp, tgt [L + 2M]; ``taken``: a zeroed byte map of L + M positions (zeroed again on
    return); ``pos`` [M] scratch."""
    m = pos.shape[0]
    n = taken.shape[0]  # L + M
    s = stream(seed, split, index)
    for j in range(m):  # the tokens, kept in the targets' last m slots
        tgt[n + j] = 1 + below(s, A - 2)
    for j, t in enumerate(range(n - m, n)):
        r = below(s, t + 1)
        if taken[r]:
            r = t
        taken[r] = 1
        k = j  # kept sorted as it grows: an insertion into pos[:j] (a sort call cost 4x the draws)
        while k > 0 and pos[k - 1] > r:
            pos[k] = pos[k - 1]
            k -= 1
        pos[k] = r
    inp[:n] = 0
    tgt[:n] = IGNORE
    inp[n:] = A - 1
    for j in range(m):
        inp[pos[j]] = tgt[n + j]
        taken[pos[j]] = 0


@njit(cache=True, parallel=True)
def copying_fill(seed, split, start, A, n, inp, tgt):
    count = inp.shape[0]
    m = inp.shape[1] - n
    chunks = min(count, 64)
    for c in prange(chunks):  # scratch allocated once per chunk of samples
        taken = np.zeros(n, dtype=np.uint8)
        pos = np.empty(m, dtype=np.int64)
        for b in range(c * count // chunks, (c + 1) * count // chunks):
            copying_one(seed, split, start + b, A, taken, pos, inp[b], tgt[b])


def _keys(cfg):
    dt = token_dtype(cfg.A)
    T = cfg.L + 2 * cfg.M
    return {"inputs": KeySpec(dt, (T,), doc="0 noise, M data tokens at random positions, then M markers A-1"),
            "targets": KeySpec(dt, (T,), doc="the M data tokens at the markers, -100 elsewhere")}


def _fill(cfg, seed, split, start, out, fixed):
    copying_fill(seed, split, start, cfg.A, cfg.L + cfg.M, out["inputs"], out["targets"])


def _authors_open(cfg, count, seed, split):
    """S4's ``torch_copying_data(L, M, A, variable=True, batch_shape=(count,))`` after
    ``torch.manual_seed(seed')`` (seed' = seed + 0, 1, 2 for train, val, test), as its
    ``CopyingEvalDataset`` makes a set: the same torch calls in the same order (``randint``
    of all tokens, then a ``randperm(L + M)`` per row) on a private ``torch.Generator``, the
    rest in NumPy; x as inputs, the tokens as the last M targets. Needs torch. A Stream
    (generators/_authors.py): the one ``randint`` of every row's tokens comes first and is
    kept (int64 [count, M]); the rows follow block by block."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise LongsynthError("selective-copying: the authors' stream is S4's torch code; pip install torch") from None
    T = cfg.L + 2 * cfg.M
    return Stream(count, _s4_blocks(cfg, count, seed, split, block_rows((T,))), (T,), side_bytes=count * cfg.M * 8,
                  side_doc="every row's tokens, which S4 draws in one call before the first row's positions")


def _s4_blocks(cfg, count, seed, split, block):
    import torch

    L, M, A = cfg.L, cfg.M, cfg.A
    g = torch.Generator().manual_seed(seed + {"train": 0, "val": 1, "test": 2}[split])
    tokens = torch.randint(low=1, high=A - 1, size=(count, M), generator=g).numpy()
    for lo in range(0, count, block):
        n = min(block, count - lo)
        inds = np.empty((n, M), dtype=np.int64)
        for i in range(n):
            inds[i] = torch.randperm(L + M, generator=g)[:M].numpy()
        inds.sort(axis=1)
        tok = tokens[lo : lo + n]
        inputs = np.zeros((n, L + 2 * M), dtype=np.int64)
        np.put_along_axis(inputs, inds, tok, axis=1)  # S4's scatter_ of the tokens at the sorted positions
        inputs[:, L + M :] = A - 1
        targets = np.full((n, L + 2 * M), IGNORE, dtype=np.int64)
        targets[:, L + M :] = tok
        yield {"inputs": inputs, "targets": targets}


authors_rows = Authors(_authors_open)  # called: the whole split, as S4's function returns it


TASK = Task(
    name="selective-copying",
    config=CopyingConfig,
    summary="Mamba's selective copying: reproduce the M data tokens scattered among noise, at the markers",
    keys=_keys,
    fill=_fill,
    family="tokens",
    revision=REVISION,
    vocab_size=lambda cfg: cfg.A,
    authors=authors_rows,
    citation=MAMBA,
    card="M data tokens (1..A-2) at uniformly random distinct positions among L + M noise zeros, then M markers "
         "A-1; the targets at the markers are the data tokens in order, -100 elsewhere. Mamba appendix E.1; the "
         "law of S4's torch_copying_data(L, M, A, variable=True) (state-spaces/s4).",
)
