"""Slow pure-Python twins of the Chomsky-hierarchy tasks, written from docs/tasks/chomsky.md (the
draw order, the row layout, each task's definition), never from the kernels.

A twin draws the input x from ``naive.Stream`` in the documented order, then takes the output
from ``answer``, which computes it from x alone by the task's definition (Python integers,
``eval`` of the expressions, a brute-force solve of the equation), so ``answer`` can also be
checked against the authors' own (input, output) pairs.
"""
import math

import numpy as np

from naive import SPLITS, Stream, _token_dtype

END = 2

# task -> (input_size(params), output_size(params), output length(n), input length(n))
SIZES = {
    "even-pairs": (lambda p: 2, lambda p: 2, lambda n: 1),
    "parity-check": (lambda p: 2, lambda p: 2, lambda n: 1),
    "cycle-navigation": (lambda p: 3, lambda p: 5, lambda n: 1),
    "modular-arithmetic": (lambda p: p["modulus"] + 4, lambda p: p["modulus"], lambda n: 1,
                           lambda n: n if n % 2 else n - 1),
    "modular-arithmetic-brackets": (lambda p: p["modulus"] + 6, lambda p: p["modulus"], lambda n: 1),
    "reverse-string": (lambda p: p["vocab_size"], lambda p: p["vocab_size"], lambda n: n),
    "solve-equation": (lambda p: p["modulus"] + 6, lambda p: p["modulus"], lambda n: 1),
    "stack-manipulation": (lambda p: 5, lambda p: 3, lambda n: n + 1),
    "binary-addition": (lambda p: 3, lambda p: 3, lambda n: n + 1),
    "binary-multiplication": (lambda p: 3, lambda p: 3, lambda n: n),
    "compute-sqrt": (lambda p: 2, lambda p: 2, lambda n: (n + 1) // 2),
    "duplicate-string": (lambda p: p["vocab_size"], lambda p: p["vocab_size"], lambda n: 2 * n),
    "missing-duplicate-string": (lambda p: 4, lambda p: 2, lambda n: 1),
    "odds-first": (lambda p: p["vocab_size"], lambda p: p["vocab_size"], lambda n: n),
    "bucket-sort": (lambda p: p["vocab_size"], lambda p: p["vocab_size"], lambda n: n),
}
DEFAULTS = {"modular-arithmetic": dict(modulus=5, operators="+*-"), "modular-arithmetic-brackets":
            dict(modulus=5, mult=True), "solve-equation": dict(modulus=5), "reverse-string": dict(vocab_size=2),
            "duplicate-string": dict(vocab_size=2), "odds-first": dict(vocab_size=2),
            "bucket-sort": dict(vocab_size=5), "stack-manipulation": dict(score_padding=False),
            "binary-addition": dict(score_padding=False), "binary-multiplication": dict(score_padding=False)}


def bits(st, k):
    words = [st.u64() for _ in range((k + 63) // 64)]
    return [(words[i // 64] >> (i % 64)) & 1 for i in range(k)]


def nonzero_bits(st, k):
    while True:
        b = bits(st, k)
        if any(b):
            return b


def value_le(b):
    return sum(v << i for i, v in enumerate(b))


def bits_le(v, k=None):
    """v in little-endian bits: k of them, or as many as v needs (at least one)."""
    k = max(1, v.bit_length()) if k is None else k
    return [(v >> i) & 1 for i in range(k)]


# ---------------------------------------------------------------- the inputs, by the draw order


def _expression(st, m, length, n_ops):
    """Tokens as strings: numbers, + - * ( )."""
    if length < 5:
        t = str(st.below(m))
        return {1: [t], 2: ["-", t], 3: ["(", t, ")"], 4: ["(", "-", t, ")"]}[length]
    a = 1 + st.below(length - 4)
    left = _expression(st, m, a, n_ops)
    right = _expression(st, m, length - a - 3, n_ops)
    return ["("] + left + ["+-*"[st.below(n_ops)]] + right + [")"]


def _ids(tokens, m, names):
    return [int(t) if t.isdigit() else m + names.index(t) for t in tokens]


def draw_input(task, st, n, p):
    """The input tokens of a sample of drawn length n."""
    if task in ("even-pairs", "parity-check"):
        return bits(st, n)
    if task == "cycle-navigation":
        return [st.below(3) for _ in range(n)]
    if task == "modular-arithmetic":
        m, ops = p["modulus"], p["operators"]
        n = n if n % 2 else n - 1
        return [st.below(m) if i % 2 == 0 else m + "+-*_".index(ops[st.below(len(ops))]) for i in range(n)]
    if task == "modular-arithmetic-brackets":
        m = p["modulus"]
        return _ids(_expression(st, m, n, 3 if p["mult"] else 2), m, "+-*()")
    if task in ("reverse-string", "duplicate-string", "odds-first", "bucket-sort"):
        return [st.below(p["vocab_size"]) for _ in range(n)]
    if task == "solve-equation":
        m = p["modulus"]
        if n < 3:
            return [0] * n
        e = _expression(st, m, n - 2, 2)
        value = eval("".join(e)) % m  # noqa: S307 (digits, brackets, + and -)
        q = st.below(n - 2)
        while not e[q].isdigit():
            q = (q + 1) % (n - 2)
        e[q] = "x"
        return _ids(e + ["="], m, "+-()x=") + [value]
    if task == "stack-manipulation":
        if n == 1:
            return bits(st, 1)
        k = 1 + st.below(n - 1)
        return bits(st, k) + [2 + st.below(3) for _ in range(n - k)]
    if task in ("binary-addition", "binary-multiplication"):
        if n <= 2:
            return bits_le(st.below(2 ** n - 1), n)
        a = 1 + st.below(n - 2)
        first = nonzero_bits(st, a)
        return first + [2] + nonzero_bits(st, n - 1 - a)
    if task == "compute-sqrt":
        return nonzero_bits(st, n)[::-1]
    if task == "missing-duplicate-string":
        if n == 1:
            return [1]
        w = bits(st, n // 2) * 2
        w[st.below(n // 2 * 2)] = 2
        return w + [3] * (n % 2)
    raise KeyError(task)


# ---------------------------------------------------------------- the outputs, from the input


def _eval_mod(tokens, m, names):
    text = "".join(str(t) if t < m else names[t - m] for t in tokens)
    return eval(text) % m  # noqa: S307 (digits, brackets and + - * only)


def answer(task, x, **params):
    """(the authors' output of input x: o class ids, 0s after an end token included; how many
    of them are scored: up to the end token, all with score_padding)."""
    p = dict(DEFAULTS.get(task, {}), **params)
    x = [int(v) for v in x]
    n = len(x)
    o = SIZES[task][2](n)
    if task == "even-pairs":
        y = [sum(x[i] != x[i + 1] for i in range(n - 1)) % 2]
    elif task == "parity-check":
        y = [sum(x) % 2]
    elif task == "cycle-navigation":
        y = [sum(v - 1 for v in x) % 5]
    elif task == "modular-arithmetic":
        y = [_eval_mod(x, p["modulus"], "+-*+")]  # the blank '_' is a '+'
    elif task == "modular-arithmetic-brackets":
        y = [_eval_mod(x, p["modulus"], "+-*()")]
    elif task == "reverse-string":
        y = x[::-1]
    elif task == "solve-equation":
        m = p["modulus"]
        if n < 3:
            y = [0]
        else:
            lhs, rhs = x[:-2], x[-1]
            y = [v for v in range(m) if _eval_mod([v if t == m + 4 else t for t in lhs], m, "+-()") == rhs]
            assert len(y) == 1, (x, y)
    elif task == "stack-manipulation":
        if n == 1:
            stack = x
        else:
            k = next(i for i, v in enumerate(x) if v >= 2) if max(x) >= 2 else n
            stack = list(x[:k])
            for a in x[k:]:
                if a == 2:
                    stack = stack[:-1]
                else:
                    stack.append(a - 3)
        y = stack[::-1] + [END]
    elif task in ("binary-addition", "binary-multiplication"):
        if n <= 2:
            v = value_le(x)
            y = (bits_le(v) if task == "binary-addition" else [0] * (n - 1)) + [END]
        else:
            plus = x.index(2)
            a, b = value_le(x[:plus]), value_le(x[plus + 1:])
            y = bits_le(a + b if task == "binary-addition" else a * b) + [END]
    elif task == "compute-sqrt":
        r = math.isqrt(int("".join(map(str, x)), 2))
        y = bits_le(r, o)[::-1]
    elif task == "duplicate-string":
        y = x + x
    elif task == "missing-duplicate-string":
        if n == 1:
            y = [1]
        else:
            h, j = n // 2, x.index(2)
            y = [x[j + h] if j < h else x[j - h]]
    elif task == "odds-first":
        y = x[1::2] + x[::2]
    elif task == "bucket-sort":
        y = sorted(x)
    else:
        raise KeyError(task)
    scored = len(y) if not p.get("score_padding", False) else o
    y = y + [0] * (o - len(y))
    assert len(y) == o, (task, x, y)
    return y, scored


def sample(task, seed, split, index, **params):
    """The row of sample ``index`` of chomsky-<task>: {"inputs", "targets"}."""
    p = dict(DEFAULTS.get(task, {}), min_length=1, max_length=40, test_min_length=41, test_max_length=500)
    p.update(params)
    if "length" in p:  # one length for every split
        n_all = p.pop("length")
        p.update(min_length=n_all, max_length=n_all, test_min_length=n_all, test_max_length=n_all)
    insize, outsize, out_len = SIZES[task][:3]
    in_len = SIZES[task][3] if len(SIZES[task]) > 3 else (lambda n: n)
    # the test split draws its length from the test range, train and val from the training range; every row is
    # as wide as the longest input of any split and its output
    lo, hi = (p["test_min_length"], p["test_max_length"]) if split == "test" else (p["min_length"], p["max_length"])
    longest = max(p["max_length"], p["test_max_length"])
    width = in_len(longest) + out_len(longest)
    st = Stream(seed, SPLITS[split], index)
    n = lo + st.below(hi - lo + 1)
    x = draw_input(task, st, n, p)
    lengths = ("min_length", "max_length", "test_min_length", "test_max_length")
    y, scored = answer(task, x, **{k: v for k, v in p.items() if k not in lengths})
    e = insize(p)
    inputs = x + [e] * len(y) + [e + 1] * (width - len(x) - len(y))
    targets = [-100] * len(x) + y[:scored] + [-100] * (width - len(x) - scored)
    dtype = _token_dtype(max(e + 2, outsize(p)))
    return {"inputs": np.array(inputs, dtype=dtype), "targets": np.array(targets, dtype=dtype)}
