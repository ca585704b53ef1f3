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

Arithmetic: the sum bit by bit (O(n)); the product and the square root on 32-bit limbs
(limbs.py: schoolbook product, long-hand root in base 2^32), about n^2 / 4096 and 3 n^2 / 8192
limb operations, plus O(n) to pack the drawn bits and unpack the answer's.

Worked example (binary-addition, n = 9): a = 3, N = 4 (0 0 1), M = 22 (0 1 1 0 1): x =
0 0 1 2 0 1 1 0 1; y = 26 = 0 1 0 1 1, END, 0 0 0 0: targets -100 x 9, 0 1 0 1 1 2, then -100 x 4.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._tokens import IGNORE
from longsynth.generators.chomsky._common import (CHUNK, MAX_LENGTH_QUADRATIC, Filler, Layout, TerminatedConfig,
                                                   draw_length, fixed_length, frame, make_task, max_length,
                                                   min_length, nonzero_bits, nonzero_word, put_bits,
                                                   score_padding, test_max_length, test_min_length)
from longsynth.generators.chomsky.limbs import (bit_length, isqrt_bits_limbs, isqrt_u64, isqrt_work, mul, mul_work,
                                                 pack, unpack)
from longsynth.rng import below, reseed

END = 2  # the end token of the binary arithmetic outputs (an output class), and the operator in the input


@dataclass(frozen=True)
class MultiplicationConfig:
    score_padding: bool = score_padding()
    min_length: int = min_length(MAX_LENGTH_QUADRATIC)
    max_length: int = max_length(MAX_LENGTH_QUADRATIC)
    test_min_length: int = test_min_length(MAX_LENGTH_QUADRATIC)
    test_max_length: int = test_max_length(MAX_LENGTH_QUADRATIC)
    length: int | None = fixed_length(MAX_LENGTH_QUADRATIC)


@dataclass(frozen=True)
class SqrtConfig:
    min_length: int = min_length(MAX_LENGTH_QUADRATIC)
    max_length: int = max_length(MAX_LENGTH_QUADRATIC)
    test_min_length: int = test_min_length(MAX_LENGTH_QUADRATIC)
    test_max_length: int = test_max_length(MAX_LENGTH_QUADRATIC)
    length: int | None = fixed_length(MAX_LENGTH_QUADRATIC)


# ---------------------------------------------------------------- kernels


@njit(cache=True, inline="always")
def _finish(tgt, n, r, o, pad_scored):
    """The result's r bits are at tgt[n:n+r]: END after them, then 0s (or -100) up to o outputs."""
    tgt[n + r] = END
    for j in range(n + r + 1, n + o):
        tgt[j] = 0 if pad_scored else IGNORE


@njit(cache=True, inline="always")
def _small(s, n, inp):
    """n <= 2: v = below(2^n - 1) written in n bits; returns v."""
    v = below(s, (1 << n) - 1)
    for i in range(n):
        inp[i] = (v >> i) & 1
    return v


@njit(cache=True, inline="always")
def _operands(s, n, inp):
    """a, b: the two numbers' bit lengths; inp = N 2 M, little-endian."""
    a = 1 + below(s, n - 2)
    nonzero_bits(s, inp, 0, a)
    inp[a] = END
    nonzero_bits(s, inp, a + 1, n - 1 - a)
    return a, n - 1 - a


@njit(cache=True, inline="always")
def _word_operands(s, n, inp):
    """_operands for n - 1 <= 64, the two numbers returned as words: the same draws and input."""
    a = 1 + below(s, n - 2)
    x = nonzero_word(s, a)
    put_bits(inp, 0, x, a)
    inp[a] = END
    y = nonzero_word(s, n - 1 - a)
    put_bits(inp, a + 1, y, n - 1 - a)
    return x, y


@njit(cache=True, inline="always")
def _word_bits(v):
    """The bit length of a uint64 (1 for 0: a result is written with at least one bit)."""
    r = 1
    while r < 64 and (v >> np.uint64(r)) != 0:
        r += 1
    return r


@njit(cache=True, inline="always")
def add_bits(x, a, y, c, out):
    """out[:r] = x[:a] + y[:c] (bits, least significant first; out has max(a, c) + 1 entries); returns r, the
    sum's bit length (at least 1)."""
    carry, r = 0, 1
    for j in range(max(a, c) + 1):
        t = carry + (x[j] if j < a else 0) + (y[j] if j < c else 0)
        out[j] = t & 1
        carry = t >> 1
        if t & 1:
            r = j + 1
    return r


@njit(cache=True, inline="always")
def binary_addition_one(s, seed, split, index, lo, hi, pad_scored, inp, tgt):
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, n + 1, 3)
    if n <= 2:
        v = _small(s, n, inp)
        r = 2 if v == 2 else 1
        for j in range(r):
            tgt[n + j] = (v >> j) & 1
        _finish(tgt, n, r, n + 1, pad_scored)
        return
    if n <= 64:  # both numbers fit one word (at most 62 bits each), and so does their sum
        x, y = _word_operands(s, n, inp)
        total = x + y
        r = _word_bits(total)
        put_bits(tgt, n, total, r)
        _finish(tgt, n, r, n + 1, pad_scored)
        return
    a, b = _operands(s, n, inp)
    r = add_bits(inp[:a], a, inp[a + 1:], b, tgt[n:])
    _finish(tgt, n, r, n + 1, pad_scored)


@njit(cache=True, inline="always")
def binary_multiplication_one(s, seed, split, index, lo, hi, pad_scored, inp, tgt, work):
    """work: scratch of mul_work(hi) words. N and M are packed into 32-bit limbs and multiplied
    schoolbook (limbs.py): ceil(a / 32) ceil(b / 32) limb products instead of a b bit steps."""
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, n, 3)
    if n <= 2:
        _small(s, n, inp)
        for j in range(n - 1):
            tgt[n + j] = 0
        _finish(tgt, n, n - 1, n, pad_scored)
        return
    if n <= 65:  # a + b = n - 1 <= 64 bits: the product N M < 2^(a + b) fits one word
        x, y = _word_operands(s, n, inp)
        product = x * y
        r = _word_bits(product)
        put_bits(tgt, n, product, r)
        _finish(tgt, n, r, n, pad_scored)
        return
    a, b = _operands(s, n, inp)
    nx, ny = (a + 31) // 32, (b + 31) // 32
    pack(inp, 0, a, 0, work, 0)
    pack(inp, a + 1, b, 0, work, nx)
    mul(work, nx, ny)
    r = bit_length(work, nx + ny, nx + ny)  # N M >= 1
    unpack(work, nx + ny, nx + ny, 0, tgt, n, r)
    _finish(tgt, n, r, n, pad_scored)


@njit(cache=True, inline="always")
def _reverse(a, start, k):
    """a[start:start + k] in reverse order, in place."""
    i, j = start, start + k - 1
    while i < j:
        a[i], a[j] = a[j], a[i]
        i += 1
        j -= 1


@njit(cache=True)
def isqrt_bits(x, n, out, o):
    """out[0:o] = floor(sqrt(X)) least significant bit first, X = sum of x[i] 2^i (i < n),
    o = ceil(n / 2) (or more: the bits past the root are 0). Long-hand square root on 32-bit
    limbs, one root limb a step (limbs.py): about 3 m^2 / 2 limb operations for m = ceil(n / 64)
    root limbs, plus O(n) to pack and unpack."""
    work = np.empty(isqrt_work(n), dtype=np.uint64)
    m, skip = isqrt_bits_limbs(x, 0, n, work)
    unpack(work, 2 * m, m, skip, out, 0, o)


@njit(cache=True, inline="always")
def compute_sqrt_one(s, seed, split, index, lo, hi, inp, tgt, work):
    """work: scratch of isqrt_work(hi) words. X is drawn least significant bit first into inp,
    its root taken there (isqrt_bits_limbs), then both are turned big-endian in place."""
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    o = (n + 1) // 2
    frame(inp, tgt, n, o, 2)
    if n <= 64:  # X and its root fit one word
        x = nonzero_word(s, n)
        root = isqrt_u64(x)
        for i in range(n):  # both big-endian
            inp[i] = (x >> np.uint64(n - 1 - i)) & np.uint64(1)
        for j in range(o):
            tgt[n + j] = (root >> np.uint64(o - 1 - j)) & np.uint64(1)
        return
    nonzero_bits(s, inp, 0, n)
    m, skip = isqrt_bits_limbs(inp, 0, n, work)
    unpack(work, 2 * m, m, skip, tgt, n, o)
    _reverse(tgt, n, o)
    _reverse(inp, 0, n)


# Batch fillers (_common.py, "Batch fillers"): serial over rows with one scratch for all, and parallel
# over chunks of CHUNK rows. compute-sqrt takes pad_scored too, unused, so that the three share one
# signature.


@njit(cache=True)
def binary_addition_rows(seed, split, start, lo, hi, pad_scored, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        binary_addition_one(s, seed, split, start + b, lo, hi, pad_scored, inp[b], tgt[b])


@njit(cache=True)
def binary_multiplication_rows(seed, split, start, lo, hi, pad_scored, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    work = np.empty(mul_work(hi), dtype=np.uint64)
    for b in range(inp.shape[0]):
        binary_multiplication_one(s, seed, split, start + b, lo, hi, pad_scored, inp[b], tgt[b], work)


@njit(cache=True)
def compute_sqrt_rows(seed, split, start, lo, hi, pad_scored, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    work = np.empty(isqrt_work(hi), dtype=np.uint64)
    for b in range(inp.shape[0]):
        compute_sqrt_one(s, seed, split, start + b, lo, hi, inp[b], tgt[b], work)


@njit(cache=True, parallel=True)
def binary_addition_fill(seed, split, start, lo, hi, pad_scored, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        binary_addition_rows(seed, split, start + i, lo, hi, pad_scored, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def binary_multiplication_fill(seed, split, start, lo, hi, pad_scored, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        binary_multiplication_rows(seed, split, start + i, lo, hi, pad_scored, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def compute_sqrt_fill(seed, split, start, lo, hi, pad_scored, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        compute_sqrt_rows(seed, split, start + i, lo, hi, pad_scored, inp[i:j], tgt[i:j])


# ---------------------------------------------------------------- wrappers


_PAD = lambda cfg: (cfg.score_padding,)  # noqa: E731
_NO_PAD = lambda cfg: (False,)  # noqa: E731


TASKS = [
    make_task("chomsky-binary-addition", TerminatedConfig, "Chomsky hierarchy (CS): the sum of two binary "
              "numbers, little-endian", Layout(lambda cfg: 3, lambda cfg: 3, lambda n: n + 1),
              Filler(binary_addition_rows, binary_addition_fill, _PAD),
              "input: N 2 M, two uniform non-zero numbers in little-endian bits whose lengths split n - 1 "
              "uniformly; output (n + 1 tokens): N + M little-endian, the end token 2, then 0s (scored only "
              "with --score-padding). n <= 2: one number below 2^n - 1, output itself (the authors' case)."),
    make_task("chomsky-binary-multiplication", MultiplicationConfig, "Chomsky hierarchy (CS): the product of "
              "two binary numbers, little-endian", Layout(lambda cfg: 3, lambda cfg: 3, lambda n: n),
              Filler(binary_multiplication_rows, binary_multiplication_fill, _PAD),
              "input: N 2 M as in binary-addition; output (n tokens): N M little-endian, the end token 2, "
              "then 0s (scored only with --score-padding). n <= 2: output n - 1 zeros and 2 whatever the "
              "input (the authors' placeholder)."),
    make_task("chomsky-compute-sqrt", SqrtConfig, "Chomsky hierarchy (CS): the integer square root of a "
              "binary number, big-endian", Layout(lambda cfg: 2, lambda cfg: 2, lambda n: (n + 1) // 2),
              Filler(compute_sqrt_rows, compute_sqrt_fill, _NO_PAD),
              "input: a uniform number of [1, 2^n - 1] in n big-endian bits; output (ceil(n / 2) tokens): "
              "floor(sqrt) in big-endian bits."),
]
