"""The deterministic context-free tasks of the Chomsky hierarchy (Deletang et al.):
modular-arithmetic-brackets, reverse-string, solve-equation, stack-manipulation
(docs/tasks/chomsky.md).

Rows (generators/chomsky/_common.py): the input x_1..x_n, o empty tokens E = I, padding; the
targets at positions n..n+o-1. Draw order: the length n first, then the task's own draws.

chomsky-modular-arithmetic-brackets (M = modulus, I = M + 6, O = M, o = 1): x is a bracketed
    expression of exactly n tokens, numbers 0..M-1, '+' M, '-' M+1, '*' M+2, '(' M+3, ')' M+4
    (M+5, the authors' 'x', never appears); y its value mod M. An expression of length l is
    t, - t, ( t ), ( - t ) for l = 1..4 (t = below(M)), and ( e1 op e2 ) for l >= 5, with
    |e1| = 1 + below(l - 4) drawn first, then e1, e2 (|e2| = l - 3 - |e1|), then
    op = below(3) ('+', '-', '*'; below(2) without mult).
chomsky-reverse-string (V = vocab_size, I = O = V, o = n): x_i = below(V); y = x_n..x_1.
chomsky-solve-equation (M = modulus, I = M + 6, O = M, o = 1): tokens '+' M, '-' M+1, '(' M+2,
    ')' M+3, 'x' M+4, '=' M+5. For n >= 3: an expression e of n - 2 tokens as above with '+'
    and '-' only, then p = below(n - 2); the number at the first position p, p+1, ... (cyclic)
    that holds one is replaced by 'x' and is y; x = e '=' value(e). For n < 3 (the authors'
    placeholder): x = n zeros, y = 0, nothing drawn.
chomsky-stack-manipulation (I = 5, O = 3, o = n + 1): n = 1: x = bits(1), y = x_1 END. n >= 2:
    k = 1 + below(n - 1), the stack x_1..x_k = bits(k) (bottom first), then n - k actions
    x = 2 + below(3) (2 POP, ignored on an empty stack; 3 PUSH 0; 4 PUSH 1); y = the final
    stack top first, then END = 2, then 0s; the 0s are scored only with score_padding.

Worked example (stack-manipulation, n = 7): x = 0 1 1 0 4 2 2 (stack 0 1 1 0, PUSH 1, POP,
POP): the stack 0 1 1, so y = 1 1 0 2 0 0 0 0; targets -100 x 7, 1 1 0 2, -100 x 4.
"""
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators.chomsky._common import (CHUNK, MAX_ALPHABET, AlphabetConfig, Filler, Layout,
                                                   TerminatedConfig, bits, draw_length, expression, expression_frames,
                                                   fixed_length, frame, make_task, max_length, min_length,
                                                   test_max_length, test_min_length, uniform_string, unsigned)
from longsynth.generators._tokens import IGNORE
from longsynth.rng import below, below_fill, reseed
from longsynth.task import param

END = 2  # stack-manipulation's end token (an output class)


def _modulus():
    return param(5, "numbers and answers are residues 0..modulus-1 (the paper: 5; the authors' code spells "
                    "numbers as characters, so it works up to 10)", lo=2, hi=MAX_ALPHABET)


@dataclass(frozen=True)
class BracketsConfig:
    modulus: int = _modulus()
    mult: bool = param(True, "'*' among the operators (the paper's runs: on, TASK_BUILDERS' mult=True)")
    min_length: int = min_length()
    max_length: int = max_length()
    test_min_length: int = test_min_length()
    test_max_length: int = test_max_length()
    length: int | None = fixed_length()


@dataclass(frozen=True)
class SolveEquationConfig:
    modulus: int = _modulus()
    min_length: int = min_length()
    max_length: int = max_length()
    test_min_length: int = test_min_length()
    test_max_length: int = test_max_length()
    length: int | None = fixed_length()


# ---------------------------------------------------------------- kernels


@njit(cache=True, inline="always")
def brackets_one(s, seed, split, index, lo, hi, m, n_ops, inp, tgt, ids, frames):
    """ids: the tokens of + - * ( ); frames: expression's scratch."""
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, 1, m + 6)
    tgt[n] = expression(s, m, n_ops, n, inp, 0, ids, frames)


@njit(cache=True, inline="always")
def reverse_string_one(s, seed, split, index, lo, hi, v, inp, tgt):
    n = uniform_string(s, seed, split, index, lo, hi, v, 1, inp, tgt)
    un = unsigned(n)
    for i in range(un):  # unsigned indices: _common.unsigned
        tgt[un + i] = inp[un - unsigned(1) - i]


@njit(cache=True, inline="always")
def solve_equation_one(s, seed, split, index, lo, hi, m, inp, tgt, ids, frames):
    """ids: the tokens of + - (no *) ( ); frames: expression's scratch."""
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, 1, m + 6)
    if n < 3:
        for i in range(n):
            inp[i] = 0
        tgt[n] = 0
        return
    value = expression(s, m, 2, n - 2, inp, 0, ids, frames)
    p = below(s, n - 2)
    while inp[p] >= m:  # the expression holds a number: at most n - 3 steps
        p = (p + 1) % (n - 2)
    tgt[n] = inp[p]
    inp[p] = m + 4
    inp[n - 2] = m + 5
    inp[n - 1] = value


@njit(cache=True, inline="always")
def stack_manipulation_one(s, seed, split, index, lo, hi, pad_scored, inp, tgt, stack):
    """stack: scratch of hi entries."""
    reseed(s, seed, split, index)
    n = draw_length(s, lo, hi)
    frame(inp, tgt, n, n + 1, 5)
    if n == 1:
        bits(s, inp, 0, 1)
        tgt[1], tgt[2] = inp[0], END
        return
    k = 1 + below(s, n - 1)
    bits(s, inp, 0, k)
    size = k
    for i in range(k):
        stack[i] = inp[i]
    below_fill(s, inp, k, n - k, 3)
    for i in range(k, n):
        a = 2 + inp[i]
        inp[i] = a
        if a == 2:
            if size > 0:
                size -= 1
        else:
            stack[size] = a - 3
            size += 1
    for j in range(size):
        tgt[n + j] = stack[size - 1 - j]
    tgt[n + size] = END
    for j in range(size + 1, n + 1):
        tgt[n + j] = 0 if pad_scored else IGNORE


# Batch fillers (_common.py, "Batch fillers"): serial over rows, and parallel over chunks of CHUNK rows.


@njit(cache=True)
def brackets_rows(seed, split, start, lo, hi, m, n_ops, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    ids = np.array([m, m + 1, m + 2, m + 3, m + 4], dtype=np.int64)
    frames = np.empty((5, expression_frames(hi)), dtype=np.int64)
    for b in range(inp.shape[0]):
        brackets_one(s, seed, split, start + b, lo, hi, m, n_ops, inp[b], tgt[b], ids, frames)


@njit(cache=True)
def reverse_string_rows(seed, split, start, lo, hi, v, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    for b in range(inp.shape[0]):
        reverse_string_one(s, seed, split, start + b, lo, hi, v, inp[b], tgt[b])


@njit(cache=True)
def solve_equation_rows(seed, split, start, lo, hi, m, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    ids = np.array([m, m + 1, -1, m + 2, m + 3], dtype=np.int64)
    frames = np.empty((5, expression_frames(hi)), dtype=np.int64)
    for b in range(inp.shape[0]):
        solve_equation_one(s, seed, split, start + b, lo, hi, m, inp[b], tgt[b], ids, frames)


@njit(cache=True)
def stack_manipulation_rows(seed, split, start, lo, hi, pad_scored, inp, tgt):
    s = np.empty(4, dtype=np.uint64)  # the rows' random state, reseeded per row
    stack = np.empty(hi, dtype=np.int64)
    for b in range(inp.shape[0]):
        stack_manipulation_one(s, seed, split, start + b, lo, hi, pad_scored, inp[b], tgt[b], stack)


@njit(cache=True, parallel=True)
def brackets_fill(seed, split, start, lo, hi, m, n_ops, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        brackets_rows(seed, split, start + i, lo, hi, m, n_ops, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def reverse_string_fill(seed, split, start, lo, hi, v, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        reverse_string_rows(seed, split, start + i, lo, hi, v, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def solve_equation_fill(seed, split, start, lo, hi, m, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        solve_equation_rows(seed, split, start + i, lo, hi, m, inp[i:j], tgt[i:j])


@njit(cache=True, parallel=True)
def stack_manipulation_fill(seed, split, start, lo, hi, pad_scored, inp, tgt):
    for c in prange((inp.shape[0] + CHUNK - 1) // CHUNK):
        i, j = c * CHUNK, min((c + 1) * CHUNK, inp.shape[0])
        stack_manipulation_rows(seed, split, start + i, lo, hi, pad_scored, inp[i:j], tgt[i:j])


# ---------------------------------------------------------------- wrappers


_ONE = lambda n: 1  # noqa: E731
_ARITH = Layout(lambda cfg: cfg.modulus + 6, lambda cfg: cfg.modulus, _ONE)

TASKS = [
    make_task("chomsky-modular-arithmetic-brackets", BracketsConfig, "Chomsky hierarchy (DCF): the value mod 5 "
              "of a bracketed expression of exactly n tokens", _ARITH,
              Filler(brackets_rows, brackets_fill, lambda cfg: (cfg.modulus, 3 if cfg.mult else 2)),
              "input: a random bracketed expression of exactly n tokens (numbers 0..M-1, + M, - M+1, * M+2, "
              "( M+3, ) M+4), split points, numbers and operators uniform; output (one token): its value mod M."),
    make_task("chomsky-reverse-string", AlphabetConfig, "Chomsky hierarchy (DCF): a string of uniform "
              "symbols, reversed", Layout(lambda cfg: cfg.vocab_size, lambda cfg: cfg.vocab_size, lambda n: n),
              Filler(reverse_string_rows, reverse_string_fill, lambda cfg: (cfg.vocab_size,)),
              "input: n uniform symbols 0..V-1; output (n tokens): the string reversed."),
    make_task("chomsky-solve-equation", SolveEquationConfig, "Chomsky hierarchy (DCF): solve a bracketed "
              "+/- equation mod 5 for its unknown x", _ARITH,
              Filler(solve_equation_rows, solve_equation_fill, lambda cfg: (cfg.modulus,)),
              "input: a bracketed +/- expression of n - 2 tokens with one number replaced by x (M+4), then "
              "= (M+5) and its value; output (one token): the number x stands for. n < 3: n zeros, answer 0 "
              "(the authors' placeholder)."),
    make_task("chomsky-stack-manipulation", TerminatedConfig, "Chomsky hierarchy (DCF): run POP / PUSH 0 / "
              "PUSH 1 on a bit stack and pop the result", Layout(lambda cfg: 5, lambda cfg: 3, lambda n: n + 1),
              Filler(stack_manipulation_rows, stack_manipulation_fill, lambda cfg: (cfg.score_padding,)),
              "input: a stack of k uniform bits (bottom first, k uniform in 1..n-1), then n - k uniform actions "
              "2 POP, 3 PUSH 0, 4 PUSH 1; output (n + 1 tokens): the final stack top first, the end token 2, "
              "then 0s (scored only with --score-padding)."),
]
