"""flipflop: the flip-flop language FFL(T, p) of Liu et al. (docs/tasks/flipflop.md).

A string is T instructions, each an operation and a bit: ``w b`` writes b, ``i b`` is ignored,
``r b`` reads, b the last bit written. The first instruction is a write, the last a read; each
other is ignore with probability p_ignore, write or read with (1 - p_ignore) / 2 each. Tokens are
the map of the authors' data card (synthseq/flipflop on the Hugging Face Hub): w 0, r 1, i 2,
bit 0 as 3, bit 1 as 4; a row is the 2T tokens, inputs the first 2T - 1 and targets[k] the token
k + 1 where it is a read's bit (the only tokens the language decides), -100 elsewhere.

Draw order (stream(seed, split, index)), instruction after instruction: the operation (none for
the first and the last), u = uniform(): ignore if u < p_ignore, else write if u < p_ignore +
(1 - p_ignore) / 2, else read; then the bit, below(2), for a write or an ignore (a read draws
none).

Worked example (T = 4): w 1, i 0, r -, r -:

    tokens   0  4  2  3  1  4  1  4
    inputs   0  4  2  3  1  4  1
    targets  .  .  .  .  4  .  4        (. = -100)
"""
import dataclasses
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._tokens import IGNORE, REVISION, token_dtype
from longsynth.rng import below, stream, uniform
from longsynth.task import KeySpec, Task, param

WRITE, READ, IGNORE_OP, ZERO = 0, 1, 2, 3  # the data card's ids; bit b is ZERO + b
MAX_T = 1 << 23

CITATION = """@inproceedings{liu2023flipflop,
  title     = {Exposing Attention Glitches with Flip-Flop Language Modeling},
  author    = {Liu, Bingbin and Ash, Jordan T. and Goel, Surbhi and Krishnamurthy, Akshay and Zhang, Cyril},
  booktitle = {NeurIPS},
  year      = {2023}
}"""


# the Hub's splits (synthseq/flipflop's data card): the p of the FFL(p) each was drawn from
HUB_SPLITS = {"train": 0.8, "val": 0.8, "val_dense": 0.1, "val_sparse": 0.98}


@dataclass(frozen=True)
class FlipFlopConfig:
    T: int = param(256, "instructions in a string (the paper's T; the Hub's data: 256, so 512 tokens)", lo=2,
                   hi=MAX_T)
    p_ignore: float | None = param(None, "probability of an ignore among the instructions between the first and the "
                                         "last (the paper's p) [default: 0.8, or --preset's]; write and read share the "
                                         "rest equally", lo=0.0, hi=1.0)
    preset: str | None = param(None, "the law of one of the Hub's splits: train and val FFL(0.8), val_dense FFL(0.1), "
                                     "val_sparse FFL(0.98) (sets p_ignore)", choices=tuple(HUB_SPLITS))


def _resolve(cfg):
    """p_ignore from the preset (0.8 without one); a p_ignore given beside a preset must be the preset's."""
    from longsynth.errors import LongsynthError

    p = HUB_SPLITS[cfg.preset or "train"]
    if cfg.p_ignore is not None and cfg.preset is not None and cfg.p_ignore != p:
        raise LongsynthError(f"p_ignore: {cfg.p_ignore} disagrees with --preset {cfg.preset} (FFL({p})); give one "
                             f"of them, or equal values")
    return cfg if cfg.p_ignore is not None else dataclasses.replace(cfg, p_ignore=p)


@njit(cache=True)
def flipflop_one(seed, split, index, T, p, inp, tgt):
    """inp, tgt [2T - 1] of one string."""
    s = stream(seed, split, index)
    write = p + (1.0 - p) / 2.0
    last = 0
    for t in range(T):
        if t == 0:
            op = WRITE
        elif t == T - 1:
            op = READ
        else:
            u = uniform(s)
            op = IGNORE_OP if u < p else WRITE if u < write else READ
        if op == READ:
            bit = last
        else:
            bit = below(s, 2)
            if op == WRITE:
                last = bit
        inp[2 * t] = op
        tgt[2 * t] = ZERO + bit if op == READ else IGNORE
        if t < T - 1:
            inp[2 * t + 1] = ZERO + bit
            tgt[2 * t + 1] = IGNORE


@njit(cache=True, parallel=True)
def flipflop_fill(seed, split, start, T, p, inp, tgt):
    for b in prange(inp.shape[0]):
        flipflop_one(seed, split, start + b, T, p, inp[b], tgt[b])


def rows(tok, dtype):
    """{inputs, targets} [n, 2T - 1] in ``dtype`` (the task's keys') of token strings [n, 2T], laid out as
    the task's rows (flipflop.py)."""
    n, width = tok.shape
    inputs = np.ascontiguousarray(tok[:, :-1], dtype=dtype)
    targets = np.full((n, width - 1), IGNORE, dtype=dtype)
    reads = tok[:, 0:-1:2] == READ
    targets[:, 0::2] = np.where(reads, tok[:, 1::2], IGNORE)
    return {"inputs": inputs, "targets": targets}


def law(tok):
    """(row, text) of the first row of token strings [n, 2T] that is not a flip-flop string, or None: operations
    and bits alternate, the first instruction writes and the last reads, and every read's bit is the last
    bit written (docs/tasks/flipflop.md, "Definition")."""
    if tok.shape[1] < 4 or tok.shape[1] % 2:
        return 0, f"strings of {tok.shape[1]} tokens: a string is 2T tokens, T >= 2"
    ops, bits = tok[:, 0::2].astype(np.int64), tok[:, 1::2].astype(np.int64)
    checks = (
        (~np.isin(ops, (WRITE, READ, IGNORE_OP))).any(axis=1), "something other than an operation where one belongs",
        ops[:, 0] != WRITE, "the first instruction is not a write",
        ops[:, -1] != READ, "the last instruction is not a read",
        (~np.isin(bits, (ZERO, ZERO + 1))).any(axis=1), "something other than a bit where one belongs",
    )
    for bad, text in zip(checks[0::2], checks[1::2]):
        if bad.any():
            return int(np.argmax(bad)), text
    t = np.arange(ops.shape[1])
    last = np.maximum.accumulate(np.where(ops == WRITE, t, 0), axis=1)  # the last write at or before t
    wrong = (ops == READ) & (bits != np.take_along_axis(bits, last, axis=1))
    if wrong.any():
        i = int(np.argmax(wrong.any(axis=1)))
        return i, f"the read at instruction {int(np.argmax(wrong[i]))} does not return the last bit written"
    return None


def law_of_rows(cfg, block):
    """(row, text) of the first row of a block {inputs, targets} [n, 2T - 1] that is not a flip-flop string
    laid out as ours, or None: the check ``verify --deep`` makes of rows no seed regenerates (imported)."""
    inputs, targets = np.asarray(block["inputs"]), np.asarray(block["targets"])
    last = targets[:, -1:].astype(np.int64)  # the last read's bit: the 2T-th token
    last[last == IGNORE] = 255  # no read there: no token, which the law refuses
    tok = np.concatenate([inputs.astype(np.int64), last], axis=1)
    bad = law(tok)
    if bad is not None:
        return bad
    wrong = (rows(tok, targets.dtype)["targets"] != targets).any(axis=1)
    return (int(np.argmax(wrong)), "targets other than the reads' bits") if wrong.any() else None


def _keys(cfg):
    dt = token_dtype(5)
    n = 2 * cfg.T - 1
    return {"inputs": KeySpec(dt, (n,), doc="the first 2T - 1 tokens: w 0, r 1, i 2, bit 0 3, bit 1 4"),
            "targets": KeySpec(dt, (n,), doc="the next token where it is a read's bit, -100 elsewhere")}


def _fill(cfg, seed, split, start, out, fixed):
    flipflop_fill(seed, split, start, cfg.T, float(cfg.p_ignore), out["inputs"], out["targets"])


TASK = Task(
    name="flipflop",
    config=FlipFlopConfig,
    summary="Liu et al.'s flip-flop language FFL(T, p): read back the last bit written, past ignores",
    keys=_keys,
    fill=_fill,
    family="tokens",
    revision=REVISION,
    vocab_size=lambda cfg: 5,
    vocab=lambda cfg: ["w", "r", "i", "0", "1"],
    citation=CITATION,
    law=law_of_rows,
    resolve=_resolve,
    card="T instructions: w b writes bit b, i b is ignored, r b reads b = the last bit written; the first a write, "
         "the last a read, the others ignore with probability p_ignore and write or read with (1 - p_ignore) / 2 "
         "each. Tokens w 0, r 1, i 2, bits 3 and 4 (the synthseq/flipflop data card); targets are the reads' bits. "
         "Liu et al., Exposing Attention Glitches with Flip-Flop Language Modeling (NeurIPS 2023).",
)
