"""The binary arithmetic among the context-sensitive tasks of the Chomsky hierarchy (Deletang et
al.): binary-addition, binary-multiplication, compute-sqrt (docs/tasks/chomsky.md).

Rows (generators/chomsky/_common.py): the input x_1..x_n, o empty tokens E = I, padding; the
targets at positions n..n+o-1. Draw order: the length n first, then the task's own draws.
Numbers are bit strings of any length (no 64-bit limit): ``nonzero_bits(k)`` is a number
uniform in [1, 2^k - 1], least significant bit first.

chomsky-binary-addition (I = 3, O = 3, o = n + 1): n >= 3: a = 1 + below(n - 2), b = n - 1 - a,
    N = nonzero_bits(a), then M = nonzero_bits(b); x = N (a bits, little-endian) 2 M (b bits);
    y = N + M little-endian without leading zeros, then END = 2, then 0s (scored only with
    score_padding). n <= 2 (the authors' special case, no '+'): v = below(2^n - 1), x = v in
    n bits, y = v without leading zeros (0 is "0"), END, 0s.
chomsky-binary-multiplication (I = 3, O = 3, o = n): as binary-addition with N * M (2 the
    '*'); n <= 2: x = below(2^n - 1) in n bits, y = n - 1 zeros then END (the authors' fixed
    placeholder answer).
chomsky-compute-sqrt (I = 2, O = 2, o = ceil(n / 2)): X = nonzero_bits(n); x = X big-endian in
    n bits; y = floor(sqrt(X)) big-endian in o bits, every position scored.

Worked example (binary-addition, n = 9): a = 3, N = 4 (0 0 1), M = 22 (0 1 1 0 1): x =
0 0 1 2 0 1 1 0 1; y = 26 = 0 1 0 1 1, END, 0 0 0 0: targets -100 x 9, 0 1 0 1 1 2, then -100 x 4.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._tokens import IGNORE
from longsynth.generators.chomsky._common import (MAX_LENGTH_QUADRATIC, Layout, TerminatedConfig, draw_length,
                                                   fixed_length, frame, make_task, max_length, min_length, nonzero_bits,
                                                   score_padding)
from longsynth.rng import below, stream

END = 2  # the end token of the binary arithmetic outputs (an output class), and the operator in the input


@dataclass(frozen=True)
class MultiplicationConfig:
    score_padding: bool = score_padding()
    min_length: int = min_length(MAX_LENGTH_QUADRATIC)
    max_length: int = max_length(MAX_LENGTH_QUADRATIC)
    length: int | None = fixed_length(MAX_LENGTH_QUADRATIC)


@dataclass(frozen=True)
class SqrtConfig:
    min_length: int = min_length(MAX_LENGTH_QUADRATIC)
    max_length: int = max_length(MAX_LENGTH_QUADRATIC)
    length: int | None = fixed_length(MAX_LENGTH_QUADRATIC)


# ---------------------------------------------------------------- kernels


@njit(cache=True)
def _finish(tgt, n, r, o, pad_scored):
    """The result's r bits are at tgt[n:n+r]: END after them, then 0s (or -100) up to o outputs."""
    tgt[n + r] = END
    for j in range(n + r + 1, n + o):
        tgt[j] = 0 if pad_scored else IGNORE


@njit(cache=True)
def _small(s, n, inp):
    """n <= 2: v = below(2^n - 1) written in n bits; returns v."""
    v = below(s, (1 << n) - 1)
    for i in range(n):
        inp[i] = (v >> i) & 1
    return v


@njit(cache=True)
def _operands(s, n, inp):
    """a, b: the two numbers' bit lengths; inp = N 2 M, little-endian."""
    a = 1 + below(s, n - 2)
    nonzero_bits(s, inp, 0, a)
    inp[a] = END
    nonzero_bits(s, inp, a + 1, n - 1 - a)
    return a, n - 1 - a


@njit(cache=True)
def binary_addition_one(seed, split, index, lo, hi, pad_scored, inp, tgt):
    s = stream(seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, n + 1, 3)
    if n <= 2:
        v = _small(s, n, inp)
        r = 2 if v == 2 else 1
        for j in range(r):
            tgt[n + j] = (v >> j) & 1
        _finish(tgt, n, r, n + 1, pad_scored)
        return
    a, b = _operands(s, n, inp)
    carry, r = 0, 0
    for j in range(max(a, b) + 1):
        t = carry + (inp[j] if j < a else 0) + (inp[a + 1 + j] if j < b else 0)
        tgt[n + j] = t & 1
        carry = t >> 1
        if t & 1:
            r = j + 1
    _finish(tgt, n, r, n + 1, pad_scored)


@njit(cache=True)
def binary_multiplication_one(seed, split, index, lo, hi, pad_scored, inp, tgt):
    s = stream(seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, n, 3)
    if n <= 2:
        _small(s, n, inp)
        for j in range(n - 1):
            tgt[n + j] = 0
        _finish(tgt, n, n - 1, n, pad_scored)
        return
    a, b = _operands(s, n, inp)
    prod = np.zeros(a + b + 1, dtype=np.int64)
    for i in range(a):
        if inp[i]:
            carry = 0
            for j in range(b):
                t = prod[i + j] + inp[a + 1 + j] + carry
                prod[i + j] = t & 1
                carry = t >> 1
            j = i + b
            while carry:  # a carry moves up one bit a step; the product < 2^(a + b) stops it
                t = prod[j] + carry
                prod[j] = t & 1
                carry = t >> 1
                j += 1
    r = a + b
    while prod[r - 1] == 0:  # N M >= 1: some bit is set
        r -= 1
    for j in range(r):
        tgt[n + j] = prod[j]
    _finish(tgt, n, r, n, pad_scored)


@njit(cache=True)
def isqrt_bits(x, n, out, o):
    """out[0:o] = floor(sqrt(X)) least significant bit first, X = sum of x[i] 2^i (i < n),
    o = ceil(n / 2): digit by digit, two bits of X a step (rem = 4 rem + next pair; the trial
    4 root + 1 is subtracted when it fits, and the root gains a 1, else a 0)."""
    rem = np.zeros(n + 4, dtype=np.int64)  # rem < 2 root + 1 after each step: at most o + 3 bits live
    root = np.zeros(o + 1, dtype=np.int64)
    rl, k = 0, 0
    for i in range(o - 1, -1, -1):
        for j in range(rl - 1, -1, -1):
            rem[j + 2] = rem[j]
        rem[1] = x[2 * i + 1] if 2 * i + 1 < n else 0
        rem[0] = x[2 * i]
        rl += 2
        tl = k + 2  # trial bits: t[0] = 1, t[1] = 0, t[j + 2] = root[j]
        fits = True
        for j in range(max(rl, tl) - 1, -1, -1):
            u = rem[j] if j < rl else 0
            t = 1 if j == 0 else (root[j - 2] if 2 <= j < tl else 0)
            if u != t:
                fits = u > t
                break
        if fits:
            borrow = 0
            for j in range(rl):
                t = 1 if j == 0 else (root[j - 2] if 2 <= j < tl else 0)
                d = rem[j] - t - borrow
                borrow = 1 if d < 0 else 0
                rem[j] = d + 2 * borrow
        for j in range(k - 1, -1, -1):
            root[j + 1] = root[j]
        root[0] = 1 if fits else 0
        k += 1
        while rl > 0 and rem[rl - 1] == 0:
            rl -= 1
    for j in range(o):
        out[j] = root[j]


@njit(cache=True)
def compute_sqrt_one(seed, split, index, lo, hi, inp, tgt):
    s = stream(seed, split, index)
    n = draw_length(s, lo, hi)
    o = (n + 1) // 2
    frame(inp, tgt, n, o, 2)
    x = np.empty(n, dtype=np.int64)
    nonzero_bits(s, x, 0, n)
    for i in range(n):
        inp[i] = x[n - 1 - i]
    root = np.empty(o, dtype=np.int64)
    isqrt_bits(x, n, root, o)
    for j in range(o):
        tgt[n + j] = root[o - 1 - j]


@njit(cache=True, parallel=True)
def binary_addition_fill(seed, split, start, lo, hi, pad_scored, inp, tgt):
    for b in prange(inp.shape[0]):
        binary_addition_one(seed, split, start + b, lo, hi, pad_scored, inp[b], tgt[b])


@njit(cache=True, parallel=True)
def binary_multiplication_fill(seed, split, start, lo, hi, pad_scored, inp, tgt):
    for b in prange(inp.shape[0]):
        binary_multiplication_one(seed, split, start + b, lo, hi, pad_scored, inp[b], tgt[b])


@njit(cache=True, parallel=True)
def compute_sqrt_fill(seed, split, start, lo, hi, inp, tgt):
    for b in prange(inp.shape[0]):
        compute_sqrt_one(seed, split, start + b, lo, hi, inp[b], tgt[b])


# ---------------------------------------------------------------- wrappers


def _terminated(filler):
    def fill(cfg, seed, split, start, out, fixed):
        filler(seed, split, start, cfg.min_length, cfg.max_length, cfg.score_padding, out["inputs"],
               out["targets"])
    return fill


def _fill_sqrt(cfg, seed, split, start, out, fixed):
    compute_sqrt_fill(seed, split, start, cfg.min_length, cfg.max_length, out["inputs"], out["targets"])


TASKS = [
    make_task("chomsky-binary-addition", TerminatedConfig, "Chomsky hierarchy (CS): the sum of two binary "
              "numbers, little-endian", Layout(lambda cfg: 3, lambda cfg: 3, lambda n: n + 1),
              _terminated(binary_addition_fill),
              "input: N 2 M, two uniform non-zero numbers in little-endian bits whose lengths split n - 1 "
              "uniformly; output (n + 1 tokens): N + M little-endian, the end token 2, then 0s (scored only "
              "with --score-padding). n <= 2: one number below 2^n - 1, output itself (the authors' case)."),
    make_task("chomsky-binary-multiplication", MultiplicationConfig, "Chomsky hierarchy (CS): the product of "
              "two binary numbers, little-endian", Layout(lambda cfg: 3, lambda cfg: 3, lambda n: n),
              _terminated(binary_multiplication_fill),
              "input: N 2 M as in binary-addition; output (n tokens): N M little-endian, the end token 2, "
              "then 0s (scored only with --score-padding). n <= 2: output n - 1 zeros and 2 whatever the "
              "input (the authors' placeholder)."),
    make_task("chomsky-compute-sqrt", SqrtConfig, "Chomsky hierarchy (CS): the integer square root of a "
              "binary number, big-endian", Layout(lambda cfg: 2, lambda cfg: 2, lambda n: (n + 1) // 2),
              _fill_sqrt,
              "input: a uniform number of [1, 2^n - 1] in n big-endian bits; output (ceil(n / 2) tokens): "
              "floor(sqrt) in big-endian bits."),
]
