"""The string tasks among the context-sensitive tasks of the Chomsky hierarchy (Deletang et al.):
duplicate-string, missing-duplicate-string, odds-first, bucket-sort (docs/tasks/chomsky.md; the
binary arithmetic ones are in cs_arith.py).

Rows (generators/chomsky/_common.py): the input x_1..x_n, o empty tokens E = I, padding; the
targets at positions n..n+o-1. Draw order: the length n first, then the task's own draws.

chomsky-duplicate-string (V = vocab_size, I = O = V, o = 2n): x_i = below(V); y = x x.
chomsky-missing-duplicate-string (I = 4, O = 2, o = 1): n = 1: x = 1, y = 1 (the authors'
    placeholder; nothing drawn). n >= 2: h = n // 2, w = bits(h), then j = below(2h); x is
    w w with position j (0-based) replaced by the token 2, then the token 3 when n is odd;
    y = the bit replaced.
chomsky-odds-first (V = vocab_size, I = O = V, o = n): x_i = below(V); y = the symbols at the
    even 1-based positions x_2 x_4 ..., then the odd ones x_1 x_3 ... (the authors' code,
    ``[1::2]`` before ``[::2]``; their docstring says the reverse).
chomsky-bucket-sort (V = vocab_size, default 5, I = O = V, o = n): x_i = below(V); y = x sorted.

Worked example (odds-first, n = 5): x = 1 0 0 1 1, y = 0 1 1 0 1.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators.chomsky._common import (CHUNK, MAX_ALPHABET, AlphabetConfig, Filler, LengthConfig,
                                                   Layout, bits, draw_length, fixed_length, frame, make_task,
                                                   max_length, min_length, test_max_length, test_min_length,
                                                   uniform_string, unsigned)
from longsynth.rng import below, reseed
from longsynth.task import param


@dataclass(frozen=True)
class BucketSortConfig:
    vocab_size: int = param(5, "symbols 0..vocab_size-1, each uniform (the paper: 5)", lo=1, hi=MAX_ALPHABET)
    min_length: int = min_length()
    max_length: int = max_length()
    test_min_length: int = test_min_length()
    test_max_length: int = test_max_length()
    length: int | None = fixed_length()


# ---------------------------------------------------------------- kernels

SMALL_ALPHABET = 16  # bucket sort without branches (v - 1 passes over the row, _sort_small) up to this vocab_size


@njit(cache=True, inline="always")
def duplicate_string_one(s, seed, split, index, lo, hi, v, inp, tgt):
    n = uniform_string(s, seed, split, index, lo, hi, v, 2, inp, tgt)
    un = unsigned(n)
    for i in range(un):  # unsigned indices: _common.unsigned
        tgt[un + i] = inp[i]
        tgt[un + un + i] = inp[i]


@njit(cache=True, inline="always")
def missing_duplicate_one(s, seed, split, index, lo, hi, inp, tgt):
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, 1, 4)
    if n == 1:
        inp[0] = 1
        tgt[1] = 1
        return
    h = n // 2
    bits(s, inp, 0, h)
    for i in range(h):
        inp[h + i] = inp[i]
    j = below(s, 2 * h)
    tgt[n] = inp[j]
    inp[j] = 2
    if n % 2 == 1:
        inp[n - 1] = 3


@njit(cache=True, inline="always")
def odds_first_one(s, seed, split, index, lo, hi, v, inp, tgt):
    n = uniform_string(s, seed, split, index, lo, hi, v, 1, inp, tgt)
    un, half, one = unsigned(n), unsigned(n // 2), unsigned(1)
    for j in range(half):  # unsigned indices: _common.unsigned
        tgt[un + j] = inp[j + j + one]
    for j in range(un - half):
        tgt[un + half + j] = inp[j + j]


@njit(cache=True, inline="always")
def _sort_small(inp, tgt, n, v):
    """tgt[n:2n] = inp[:n] sorted, without branches: y_j = the number of symbols a < v - 1 with
    j >= #{x_i <= a}, one pass of unsigned (vectorised) compares per symbol; a counting sort's loops end at
    random places, a mispredicted branch each. O(n v): for v <= SMALL_ALPHABET."""
    un = unsigned(n)
    for j in range(un):
        tgt[un + j] = 0
    at_most = 0
    for a in range(v - 1):
        for i in range(un):
            at_most += inp[i] == a
        edge = unsigned(at_most)
        for j in range(un):
            tgt[un + j] += j >= edge


@njit(cache=True)
def _counting_sort(inp, tgt, n, v, counts):
    """tgt[n:2n] = inp[:n] sorted, counting in ``counts`` (v entries): for the larger alphabets."""
    for a in range(v):
        counts[a] = 0
    for i in range(n):
        counts[inp[i]] += 1
    at = n
    for a in range(v):
        for _ in range(counts[a]):
            tgt[at] = a
            at += 1


# Batch fillers (_common.py, "Batch fillers"): serial over rows, and parallel over chunks of CHUNK rows.


@njit(cache=True)
def duplicate_string_rows(seed, split, start, lo, hi, v, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        duplicate_string_one(s, seed, split, start + b, lo, hi, v, inp[b], tgt[b])


@njit(cache=True)
def missing_duplicate_rows(seed, split, start, lo, hi, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        missing_duplicate_one(s, seed, split, start + b, lo, hi, inp[b], tgt[b])


@njit(cache=True)
def odds_first_rows(seed, split, start, lo, hi, v, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        odds_first_one(s, seed, split, start + b, lo, hi, v, inp[b], tgt[b])


@njit(cache=True)
def bucket_sort_rows(seed, split, start, lo, hi, v, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    # a row: the string (uniform_string), then its sort. One loop per sort: with both sorts in one loop body
    # the compiler slows the small one down by half
    if v <= SMALL_ALPHABET:
        for b in range(inp.shape[0]):
            n = uniform_string(s, seed, split, start + b, lo, hi, v, 1, inp[b], tgt[b])
            _sort_small(inp[b], tgt[b], n, v)
    else:
        counts = np.empty(v, dtype=np.int64)
        for b in range(inp.shape[0]):
            n = uniform_string(s, seed, split, start + b, lo, hi, v, 1, inp[b], tgt[b])
            _counting_sort(inp[b], tgt[b], n, v, counts)


@njit(cache=True, parallel=True)
def duplicate_string_fill(seed, split, start, lo, hi, v, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        duplicate_string_rows(seed, split, start + i, lo, hi, v, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def missing_duplicate_fill(seed, split, start, lo, hi, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        missing_duplicate_rows(seed, split, start + i, lo, hi, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def odds_first_fill(seed, split, start, lo, hi, v, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        odds_first_rows(seed, split, start + i, lo, hi, v, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def bucket_sort_fill(seed, split, start, lo, hi, v, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        bucket_sort_rows(seed, split, start + i, lo, hi, v, inp[i:j], tgt[i:j])


# ---------------------------------------------------------------- wrappers


_VOCAB = lambda cfg: (cfg.vocab_size,)  # noqa: E731


def _strings(out_len):
    return Layout(lambda cfg: cfg.vocab_size, lambda cfg: cfg.vocab_size, out_len)


TASKS = [
    make_task("chomsky-duplicate-string", AlphabetConfig, "Chomsky hierarchy (CS): a string of uniform "
              "symbols, written twice", _strings(lambda n: 2 * n),
              Filler(duplicate_string_rows, duplicate_string_fill, _VOCAB),
              "input: n uniform symbols 0..V-1; output (2n tokens): the string twice."),
    make_task("chomsky-missing-duplicate-string", LengthConfig, "Chomsky hierarchy (CS): the bit hidden in "
              "a bit string written twice", Layout(lambda cfg: 4, lambda cfg: 2, lambda n: 1),
              Filler(missing_duplicate_rows, missing_duplicate_fill),
              "input: w w for n // 2 uniform bits w, one uniform position of the two replaced by 2, then 3 when "
              "n is odd; output (one token): the hidden bit. n = 1: input 1, output 1 (the authors' placeholder)."),
    make_task("chomsky-odds-first", AlphabetConfig, "Chomsky hierarchy (CS): the symbols at even positions, "
              "then those at odd positions", _strings(lambda n: n),
              Filler(odds_first_rows, odds_first_fill, _VOCAB),
              "input: n uniform symbols 0..V-1; output (n tokens): x_2 x_4 ... then x_1 x_3 ... (1-based; "
              "the authors' code, whose docstring says the reverse)."),
    make_task("chomsky-bucket-sort", BucketSortConfig, "Chomsky hierarchy (CS): a string of uniform symbols "
              "of 5, sorted", _strings(lambda n: n), Filler(bucket_sort_rows, bucket_sort_fill, _VOCAB),
              "input: n uniform symbols 0..V-1 (V = 5); output (n tokens): the symbols in increasing order."),
]
