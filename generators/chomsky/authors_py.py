"""The authors' exact batches of their six Python-drawn Chomsky tasks: what
``sample_batch(key, count, length)`` of google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4be
returns after ``random.seed(seed); np.random.seed(seed)`` on a fresh task object built as
``experiments/constants.py`` TASK_BUILDERS builds it, as class ids (``np.argmax`` of their one-hot
``input`` and ``output``). Their ``sample_batch`` ignores the JAX key and draws from the global
``np.random`` (legacy ``RandomState``) and Python's ``random``; both are replayed here with our own
generators (generators/chomsky/mt19937.py), one state each, both seeded with ``seed``.

``draw(name, count, seed, length, params) -> (inputs, targets)``, int64; names are the authors'
module names with hyphens; seed in [0, 2^32 - 1] (``np.random.seed``'s range).

Draw order and output, per task (N = ``np_randint``, the legacy ``randint(low, high)``, high
exclusive; P = Python's ``random.randint(a, b)``, b inclusive):

modular-arithmetic-brackets (params modulus M = 5, mult = True; tasks/dcf/modular_arithmetic_brackets.py
    48-89, alphabet 114-124, batch 129-134 and 156-165): per sample, pre-order: an expression of
    length l is t, -t, (t), (-t) for l = 1..4 with t = N(0, M); for l >= 5, |left| = N(1, l - 3),
    then the left expression, the right one (l - 3 - |left|), then op = N(0, 3) (N(0, 2) without
    mult): '(' left op right ')'. Tokens are characters: a number is its decimal digits (ids 0..9),
    '+' M, '-' M+1, '*' M+2, '(' M+3, ')' M+4; the target its value mod M (Python's %). With
    M <= 10 a row has exactly ``length`` tokens; above, two-digit numbers lengthen it, and rows of
    unequal lengths make their ``np.array`` raise (raised here too). count 0 or length < 1 raise.
solve-equation (params modulus M = 5; tasks/dcf/solve_equation.py 51-67, alphabet 90-99, 143-159):
    length < 3: inputs [count, length] of 0, targets [count] of 0, nothing drawn. Else per sample:
    an expression of length - 2 as above with '+', '-' only, then idx = N(0, number of its
    characters), idx = (idx + 1) mod (length - 2) while the character there is not a digit; that
    digit is the target, replaced by 'x' (M+4); then '=' (M+5) and the value's digits. Ids: '+' M,
    '-' M+1, '(' M+2, ')' M+3. count 0 (length >= 3) and length < 0 raise.
stack-manipulation (tasks/dcf/stack_manipulation.py 59-92): per sample, length 1: one bit N(0, 2)
    (their ``size=(1,)``, one draw); else k = N(1, length), k bits N(0, 2) (bottom first), then
    length - k actions N(2, 5) (2 POP, ignored on an empty stack; 3 PUSH 0; 4 PUSH 1); targets
    [count, length + 1]: the final stack top first, 2, then 0s. count 0: inputs and targets of
    shape [0] (their empty list through ``one_hot``). length < 1 (count > 0) raises.
binary-addition (tasks/cs/binary_addition.py 119-141, 156): length <= 2: v = N(0, 2^length - 1)
    for every sample (one array draw), the input v in ``length`` bits little-endian, the target v's
    bits without leading zeros ("0" for 0), 2, 0s to length + 1. Else: a = N(1, length - 1) for
    every sample (one array draw), then P(1, 2^a - 1) for every sample, then P(1, 2^b - 1),
    b = length - 1 - a, for every sample; the input N (a bits, little-endian) 2 M (b bits), the
    target N + M without leading zeros, 2, 0s to length + 1. count 0: shape [0] for both; length
    < 1 (count > 0) raises.
binary-multiplication (tasks/cs/binary_multiplication.py 71-96, 117): the same draws; the target
    N M, 2, 0s to ``length`` tokens; length <= 2: the target is length - 1 zeros then 2.
compute-sqrt (tasks/cs/compute_sqrt.py 46-59): X = P(1, 2^length - 1) per sample; the input X in
    ``length`` bits big-endian, the target floor(sqrt(X)) in ceil(length / 2) bits big-endian.
    count 0: shape [0] for both; length < 1 (count > 0) raises.

P(1, 2^k - 1) is drawn as k bits (``py_randint_ones``), never as a Python int: k-bit numbers
with k in the thousands cost nothing extra. Single-output tasks give targets of shape [count].
"""
import numpy as np
from numba import njit

from longsynth.errors import LongsynthError
from longsynth.generators.chomsky.cs_arith import add_bits, isqrt_bits
from longsynth.generators.chomsky.limbs import mul_bits
from longsynth.generators.chomsky.mt19937 import np_randint, numpy_state, py_randint_ones, python_state

END = 2  # stack, addition, multiplication: the end token of the target (and the operator of the input)
NAMES = ("modular-arithmetic-brackets", "solve-equation", "stack-manipulation", "binary-addition",
         "binary-multiplication", "compute-sqrt")


# ---------------------------------------------------------------- expressions (both DCF arithmetic tasks)


@njit(cache=True)
def _decimal(out, p, t):
    """Writes t >= 0 as decimal digits (most significant first) at out[p:]; returns the end."""
    d = 1
    while d * 10 <= t:
        d *= 10
    while d > 0:
        out[p] = (t // d) % 10
        p += 1
        d //= 10
    return p


@njit(cache=True)
def _expression(ns, m, n_ops, length, out, ids):
    """The authors' recursive expression of ``length`` (>= 1), pre-order, drawn from NumPy's
    state ns, as characters at out[0:]; returns (its value mod m, the number of characters).
    ids = (+, -, *, (, )) token ids. An explicit stack of frames, no recursion."""
    minus, lpar, rpar = ids[1], ids[3], ids[4]
    cap = length // 4 + 2  # frames of length >= 5 only nest, each child at least 4 shorter
    flen = np.empty(cap, dtype=np.int64)
    fleft = np.empty(cap, dtype=np.int64)
    fval = np.empty(cap, dtype=np.int64)
    fop = np.empty(cap, dtype=np.int64)
    fstage = np.empty(cap, dtype=np.int64)
    depth = 1
    flen[0], fstage[0] = length, 0
    p, ret = 0, 0
    while depth > 0:
        f = depth - 1
        ln = flen[f]
        if fstage[f] == 0 and ln < 5:
            t = np_randint(ns, 0, m)
            neg = ln == 2 or ln == 4
            if ln >= 3:
                out[p] = lpar
                p += 1
            if neg:
                out[p] = minus
                p += 1
            p = _decimal(out, p, t)
            if ln >= 3:
                out[p] = rpar
                p += 1
            ret = (m - t) % m if neg else t % m
            depth -= 1
        elif fstage[f] == 0:
            a = np_randint(ns, 1, ln - 3)
            fleft[f] = a
            out[p] = lpar
            p += 1
            fstage[f] = 1
            flen[depth], fstage[depth] = a, 0
            depth += 1
        elif fstage[f] == 1:
            fval[f] = ret
            fop[f] = p  # the operator's place; it is drawn after the right operand
            p += 1
            fstage[f] = 2
            flen[depth], fstage[depth] = ln - fleft[f] - 3, 0
            depth += 1
        else:
            op = np_randint(ns, 0, n_ops)
            out[fop[f]] = ids[op]
            out[p] = rpar
            p += 1
            if op == 0:
                ret = (fval[f] + ret) % m
            elif op == 1:
                ret = (fval[f] - ret + m) % m
            else:
                ret = fval[f] * ret % m
            depth -= 1
    return ret, p


@njit(cache=True)
def brackets_batch(ns, length, m, n_ops, rows, lens, vals):
    """rows[b, :lens[b]] = sample b's characters, vals[b] its value, for b < rows.shape[0]."""
    ids = np.array([m, m + 1, m + 2, m + 3, m + 4], dtype=np.int64)
    for b in range(rows.shape[0]):
        vals[b], lens[b] = _expression(ns, m, n_ops, length, rows[b], ids)


@njit(cache=True)
def solve_batch(ns, length, m, rows, lens, sols):
    """rows[b, :lens[b]] = sample b's equation, sols[b] the digit 'x' replaced; length >= 3."""
    ids = np.array([m, m + 1, -1, m + 2, m + 3], dtype=np.int64)
    for b in range(rows.shape[0]):
        row = rows[b]
        value, nc = _expression(ns, m, 2, length - 2, row, ids)
        idx = np_randint(ns, 0, nc)
        while row[idx] >= m:  # not a digit (digits are ids 0..9, below m; the rest are >= m)
            idx = (idx + 1) % (length - 2)
        sols[b] = row[idx]
        row[idx] = m + 4
        row[nc] = m + 5
        lens[b] = _decimal(row, nc + 1, value)


# ---------------------------------------------------------------- stack manipulation


@njit(cache=True)
def stack_batch(ns, length, inp, tgt):
    """inp [count, length], tgt [count, length + 1]; length >= 1."""
    stack = np.empty(length, dtype=np.int64)
    for b in range(inp.shape[0]):
        tgt[b, :] = 0
        if length == 1:
            v = np_randint(ns, 0, 2)
            inp[b, 0] = v
            tgt[b, 0], tgt[b, 1] = v, END
            continue
        k = np_randint(ns, 1, length)
        for i in range(k):
            inp[b, i] = np_randint(ns, 0, 2)
            stack[i] = inp[b, i]
        size = k
        for i in range(k, length):
            a = np_randint(ns, 2, 5)
            inp[b, i] = a
            if a == 2:
                if size > 0:
                    size -= 1
            else:
                stack[size] = a - 3
                size += 1
        for j in range(size):
            tgt[b, j] = stack[size - 1 - j]
        tgt[b, size] = END


# ---------------------------------------------------------------- binary arithmetic


@njit(cache=True)
def binary_batch(ns, ps, length, mul, inp, tgt):
    """Addition (mul False; tgt [count, length + 1]) or multiplication (tgt [count, length])."""
    count = inp.shape[0]
    tgt[:, :] = 0
    if length <= 2:
        for b in range(count):
            v = np_randint(ns, 0, (1 << length) - 1)
            for i in range(length):
                inp[b, i] = (v >> i) & 1
            if mul:
                tgt[b, length - 1] = END
            else:
                r = 2 if v == 2 else 1
                for j in range(r):
                    tgt[b, j] = (v >> j) & 1
                tgt[b, r] = END
        return
    a = np.empty(count, dtype=np.int64)
    for b in range(count):
        a[b] = np_randint(ns, 1, length - 1)
    for b in range(count):
        py_randint_ones(ps, a[b], inp[b], 0)
    for b in range(count):
        inp[b, a[b]] = END
        py_randint_ones(ps, length - 1 - a[b], inp[b], a[b] + 1)
    res = np.empty(length + 1, dtype=np.int64)
    for b in range(count):
        x = inp[b, :a[b]]
        y = inp[b, a[b] + 1:]
        c = length - 1 - a[b]
        r = mul_bits(x, a[b], y, c, res) if mul else add_bits(x, a[b], y, c, res)
        for j in range(r):
            tgt[b, j] = res[j]
        tgt[b, r] = END


@njit(cache=True)
def sqrt_batch(ps, length, inp, tgt):
    """inp [count, length], tgt [count, ceil(length / 2)], both big-endian; length >= 1."""
    o = tgt.shape[1]
    x = np.empty(length, dtype=np.int64)
    root = np.empty(o, dtype=np.int64)
    for b in range(inp.shape[0]):
        py_randint_ones(ps, length, x, 0)
        for i in range(length):
            inp[b, i] = x[length - 1 - i]
        isqrt_bits(x, length, root, o)
        for j in range(o):
            tgt[b, j] = root[o - 1 - j]


# ---------------------------------------------------------------- the wrapper


def _raise(name, why):
    raise LongsynthError(f"chomsky-{name}: the authors' sample_batch raises {why}")


def _empty():
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)


def _same_length(name, rows, lens, count):
    if count and (lens != lens[0]).any():
        _raise(name, "here: its numbers of two or more digits give rows of unequal lengths "
                     f"({lens.min()} to {lens.max()} tokens), which np.array cannot stack")
    return rows[:, :lens[0] if count else 0]


def _arith(name, count, seed, length, params):
    m = int(params.get("modulus", 5))
    if m < 1:
        _raise(name, f"for modulus {m} (< 1)")
    if name == "solve-equation":
        if length < 0:
            _raise(name, f"for length {length} (< 0)")
        if length < 3:  # their placeholder: zeros, nothing drawn
            return np.zeros((count, length), dtype=np.int64), np.zeros(count, dtype=np.int64)
    elif length < 1:
        _raise(name, f"for length {length} (< 1)")
    if count == 0:
        _raise(name, "for count 0 (KeyError: an empty batch has no entry for its length)")
    digits = len(str(m - 1))
    ns = numpy_state(seed)
    lens = np.empty(count, dtype=np.int64)
    vals = np.empty(count, dtype=np.int64)
    if name == "solve-equation":
        rows = np.empty((count, (length - 2) * digits + 1 + digits), dtype=np.int64)
        solve_batch(ns, length, m, rows, lens, vals)
    else:
        rows = np.empty((count, length * digits), dtype=np.int64)
        brackets_batch(ns, length, m, 3 if params.get("mult", True) else 2, rows, lens, vals)
    return _same_length(name, rows, lens, count), vals


def draw(name, count, seed, length, params):
    """The authors' batch ``sample_batch(PRNGKey(seed), count, length)`` of task ``name`` (their
    module name with hyphens) after ``random.seed(seed); np.random.seed(seed)``, as int64 class ids
    (inputs, targets), shapes as ``np.argmax(b["input"], -1)`` and ``np.argmax(b["output"], -1)``
    give them. ``params``: modular-arithmetic-brackets ``modulus`` (5), ``mult`` (True);
    solve-equation ``modulus`` (5); the others take none. Where their code raises, this raises a
    LongsynthError."""
    count, seed, length = int(count), int(seed), int(length)
    if name in ("modular-arithmetic-brackets", "solve-equation"):
        return _arith(name, count, seed, length, params)
    if name not in NAMES:
        raise LongsynthError(f"no authors' Python stream for task {name!r}; one of {', '.join(NAMES)}")
    if count == 0:
        return _empty()  # their empty lists through jnp.array and one_hot: shape [0], any length
    if length < 1:
        _raise(name, f"for length {length} (< 1)")
    inp = np.empty((count, length), dtype=np.int64)
    if name == "stack-manipulation":
        tgt = np.empty((count, length + 1), dtype=np.int64)
        stack_batch(numpy_state(seed), length, inp, tgt)
    elif name == "compute-sqrt":
        tgt = np.empty((count, (length + 1) // 2), dtype=np.int64)
        sqrt_batch(python_state(seed), length, inp, tgt)
    else:
        mul = name == "binary-multiplication"
        tgt = np.empty((count, length if mul else length + 1), dtype=np.int64)
        binary_batch(numpy_state(seed), python_state(seed), length, mul, inp, tgt)
    return inp, tgt
