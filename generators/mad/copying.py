"""MAD's selective copying (mad/data/instances.py ``generate_selective_copying_instance``);
definition and worked example: docs/tasks/mad.md.

Vocabulary layout (V = vocab_size):
    mad-selective-copying          data [0, V - 2), blank V - 2, copy V - 1

Draw order (the notation: generators/mad/common.py):
    selective    num_tokens_to_copy tokens randint(V - 2), then pairs(g) for the
                 seq_len - 2 num_tokens_to_copy - 1 blanks: their gaps, with
                 g = num_tokens_to_copy (num_tokens_to_copy + 1 with blank_after_last).
"""
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._tokens import IGNORE
from longsynth.generators.mad.common import MAX_LEN, _require, _seq_len, _seq_length, _task, _vocab
from longsynth.rng import next_u64, randint, stream
from longsynth.task import param

CopyLaw = namedtuple("CopyLaw", "n_data blank copy n_copy n_blank n_gaps")


@dataclass(frozen=True)
class SelectiveCopyingConfig:
    vocab_size: int = _vocab(16)
    seq_len: int = _seq_len(256)
    num_tokens_to_copy: int = param(16, "data tokens scattered among blanks, copied after the copy token",
                                    lo=1, hi=MAX_LEN)
    blank_after_last: bool = param(False, "let blanks follow the last data token (MAD never does: off keeps "
                                   "MAD's law)")


def _check_copying(cfg):
    _require(cfg.seq_len > 2 * cfg.num_tokens_to_copy + 1,
             f"seq_len: must exceed 2 num_tokens_to_copy + 1 = {2 * cfg.num_tokens_to_copy + 1}, got {cfg.seq_len}")


def _copy_law(cfg):
    n = cfg.num_tokens_to_copy
    return CopyLaw(cfg.vocab_size - 2, cfg.vocab_size - 2, cfg.vocab_size - 1, n, cfg.seq_len - 2 * n - 1,
                   n + 1 if cfg.blank_after_last else n)


@njit(cache=True)
def count_pairs(s, draws, counts):
    """counts[j] += 1 for ``draws`` values j uniform on [0, len(counts)) (< 2^32), in order:
    rng.below's multiply-shift with rejection, but on both 32-bit halves of each next_u64 (low
    half first), two draws a word. Selective copying draws a gap per blank, most of its
    sequence: half the generator calls of one ``below`` per blank."""
    g = np.uint64(counts.shape[0])
    low = np.uint64(0xFFFFFFFF)
    threshold = (np.uint64(1 << 32) - g) % g  # 2^32 mod bound
    word = np.uint64(0)
    halves = 0
    for _ in range(draws):
        while True:  # 1 <= g < 2^32: a half is accepted with probability 1 - (2^32 mod g) / 2^32 > 1/2
            if halves == 0:
                word = next_u64(s)
                x = word & low
                halves = 1
            else:
                x = word >> np.uint64(32)
                halves = 0
            m = x * g
            if (m & low) >= threshold:
                break
        counts[np.int64(m >> np.uint64(32))] += 1


@njit(cache=True)
def copying_one(seed, split, index, law, inp, tgt):
    """inp, tgt [seq_len]: data tokens with blanks in the gaps before them, copy token, blanks."""
    s = stream(seed, split, index)
    n = law.n_copy
    m = inp.shape[0] - n
    for j in range(n):  # the data tokens, kept where the targets want them
        tgt[m + j] = randint(s, law.n_data)
    gaps = np.zeros(law.n_gaps, dtype=np.int64)
    count_pairs(s, law.n_blank, gaps)
    inp[:] = law.blank
    pos = -1
    for j in range(n):
        pos += gaps[j] + 1  # data token j follows the blanks of gaps 0..j
        inp[pos] = tgt[m + j]
    inp[law.n_blank + n] = law.copy
    tgt[:m] = IGNORE


@njit(cache=True, parallel=True)
def copying_fill(seed, split, start, law, inp, tgt):
    for b in prange(inp.shape[0]):
        copying_one(seed, split, start + b, law, inp[b], tgt[b])


def _fill_copying(cfg, seed, split, start, out, fixed):
    copying_fill(seed, split, start, _copy_law(cfg), out["inputs"], out["targets"])


TASKS = [
    _task("mad-selective-copying", config=SelectiveCopyingConfig,
          summary="MAD selective copying: copy the tokens among blanks",
          length=_seq_length, fill=_fill_copying, check=_check_copying,
          card="num_tokens_to_copy data tokens scattered among blanks, a copy token, then the data tokens are the "
          "targets of the last positions (docs/tasks/mad.md)."),
]
