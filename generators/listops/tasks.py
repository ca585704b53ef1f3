"""ListOps-Subtrees (per-`]` tagging) and classic LRA ListOps (root value).

Definition (docs/tasks/listops.md, "Definition"): trees of the LRA process. A node at depth
d < max_depth is an operator with probability 1/4, otherwise a leaf; at d = max_depth it
is a leaf (the root has depth 1). A leaf is a digit uniform in 0..9; an operator has an
argument count uniform in 2..max_args and an operator uniform in MIN, MAX, MED, SM (sum
mod 10); MED = int(numpy.median(args)). Token length: leaf 1, operator 2 + its children.
A tree is kept iff min_length < length < max_length; samples are distributed exactly as
trees of the process conditioned on that window.

Vocabulary (token id -> string): 0 ``[MIN``, 1 ``[MAX``, 2 ``[MED``, 3 ``[SM``, 4 ``]``,
5..14 the digits ``0``..``9``.

Keys. listops-subtrees: ``inputs`` uint8 [n] token ids; ``targets`` int8 [n], the value of
the subtree closed at every ``]`` and -1 elsewhere; ``root`` int8 (root value);
``length`` int32 (n); ``heights`` and ``operators`` int8 [n_close], for every ``]`` in
order, the subtree height (leaf 0, operator 1 + max over children) and its operator id
(0..3); ``template`` uint64, a hash of the expression with its digits removed. Classic
``listops``: the same without ``root``, and ``targets`` is the root value (int8 scalar).

Worked example (15 tokens):
    inputs   [MAX 2 6 [MED [SM 3 1 6 ] 8 3 ] 4 5 ]
    ids      1    7 11 2   3   8 6 11 4 13 8 4 9 10 4
    targets  -1  -1 -1 -1  -1 -1 -1 -1 0 -1 -1 3 -1 -1 6
    heights [1, 2, 3], operators [3 (SM), 2 (MED), 1 (MAX)], root 6, length 15
(SM(3, 1, 6) = 0; MED(0, 8, 3) = 3; MAX(2, 6, 3, 4, 5) = 6.)

The tree sampler (draw order, kernels) is ``generators/listops/tree.py``; previews are
``generators/listops/show.py``.
"""
import functools
from dataclasses import dataclass

import numpy as np
from numba import njit

from longsynth.errors import LongsynthError
from longsynth.generators.listops.show import audit, show, show_dataset
from longsynth.generators.listops.tree import REVISION, VOCAB, generate_padded
from longsynth.task import KeySpec, Ragged, Task, param

MIN_ACCEPTANCE = 1e-6  # configs whose trees land in the window less often are refused


@dataclass(frozen=True)
class ListOpsSubtreesConfig:
    min_length: int = param(7000, "keep trees whose token length is > min_length", lo=1, hi=65534)
    max_length: int = param(8180, "keep trees whose token length is < max_length", lo=5, hi=65536)
    max_args: int = param(9, "most arguments per operator (at least 2)", lo=2, hi=16)
    max_depth: int = param(15, "depth limit; nodes at this depth are leaves (root depth 1)", lo=2, hi=32)


@dataclass(frozen=True)
class ListOpsConfig:
    min_length: int = param(500, "keep trees whose token length is > min_length", lo=1, hi=65534)
    max_length: int = param(2000, "keep trees whose token length is < max_length", lo=5, hi=65536)
    max_args: int = param(10, "most arguments per operator (at least 2)", lo=2, hi=16)
    max_depth: int = param(10, "depth limit; nodes at this depth are leaves (root depth 1)", lo=2, hi=32)



# ---------------------------------------------------------------- blocks


@njit(cache=True)
def _compact(padded, counts, offsets, values):
    for i in range(padded.shape[0]):
        values[offsets[i] : offsets[i + 1]] = padded[i, : counts[i]]


def _ragged(padded, counts):
    """Rows padded[i, :counts[i]] as one Ragged column (only the used cells are read)."""
    offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.empty(offsets[-1], dtype=padded.dtype)
    _compact(padded, counts, offsets, values)
    return Ragged(values, offsets)


def _block(cfg, seed, split, start, count, fixed, subtrees):
    p = generate_padded(cfg, seed, split, start, count)
    out = {"inputs": _ragged(p["tokens"], p["lengths"])}
    if subtrees:
        out["targets"] = _ragged(p["targets"], p["lengths"])
        out["root"] = p["roots"]
    else:
        out["targets"] = p["roots"]
    out["length"] = p["lengths"]
    out["heights"] = _ragged(p["heights"], p["ncloses"])
    out["operators"] = _ragged(p["operators"], p["ncloses"])
    out["template"] = p["templates"]
    return out


def _block_subtrees(cfg, seed, split, start, count, fixed):
    return _block(cfg, seed, split, start, count, fixed, True)


def _block_classic(cfg, seed, split, start, count, fixed):
    return _block(cfg, seed, split, start, count, fixed, False)


# ---------------------------------------------------------------- length law and checks


def _convolve(a, b, n):
    if n <= 2048:
        c = np.convolve(a, b)
    else:  # scipy.signal only here: importing it costs a second or two to every process that opens a ListOps set
        from scipy.signal import fftconvolve

        c = fftconvolve(a, b)
    return np.clip(c[:n], 0.0, None)


@functools.lru_cache(maxsize=32)
def _law(max_length, max_args, max_depth):
    p = np.zeros(max_length)
    p[1] = 1.0
    for _ in range(max_depth - 1):
        q, acc = p, np.zeros(max_length)
        for _k in range(2, max_args + 1):
            q = _convolve(q, p, max_length)
            acc += q
        nxt = np.zeros(max_length)
        nxt[1] = 0.75
        nxt[2:] += 0.25 / (max_args - 1) * acc[: max_length - 2]
        p = nxt
    p.setflags(write=False)
    return p


def length_law(cfg):
    """P(tree length = n) for n in 0..max_length-1 under the unconditioned LRA process."""
    return _law(cfg.max_length, cfg.max_args, cfg.max_depth)


def acceptance(cfg):
    """Probability that one tree of the process has min_length < length < max_length."""
    return float(length_law(cfg)[cfg.min_length + 1 :].sum())


def _check(cfg):
    if not cfg.min_length < cfg.max_length - 1:
        raise LongsynthError(
            f"min_length: must be < max_length - 1 (the window min_length < length < max_length "
            f"is empty), got min_length={cfg.min_length}, max_length={cfg.max_length}")
    p = acceptance(cfg)
    if p < MIN_ACCEPTANCE:
        raise LongsynthError(
            f"max_length: trees with max_args={cfg.max_args}, max_depth={cfg.max_depth} land in "
            f"{cfg.min_length} < length < {cfg.max_length} with probability {p:.3g} "
            f"(< {MIN_ACCEPTANCE:g}); widen the window or change max_args/max_depth")


# ---------------------------------------------------------------- keys and vocabulary


def _keys_common(cfg):
    return {
        "length": KeySpec("int32", (), doc="number of tokens"),
        "heights": KeySpec("int8", (), ragged=True, doc="height of the subtree closed by each `]`, in order"),
        "operators": KeySpec("int8", (), ragged=True, doc="operator id (0 MIN, 1 MAX, 2 MED, 3 SM) of each `]`",
                             bounds=(0, 3)),
        "template": KeySpec("uint64", (), doc="hash of the expression with digits removed"),
    }


def _keys_subtrees(cfg):
    keys = {
        "inputs": KeySpec("uint8", (), ragged=True, doc="token ids (see vocab)", bounds=(0, len(VOCAB) - 1)),
        "targets": KeySpec("int8", (), ragged=True, doc="value 0..9 of the subtree closed at each `]`; -1 elsewhere",
                           bounds=(-1, 9)),
        "root": KeySpec("int8", (), doc="value of the whole expression", bounds=(0, 9)),
    }
    keys.update(_keys_common(cfg))
    return keys


def _keys_classic(cfg):
    keys = {
        "inputs": KeySpec("uint8", (), ragged=True, doc="token ids (see vocab)", bounds=(0, len(VOCAB) - 1)),
        "targets": KeySpec("int8", (), doc="value 0..9 of the whole expression", bounds=(0, 9)),
    }
    keys.update(_keys_common(cfg))
    return keys


def _vocab(cfg):
    return list(VOCAB)


# ---------------------------------------------------------------- tasks

_CARD = (
    "Trees of the LRA ListOps process (operator with probability 1/4 below max_depth, "
    "2..max_args arguments, MIN/MAX/MED/SM, digits 0..9) conditioned exactly on "
    "min_length < token length < max_length by rejection. Vocabulary: " + " ".join(VOCAB) + ". "
)

LISTOPS_SUBTREES = Task(
    name="listops-subtrees",
    config=ListOpsSubtreesConfig,
    summary="ListOps expressions tagged with the value of the subtree closed at every `]`",
    keys=_keys_subtrees,
    block=_block_subtrees,
    check=_check,
    family="listops",
    card=_CARD + "Targets: the subtree value at each `]`, -1 elsewhere (ignored).",
    default_num_samples=100_000,
    vocab=_vocab,
    show=show,
    show_dataset=show_dataset,
    audit=audit,
    revision=REVISION,
)

LISTOPS = Task(
    name="listops",
    config=ListOpsConfig,
    summary="classic LRA ListOps: the value of a bracketed expression",
    keys=_keys_classic,
    block=_block_classic,
    check=_check,
    family="listops",
    card=_CARD + "Target: the value of the whole expression.",
    default_num_samples=100_000,
    vocab=_vocab,
    show=show,
    show_dataset=show_dataset,
    audit=audit,
    revision=REVISION,
)

TASKS = [LISTOPS_SUBTREES, LISTOPS]
