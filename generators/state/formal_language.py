"""Parity and modular arithmetic (with or without brackets): the formal-language state-tracking
tasks of Grazzi et al., with their token layouts and their train/test length protocol.

Definitions (docs/tasks/state-tracking.md, "parity" and "modular-arithmetic"). A raw sequence
w of ``context_length`` C tokens holds n tokens of a word and its answer, then padding; its
length n is uniform in [min_sequence_length, max_sequence_length] for the train split and
in [test_min_sequence_length, test_max_sequence_length] for val and test (the paper trains
on 3-40 and tests on 40-256). As the authors' loader does, the answer is hidden in the input
(its position set to 0) and the pair is shifted by one: ``inputs`` = masked w[0..C-2],
``targets`` = w[1..C-1] with -100 everywhere but the answer, so exactly one token is scored,
at the position of the token just before the answer. Keys: ``inputs``, ``targets`` int16
[C - 1].

Draws: the length comes first, ``randint`` of the sample's stream; every later draw d(k)
(uniform in 0..k-1) is ``small_draw``: Lemire's multiply-shift on the 32-bit halves of the
stream's next words, low half first (x a half, m = x k, accepted when m mod 2^32 >= 2^32 mod
k, d = m >> 32; a rejected half is skipped).

parity (V = vocab_size, default 3): w = t_1..t_{n-1}, a, 0...; t_i uniform in 1..V-1,
    a = (sum of (t_i - 1)) mod (V - 1) + 1 (V = 3: bits are 1, 2; the answer 1 + parity).
    Draw order: n = lo + randint(hi - lo + 1), then t_i = 1 + d(V - 1) for i = 1..n-1.
modular-arithmetic, brackets off (V default 10, M = V - 5): n is odd, n = 2r - 1 with r
    uniform in [(lo + 1) // 2, (hi + 1) // 2]; w = u_0 o_1 u_1 ... o_{r-2} u_{r-2} = a 0...,
    numbers u = 5 + value (value in 0..M-1), operators 1 '+', 2 '-', 3 '*', '=' 4; '*' binds
    tighter; a = 5 + (the expression mod M). Draw order: r by randint, then the n - 2 tokens
    left to right (a number 5 + d(M), an operator 1 + d(3)).
modular-arithmetic, brackets on (V default 12, M = V - 7): numbers 0..M-1, then '+' M,
    '-' M+1, '*' M+2, '(' M+3, ')' M+4, '=' M+5, PAD M+6. n = max(uniform length, 5);
    w = e '=' a PAD PAD... with e an expression of l = n - 3 tokens: l = 1: t; 2: - t;
    3: ( t ); 4: ( - t ) (t a number); l >= 5: ( e_1 op e_2 ) with |e_1| uniform in
    1..l-4, op '+' or '-' ('*' too when ``mult``); a = e mod M. Draw order: the length by
    randint, then the expression in pre-order: for l >= 5, |e_1| = 1 + d(l - 4), e_1, e_2,
    then op = d(2 or 3); for l < 5, t = d(M).

Worked example (parity, C = 8, n = 5, t = 2 1 2 2): w = 2 1 2 2 2 0 0 0 (three 1-bits:
parity 1, a = 2); inputs 2 1 2 2 0 0 0; targets -100 -100 -100 2 -100 -100 -100.

The authors' exact streams: formal_authors.py.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.errors import LongsynthError
from longsynth.generators._tokens import IGNORE
from longsynth.rng import next_u64, randint, stream
from longsynth.generators.state.formal_authors import (EQUALS, MINUS, TIMES, authors_modular, authors_parity,
                                                     split_lengths)
from longsynth.task import KeySpec, Task, param

CITATION = """@inproceedings{grazzi2025unlocking,
  title     = {Unlocking State-Tracking in Linear {RNN}s Through Negative Eigenvalues},
  author    = {Grazzi, Riccardo and Siems, Julien and Zela, Arber and Franke, J{\\"o}rg K. H. and Hutter, Frank
               and Pontil, Massimiliano},
  booktitle = {International Conference on Learning Representations (ICLR)},
  note      = {arXiv:2411.12537},
  year      = {2025}
}"""
MAX_CONTEXT = 1 << 20
MAX_VOCAB = int(np.iinfo(np.int16).max)
FIRST_NUMBER = 5


def _lengths(help_train, lo_min):
    return (
        param(3, f"shortest {help_train} (train split)", lo=lo_min, hi=MAX_CONTEXT),
        param(40, f"longest {help_train} (train split)", lo=lo_min, hi=MAX_CONTEXT),
        param(256, "tokens per raw sequence; inputs and targets hold context_length - 1", lo=5, hi=MAX_CONTEXT),
        param(40, f"shortest {help_train} in the val and test splits", lo=lo_min, hi=MAX_CONTEXT),
        param(256, f"longest {help_train} in the val and test splits", lo=lo_min, hi=MAX_CONTEXT),
    )


_P = _lengths("word plus answer", 2)
_M = _lengths("expression plus '=' and answer", 3)


@dataclass(frozen=True)
class ParityConfig:
    vocab_size: int = param(3, "tokens 0 (pad) and 1..vocab_size-1; the answer is the sum mod vocab_size-1",
                            lo=3, hi=MAX_VOCAB)
    min_sequence_length: int = _P[0]
    max_sequence_length: int = _P[1]
    context_length: int = _P[2]
    test_min_sequence_length: int = _P[3]
    test_max_sequence_length: int = _P[4]


@dataclass(frozen=True)
class ModularArithmeticConfig:
    vocab_size: int | None = param(None, "vocabulary; numbers are vocab_size - 5 (brackets: - 7) residues "
                                   "[default: 10, brackets 12]", lo=6, hi=MAX_VOCAB)
    brackets: bool = param(False, "nested bracketed expressions (the authors' modular_arithmetic_with_brackets)")
    mult: bool = param(False, "with brackets: '*' among the operators (the authors' mult)")
    min_sequence_length: int = _M[0]
    max_sequence_length: int = _M[1]
    context_length: int = _M[2]
    test_min_sequence_length: int = _M[3]
    test_max_sequence_length: int = _M[4]


def _check_lengths(cfg):
    for lo_name, hi_name in (("min_sequence_length", "max_sequence_length"),
                             ("test_min_sequence_length", "test_max_sequence_length")):
        lo, hi = getattr(cfg, lo_name), getattr(cfg, hi_name)
        if lo > hi:
            raise LongsynthError(f"{lo_name}: {lo} exceeds {hi_name} = {hi}")
        if hi > cfg.context_length:
            raise LongsynthError(f"{hi_name}: {hi} exceeds context_length = {cfg.context_length}")


def _check_modular(cfg):
    _check_lengths(cfg)
    if cfg.mult and not cfg.brackets:
        raise LongsynthError("mult: applies to --brackets only (without brackets '*' is always an operator)")
    if cfg.brackets and cfg.vocab_size is not None and cfg.vocab_size < 8:
        raise LongsynthError(
            f"vocab_size: with brackets at least 8 (7 special tokens and a number), got {cfg.vocab_size}"
        )


def _resolve_modular(cfg):
    if cfg.vocab_size is not None:
        return cfg
    return ModularArithmeticConfig(**{**cfg.__dict__, "vocab_size": 12 if cfg.brackets else 10})


# ---------------------------------------------------------------- kernels

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


@njit(cache=True, inline="always")
def small_draw(s, n, word, left):
    """(v, word, left): v uniform in [0, n), 1 <= n < 2^31, from 32-bit halves of the stream's
    words (low half first; ``left`` halves of ``word`` remain), by Lemire's multiply-shift:
    x a half, m = x * n, accept when m mod 2^32 >= 2^32 mod n, v = m >> 32."""
    un = np.uint64(n)
    while True:  # a half is accepted with probability 1 - (2^32 mod n) / 2^32 > 1/2
        if left == 0:
            word = next_u64(s)
            left = 2
        x = word & _LOW32
        word = word >> _SHIFT32
        left -= 1
        m = x * un
        low = m & _LOW32
        if low >= un or low >= ((_LOW32 + np.uint64(1)) % un):
            return np.int64(m >> _SHIFT32), word, left


@njit(cache=True)
def _clear(inp, tgt):
    for i in range(inp.shape[0]):
        inp[i] = 0
        tgt[i] = IGNORE


@njit(cache=True)
def parity_one(seed, split, index, vocab_size, lo, hi, inp, tgt):
    """inp, tgt [C - 1]: n - 1 symbols then zeros; the answer at target position n - 2."""
    s = stream(seed, split, index)
    n = lo + randint(s, hi - lo + 1)
    _clear(inp, tgt)
    total = 0
    word, left = np.uint64(0), 0
    for i in range(n - 1):
        v, word, left = small_draw(s, vocab_size - 1, word, left)
        t = 1 + v
        inp[i] = t
        total += t - 1
    tgt[n - 2] = total % (vocab_size - 1) + 1


@njit(cache=True)
def modular_one(seed, split, index, vocab_size, lo, hi, inp, tgt):
    """inp, tgt [C - 1]: u_0 o_1 u_1 ... = (answer hidden) 0...; the answer at target n - 2."""
    s = stream(seed, split, index)
    r_lo = (lo + 1) // 2
    r = r_lo + randint(s, (hi + 1) // 2 - r_lo + 1)
    n = 2 * r - 1
    m = vocab_size - FIRST_NUMBER
    _clear(inp, tgt)
    total = 0
    term = 0
    sign = 1
    word, left = np.uint64(0), 0
    for i in range(n - 2):
        if i % 2 == 0:
            v, word, left = small_draw(s, m, word, left)
            inp[i] = FIRST_NUMBER + v
            if i == 0 or inp[i - 1] != TIMES:
                term = v
            else:
                term = term * v % m
        else:
            op, word, left = small_draw(s, 3, word, left)
            op += 1
            inp[i] = op
            if op != TIMES:
                total = (total + sign * term + m) % m
                sign = -1 if op == MINUS else 1
    total = (total + sign * term + m) % m
    inp[n - 2] = EQUALS
    tgt[n - 2] = FIRST_NUMBER + total


@njit(cache=True)
def brackets_one(seed, split, index, vocab_size, lo, hi, n_ops, inp, tgt):
    """inp, tgt [C - 1]: expression, '=', answer hidden (0), PAD...; the answer at target l."""
    s = stream(seed, split, index)
    m = vocab_size - 7
    plus, minus, lpar, rpar, equals, pad = m, m + 1, m + 3, m + 4, m + 5, m + 6
    n = max(lo + randint(s, hi - lo + 1), 5)
    length = n - 3
    for i in range(inp.shape[0]):
        inp[i] = pad
        tgt[i] = IGNORE
    # explicit stack of nodes (position, length, left length, left value, stage)
    cap = length + 1
    pos = np.empty(cap, dtype=np.int64)
    size = np.empty(cap, dtype=np.int64)
    left = np.empty(cap, dtype=np.int64)
    lval = np.empty(cap, dtype=np.int64)
    stage = np.empty(cap, dtype=np.int64)
    depth = 1
    pos[0], size[0], stage[0] = 0, length, 0
    ret = 0
    word, left_halves = np.uint64(0), 0
    while depth > 0:
        f = depth - 1
        p, ln = pos[f], size[f]
        if stage[f] == 0 and ln < 5:
            t, word, left_halves = small_draw(s, m, word, left_halves)
            if ln == 1:
                inp[p] = t
                ret = t
            elif ln == 2:
                inp[p], inp[p + 1] = minus, t
                ret = (m - t) % m
            elif ln == 3:
                inp[p], inp[p + 1], inp[p + 2] = lpar, t, rpar
                ret = t
            else:
                inp[p], inp[p + 1], inp[p + 2], inp[p + 3] = lpar, minus, t, rpar
                ret = (m - t) % m
            depth -= 1
        elif stage[f] == 0:
            a, word, left_halves = small_draw(s, ln - 4, word, left_halves)
            a += 1
            left[f] = a
            inp[p] = lpar
            inp[p + ln - 1] = rpar
            stage[f] = 1
            pos[depth], size[depth], stage[depth] = p + 1, a, 0
            depth += 1
        elif stage[f] == 1:
            lval[f] = ret
            stage[f] = 2
            a = left[f]
            pos[depth], size[depth], stage[depth] = p + 2 + a, ln - a - 3, 0
            depth += 1
        else:
            op, word, left_halves = small_draw(s, n_ops, word, left_halves)
            inp[p + 1 + left[f]] = plus + op
            if op == 0:
                ret = (lval[f] + ret) % m
            elif op == 1:
                ret = (lval[f] - ret + m) % m
            else:
                ret = lval[f] * ret % m
            depth -= 1
    inp[length] = equals
    inp[length + 1] = 0  # the answer, hidden as the authors' loader does (pad index 0)
    tgt[length] = ret


@njit(cache=True, parallel=True)
def parity_fill(seed, split, start, vocab_size, lo, hi, inp, tgt):
    for b in prange(inp.shape[0]):
        parity_one(seed, split, start + b, vocab_size, lo, hi, inp[b], tgt[b])


@njit(cache=True, parallel=True)
def modular_fill(seed, split, start, vocab_size, lo, hi, inp, tgt):
    for b in prange(inp.shape[0]):
        modular_one(seed, split, start + b, vocab_size, lo, hi, inp[b], tgt[b])


@njit(cache=True, parallel=True)
def brackets_fill(seed, split, start, vocab_size, lo, hi, n_ops, inp, tgt):
    for b in prange(inp.shape[0]):
        brackets_one(seed, split, start + b, vocab_size, lo, hi, n_ops, inp[b], tgt[b])


# ---------------------------------------------------------------- wrappers


def _keys(cfg):
    return {
        "inputs": KeySpec("int16", (cfg.context_length - 1,), doc="the word, its answer hidden (0), padding"),
        "targets": KeySpec("int16", (cfg.context_length - 1,), doc="-100 but the answer, one position early"),
    }


def _fill_parity(cfg, seed, split, start, out, fixed):
    lo, hi = split_lengths(cfg, split)
    parity_fill(seed, split, start, cfg.vocab_size, lo, hi, out["inputs"], out["targets"])


def _fill_modular(cfg, seed, split, start, out, fixed):
    lo, hi = split_lengths(cfg, split)
    if cfg.brackets:
        n_ops = 3 if cfg.mult else 2
        brackets_fill(seed, split, start, cfg.vocab_size, lo, hi, n_ops, out["inputs"], out["targets"])
    else:
        modular_fill(seed, split, start, cfg.vocab_size, lo, hi, out["inputs"], out["targets"])


def _vocab_size(cfg):
    return cfg.vocab_size


def _vocab_parity(cfg):
    return ["[PAD]"] + [str(i) for i in range(cfg.vocab_size - 1)]


def _vocab_modular(cfg):
    if cfg.brackets:
        m = cfg.vocab_size - 7
        return [str(i) for i in range(m)] + ["+", "-", "*", "(", ")", "=", "[PAD]"]
    return ["[PAD]", "+", "-", "*", "="] + [str(i) for i in range(cfg.vocab_size - 5)]




# A row's length n as the authors count it (the word and its answer; with brackets also the [PAD]
# after the answer), read back from its one scored target's index t: n = t + 2, t + 3 with brackets
# (docs/tasks/state-tracking.md, "Lengths from stored rows").
LENGTH_DEFINITION = ("n, the raw sequence's length as the authors count it (the word and its answer; with brackets "
                     "also the [PAD] after the answer), read from the scored target's index: n - 2 (n - 3 with "
                     "brackets); docs/tasks/state-tracking.md")


def _length_offset(cfg):
    return 3 if getattr(cfg, "brackets", False) else 2


TASKS = [
    Task(
        name="parity",
        config=ParityConfig,
        summary="parity of a bit string (Grazzi et al.), one scored answer token, train/test lengths apart",
        keys=_keys,
        fill=_fill_parity,
        check=_check_lengths,
        vocab=_vocab_parity,
        family="tokens",
        vocab_size=_vocab_size,
        authors=authors_parity,
        row_length_offset=_length_offset,
        row_length_definition=LENGTH_DEFINITION,
        citation=CITATION,
        card="bits are tokens 1 and 2 (vocab_size 3), then the answer 1 + parity and zero padding; the answer "
        "is hidden in the input and scored one position early; lengths 3-40 for train, 40-256 for val/test.",
    ),
    Task(
        name="modular-arithmetic",
        config=ModularArithmeticConfig,
        summary="value mod M of an arithmetic expression (Grazzi et al.), with or without brackets",
        keys=_keys,
        fill=_fill_modular,
        check=_check_modular,
        resolve=_resolve_modular,
        vocab=_vocab_modular,
        family="tokens",
        vocab_size=_vocab_size,
        authors=authors_modular,
        row_length_offset=_length_offset,
        row_length_definition=LENGTH_DEFINITION,
        citation=CITATION,
        card="numbers 5.. and operators + - * (1-3), '=' 4, then the answer, hidden in the input and scored one "
        "position early; --brackets: nested bracketed +/- expressions with the authors' layout (numbers first).",
    ),
]
