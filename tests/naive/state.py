"""State-tracking twins (docs/tasks/state-tracking.md): word problems over permutation and
cyclic groups, parity, modular arithmetic with and without brackets."""
import itertools

import numpy as np

from .core import SPLITS, Stream


# ---------------------------------------------------------------- state tracking (docs/tasks/state-tracking.md)


def _cycle_parity(p):
    """0 for an even permutation of 1..n (a tuple), 1 for an odd one, from its cycles."""
    seen, transpositions = set(), 0
    for start in range(1, len(p) + 1):
        length = 0
        i = start
        while i not in seen:
            seen.add(i)
            i = p[i - 1]
            length += 1
        transpositions += max(length - 1, 0)
    return transpositions % 2


def group_elements(group):
    """[(kind, n, elements)] per factor of a group name; elements in the documented order."""
    factors = []
    for part in group.replace("_x_", "x").split("x"):
        kind, n = part[0], int(part[1:])
        if kind == "Z":
            elements = list(range(n))
        else:
            elements = sorted(itertools.permutations(range(1, n + 1)))
            if kind == "A":
                elements = [p for p in elements if _cycle_parity(p) == 0]
        factors.append((kind, n, elements))
    return factors


def group_multiply(factors, a, b):
    """a b for elements given as tuples of components: permutations compose as a(b(i)),
    residues add."""
    out = []
    for (kind, n, _), x, y in zip(factors, a, b):
        out.append((x + y) % n if kind == "Z" else tuple(x[y[i] - 1] for i in range(len(y))))
    return tuple(out)


def word_problem(seed, split, index, group, k):
    """inputs, targets int64 [k + 1]: BOS, k uniform element ids; BOS, their prefix products,
    multiplying the elements themselves."""
    factors = group_elements(group)
    sizes = [len(e) for _, _, e in factors]
    order = int(np.prod(sizes))
    bos = order + 1
    st = Stream(seed, SPLITS[split], index)
    ids = [st.randint(order) for _ in range(k)]

    def element(i):
        parts = []
        for (_, _, elements), size in zip(reversed(factors), reversed(sizes)):
            parts.append(elements[i % size])
            i //= size
        return tuple(reversed(parts))

    def index_of(e):
        i = 0
        for (_, _, elements), x in zip(factors, e):
            i = i * len(elements) + elements.index(x)
        return i

    acc = element(0)
    prods = []
    for i in ids:
        acc = group_multiply(factors, acc, element(i))
        prods.append(index_of(acc))
    return {"inputs": np.array([bos] + ids, dtype=np.int64), "targets": np.array([bos] + prods, dtype=np.int64)}


class HalfDraws:
    """Uniform draws in [0, k) from the 32-bit halves of a Stream's words, low half first, by
    Lemire's multiply-shift with rejection (docs/tasks/state-tracking.md, "Draws")."""

    def __init__(self, st):
        self.st, self.halves = st, []

    def __call__(self, k):
        while True:
            if not self.halves:
                w = self.st.u64()
                self.halves = [w & 0xFFFFFFFF, w >> 32]
            m = self.halves.pop(0) * k
            if m % (1 << 32) >= (1 << 32) % k:
                return m >> 32


def _lengths(split, lo, hi, test_lo, test_hi):
    return (lo, hi) if split == "train" else (test_lo, test_hi)


def _scored(context_length, word, answer_at, answer, hidden=0, pad=0):
    """The authors' loader: w = word + answer + padding; the answer hidden in the input, the
    pair shifted by one, -100 at every target but the answer's."""
    w = list(word) + [answer]
    w = w + [pad] * (context_length - len(w))
    inputs = list(w[:-1])
    if answer_at < context_length - 1:
        inputs[answer_at] = hidden
    targets = [-100] * (context_length - 1)
    targets[answer_at - 1] = answer
    return {"inputs": np.array(inputs, dtype=np.int64), "targets": np.array(targets, dtype=np.int64)}


def parity(seed, split, index, vocab_size, min_sequence_length, max_sequence_length, context_length,
           test_min_sequence_length, test_max_sequence_length):
    lo, hi = _lengths(split, min_sequence_length, max_sequence_length, test_min_sequence_length,
                      test_max_sequence_length)
    st = Stream(seed, SPLITS[split], index)
    n = lo + st.randint(hi - lo + 1)
    draw = HalfDraws(st)
    word = [1 + draw(vocab_size - 1) for _ in range(n - 1)]
    answer = sum(t - 1 for t in word) % (vocab_size - 1) + 1
    return _scored(context_length, word, n - 1, answer)


def modular_arithmetic(seed, split, index, vocab_size, min_sequence_length, max_sequence_length,
                       context_length, test_min_sequence_length, test_max_sequence_length):
    """Without brackets: the value through Python's own precedence of + - * on the numbers."""
    lo, hi = _lengths(split, min_sequence_length, max_sequence_length, test_min_sequence_length,
                      test_max_sequence_length)
    st = Stream(seed, SPLITS[split], index)
    r_lo = (lo + 1) // 2
    r = r_lo + st.randint((hi + 1) // 2 - r_lo + 1)
    n = 2 * r - 1
    m = vocab_size - 5
    draw = HalfDraws(st)
    word, text = [], ""
    for i in range(n - 2):
        if i % 2 == 0:
            v = draw(m)
            word.append(5 + v)
            text += str(v)
        else:
            op = 1 + draw(3)
            word.append(op)
            text += " +-*"[op]
    answer = 5 + eval(text) % m  # noqa: S307 (digits and + - * only)
    return _scored(context_length, word + [4], n - 1, answer)


def _bracket_expression(draw, m, length, n_ops):
    """(tokens as strings, Python text) in the documented pre-order of draws."""
    if length < 5:
        t = str(draw(m))
        return {1: ([t], t), 2: (["-", t], f"(-{t})"), 3: (["(", t, ")"], f"({t})"),
                4: (["(", "-", t, ")"], f"(-{t})")}[length]
    a = 1 + draw(length - 4)
    lt, ltext = _bracket_expression(draw, m, a, n_ops)
    rt, rtext = _bracket_expression(draw, m, length - a - 3, n_ops)
    op = "+-*"[draw(n_ops)]
    return ["("] + lt + [op] + rt + [")"], f"({ltext}{op}{rtext})"


def modular_arithmetic_brackets(seed, split, index, vocab_size, mult, min_sequence_length,
                                max_sequence_length, context_length, test_min_sequence_length,
                                test_max_sequence_length):
    lo, hi = _lengths(split, min_sequence_length, max_sequence_length, test_min_sequence_length,
                      test_max_sequence_length)
    st = Stream(seed, SPLITS[split], index)
    m = vocab_size - 7
    ids = {"+": m, "-": m + 1, "*": m + 2, "(": m + 3, ")": m + 4, "=": m + 5}
    n = max(lo + st.randint(hi - lo + 1), 5)
    tokens, text = _bracket_expression(HalfDraws(st), m, n - 3, 3 if mult else 2)
    assert len(tokens) == n - 3
    word = [ids[t] if t in ids else int(t) for t in tokens] + [ids["="]]
    answer = eval(text) % m  # noqa: S307 (digits, brackets and + - * only)
    return _scored(context_length, word, n - 2, answer, pad=m + 6)
