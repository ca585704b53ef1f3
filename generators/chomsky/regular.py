"""The regular tasks of the Chomsky hierarchy (Deletang et al.): even-pairs, parity-check,
cycle-navigation, modular-arithmetic (docs/tasks/chomsky.md). One output token each.

Rows (generators/chomsky/_common.py): the input x_1..x_n, one empty token E = I, padding; the
target at position n. Draw order: the length n first, then the task's own draws.

chomsky-even-pairs (I = 2, O = 2): x = bits(n); y = the number of i < n with x_i != x_{i+1},
    mod 2 (= 1 exactly when x_1 != x_n).
chomsky-parity-check (I = 2, O = 2): x = bits(n); y = the number of 1s mod 2.
chomsky-cycle-navigation (I = 3, O = 5): x_i = below(3) for i = 1..n (0 a step left, 1 stay,
    2 a step right); y = the sum of (x_i - 1) mod 5.
chomsky-modular-arithmetic (I = M + 4, O = M, M = modulus): the input length is n' = n for an
    odd n, n - 1 for an even one (the authors shorten an even length); numbers 0..M-1 at
    even positions, operators at odd ones ('+' M, '-' M+1, '*' M+2, '_' M+3, the blank, read
    as '+'); left to right, a number is below(M), an operator operators[below(len(operators))];
    y = the value mod M, '*' binding tighter than '+' and '-'.

Worked example (modular-arithmetic, M = 5, n = 5): x = 3 7 4 5 2 (3 * 4 + 2), y = 4;
inputs 3 7 4 5 2 9 10 ... (E = 9, padding 10), targets -100 x 5, 4, -100 ...
"""
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.errors import LongsynthError
from longsynth.generators.chomsky._common import (CHUNK, MAX_ALPHABET, Filler, LengthConfig, Layout, bits,
                                                   draw_length, fixed_length, frame, make_task, max_length, min_length,
                                                   test_max_length, test_min_length)
from longsynth.rng import below, below_fill, reseed
from longsynth.task import param

OPERATORS = "+-*_"  # the token of operator c is M + OPERATORS.index(c)
TIMES, MINUS = 2, 1


@dataclass(frozen=True)
class ModularArithmeticConfig:
    modulus: int = param(5, "numbers and answers are residues 0..modulus-1 (the paper: 5)", lo=2, hi=MAX_ALPHABET)
    operators: str = param("+*-", "the operators drawn, each listed one equally likely (characters of + - * _; "
                                  "the authors' default: all of + * -)")
    min_length: int = min_length()
    max_length: int = max_length()
    test_min_length: int = test_min_length()
    test_max_length: int = test_max_length()
    length: int | None = fixed_length()


def _check_modular(cfg):
    bad = [c for c in cfg.operators if c not in OPERATORS]
    if not cfg.operators or bad:
        raise LongsynthError(f"operators: characters of {OPERATORS!r}, at least one, got {cfg.operators!r}")


# ---------------------------------------------------------------- kernels


@njit(cache=True, inline="always")
def even_pairs_one(s, seed, split, index, lo, hi, inp, tgt):
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, 1, 2)
    bits(s, inp, 0, n)
    tgt[n] = 1 if inp[0] != inp[n - 1] else 0


@njit(cache=True, inline="always")
def parity_check_one(s, seed, split, index, lo, hi, inp, tgt):
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, 1, 2)
    tgt[n] = bits(s, inp, 0, n) % 2


@njit(cache=True, inline="always")
def cycle_navigation_one(s, seed, split, index, lo, hi, inp, tgt):
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, 1, 3)
    below_fill(s, inp, 0, n, 3)
    total = 0
    for i in range(n):
        total += inp[i] + 4  # a - 1 + 5: stays >= 0
    tgt[n] = total % 5


@njit(cache=True, inline="always")
def modular_arithmetic_one(s, seed, split, index, lo, hi, m, codes, inp, tgt):
    """codes: int64 [k], the operators' indices in OPERATORS."""
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    if n % 2 == 0:
        n -= 1
    frame(inp, tgt, n, 1, m + 4)
    total, term, sign, op = 0, 0, 1, 0
    for i in range(n):
        if i % 2 == 0:
            v = below(s, m)
            inp[i] = v
            term = term * v % m if i > 0 and op == TIMES else v
        else:
            op = codes[below(s, codes.shape[0])]
            inp[i] = m + op
            if op != TIMES:
                total = (total + sign * term) % m
                sign = -1 if op == MINUS else 1
    tgt[n] = (total + sign * term) % m


# Batch fillers (_common.py, "Batch fillers"): serial over rows, and parallel over chunks of CHUNK rows.


@njit(cache=True)
def even_pairs_rows(seed, split, start, lo, hi, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        even_pairs_one(s, seed, split, start + b, lo, hi, inp[b], tgt[b])


@njit(cache=True)
def parity_check_rows(seed, split, start, lo, hi, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        parity_check_one(s, seed, split, start + b, lo, hi, inp[b], tgt[b])


@njit(cache=True)
def cycle_navigation_rows(seed, split, start, lo, hi, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        cycle_navigation_one(s, seed, split, start + b, lo, hi, inp[b], tgt[b])


@njit(cache=True)
def modular_arithmetic_rows(seed, split, start, lo, hi, m, codes, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        modular_arithmetic_one(s, seed, split, start + b, lo, hi, m, codes, inp[b], tgt[b])


@njit(cache=True, parallel=True)
def even_pairs_fill(seed, split, start, lo, hi, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        even_pairs_rows(seed, split, start + i, lo, hi, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def parity_check_fill(seed, split, start, lo, hi, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        parity_check_rows(seed, split, start + i, lo, hi, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def cycle_navigation_fill(seed, split, start, lo, hi, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        cycle_navigation_rows(seed, split, start + i, lo, hi, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def modular_arithmetic_fill(seed, split, start, lo, hi, m, codes, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        modular_arithmetic_rows(seed, split, start + i, lo, hi, m, codes, inp[i:j], tgt[i:j])


# ---------------------------------------------------------------- wrappers


def _modular_args(cfg):
    """The modulus and the operators' indices in OPERATORS (int64)."""
    return cfg.modulus, np.array([OPERATORS.index(c) for c in cfg.operators], dtype=np.int64)


_ONE = lambda n: 1  # noqa: E731
BITS = Layout(lambda cfg: 2, lambda cfg: 2, _ONE)

TASKS = [
    make_task("chomsky-even-pairs", LengthConfig, "Chomsky hierarchy (regular): is the number of 01 and 10 "
              "pairs of a bit string odd?", BITS, Filler(even_pairs_rows, even_pairs_fill),
              "input: n uniform bits; output (one token): the parity of the number of unequal neighbours "
              "(1 exactly when the first and last bits differ)."),
    make_task("chomsky-parity-check", LengthConfig, "Chomsky hierarchy (regular): the parity of the number "
              "of 1s of a bit string", BITS, Filler(parity_check_rows, parity_check_fill),
              "input: n uniform bits; output (one token): the number of 1s mod 2."),
    make_task("chomsky-cycle-navigation", LengthConfig, "Chomsky hierarchy (regular): the final position "
              "of a walk on a cycle of 5", Layout(lambda cfg: 3, lambda cfg: 5, _ONE),
              Filler(cycle_navigation_rows, cycle_navigation_fill),
              "input: n uniform moves 0 (left), 1 (stay), 2 (right) on a cycle of 5 states from state 0; "
              "output (one token): the final state, sum of (move - 1) mod 5."),
    make_task("chomsky-modular-arithmetic", ModularArithmeticConfig, "Chomsky hierarchy (regular): the "
              "value mod 5 of an expression of numbers and + - * without brackets",
              Layout(lambda cfg: cfg.modulus + 4, lambda cfg: cfg.modulus, _ONE, in_len=lambda n: n - 1 + n % 2),
              Filler(modular_arithmetic_rows, modular_arithmetic_fill, _modular_args),
              "input: an odd number of tokens, numbers 0..M-1 (uniform) and operators (+ M, - M+1, * M+2, "
              "uniform over --operators) alternating; an even length is shortened by one as the authors do; "
              "output (one token): the value mod M with * before + and -.", check=_check_modular),
]
