"""The authors' exact Python-drawn Chomsky batches (generators/chomsky/authors_py.py) and the two
Mersenne Twisters under them (generators/chomsky/mt19937.py).

- every setting of the six Python tasks in tests/data/chomsky_stream.npz (their own
  ``sample_batch``, run by bench/chomsky_stream_fixtures.py) equals ``draw``, values and shape,
  and where their code raised, ``draw`` raises;
- the generators against NumPy's legacy ``RandomState`` and CPython's ``random`` themselves;
- settings the fixtures do not hold (lengths of several hundred bits, moduli above 10, more
  seeds) against a slow twin written here from the draw order in authors_py's docstring, which
  draws from ``RandomState(seed)`` and ``random.Random(seed)`` with Python ints.
No JAX needed.
"""
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from longsynth.errors import LongsynthError
from longsynth.generators.chomsky import mt19937 as mt
from longsynth.generators.chomsky.authors_py import NAMES, draw

FIXTURES = Path(__file__).parent / "data" / "chomsky_stream.npz"
SEEDS = [0, 1, 2, 42, 1234567, 2**31 - 1, 2**31, 2**32 - 1] + [int(s) for s in
                                                                np.random.default_rng(7).integers(0, 2**32, 12)]


# ---------------------------------------------------------------- the authors' own batches


def _fixtures():
    with np.load(FIXTURES) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        arrays = {k: z[k] for k in z.files if k.split("/")[0] in NAMES}
    return meta, arrays


def test_fixture_settings_are_reproduced():
    meta, arrays = _fixtures()
    settings = [s for s in meta["settings"] if s[0] in NAMES]
    assert {s[0] for s in settings} == set(NAMES)
    for name, seed, n, count, params in settings:
        stem = f"{name}/{seed}/{n}/{count}/{json.dumps(params, sort_keys=True, separators=(',', ':'))}"
        x, y = draw(name, count, seed, n, params)
        want_x, want_y = arrays[stem + "/inputs"], arrays[stem + "/targets"]
        assert x.dtype == np.int64 and y.dtype == np.int64
        assert x.shape == want_x.shape and y.shape == want_y.shape, stem
        assert np.array_equal(x, want_x) and np.array_equal(y, want_y), stem


def test_fixture_errors_are_raised():
    meta, _ = _fixtures()
    errors = [e for e in meta["errors"] if e[0] in NAMES]
    for name, seed, n, count, params, _kind in errors:
        with pytest.raises(LongsynthError, match="raises"):
            draw(name, count, seed, n, params)


# ---------------------------------------------------------------- the generators


def test_numpy_seeding_and_words():
    for seed in SEEDS:
        rs = np.random.RandomState(seed)
        st = mt.numpy_state(seed)
        assert np.array_equal(st[:624], rs.get_state()[1].astype(np.int64))
        # a span of exactly 2^32 is one raw word per value
        want = rs.randint(0, 2**32, size=1500, dtype=np.uint64).astype(np.int64)
        assert np.array_equal([mt.next32(st) for _ in range(1500)], want)


SPANS = [1, 2, 3, 4, 5, 7, 8, 9, 100, 255, 256, 257, 2**16 + 1, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 1, 2**32,
         2**32 + 1, 2**33 - 1, 2**35 + 12345, 2**39 + 1, 2**40]


def test_numpy_randint_scalar_and_arrays():
    rng = np.random.default_rng(11)
    spans = SPANS + [int(s) for s in rng.integers(1, 2**40, 12)]
    for seed in SEEDS:
        rs = np.random.RandomState(seed)
        st = mt.numpy_state(seed)
        for i, span in enumerate(spans):
            low = int(rng.integers(-1000, 1000))
            want = [int(rs.randint(low, low + span)) for _ in range(5)]
            assert [mt.np_randint(st, low, low + span) for _ in range(5)] == want, (seed, span)
            size = [0, 1, 7, 40][i % 4]
            want = rs.randint(low, low + span, size=size)  # the array form, drawn first to last
            got = np.empty(size, dtype=np.int64)
            mt.np_randint_fill(st, low, low + span, got)
            assert np.array_equal(got, want), (seed, span, size)
            want = rs.randint(low, low + span, size=(1,))  # stack-manipulation's size=(1,)
            assert want.shape == (1,) and mt.np_randint(st, low, low + span) == want[0]
        # both generators are still in step
        assert mt.np_randint(st, 0, 2**32) == rs.randint(0, 2**32)


def _words(v, k):
    return [(v >> (32 * i)) & mt.MASK32 for i in range((k + 31) // 32)]


def test_python_seeding():
    for seed in SEEDS + [2**32, 2**40 + 5, 2**100 + 3, -1, -(2**35)]:
        want = np.array(random.Random(seed).getstate()[1][:624], dtype=np.int64)
        st = mt.python_state(seed)
        assert np.array_equal(st[:624], want), seed


def test_python_getrandbits_all_widths():
    for seed in SEEDS[:6]:
        r = random.Random(seed)
        st = mt.python_state(seed)
        out = np.empty(19, dtype=np.int64)
        for k in list(range(1, 601)) + [0, 32, 64, 0, 1]:
            v = r.getrandbits(k)
            mt.py_getrandbits(st, k, out)
            assert list(out[:(k + 31) // 32]) == _words(v, k), (seed, k)


def test_python_randint():
    rng = np.random.default_rng(12)
    spans = SPANS + [int(s) for s in rng.integers(1, 2**40, 12)]
    for seed in SEEDS:
        r = random.Random(seed)
        st = mt.python_state(seed)
        for span in spans:
            a = int(rng.integers(-1000, 1000))
            want = [r.randint(a, a + span - 1) for _ in range(5)]
            assert [mt.py_randint(st, a, a + span - 1) for _ in range(5)] == want, (seed, span)


def test_python_randint_of_k_bits():
    for seed in SEEDS[:6]:
        r = random.Random(seed)
        st = mt.python_state(seed)
        out = np.full(605, -1, dtype=np.int64)
        for k in list(range(1, 601)) + [1, 1, 2, 2, 31, 32, 33]:
            v = r.randint(1, 2**k - 1)
            length = mt.py_randint_ones(st, k, out, 3)
            assert length == v.bit_length()
            assert list(out[3:3 + k]) == [(v >> i) & 1 for i in range(k)], (seed, k)
            assert out[:3].tolist() == [-1] * 3 and (k + 3 == 605 or out[k + 3] in (-1, 0, 1))


# ---------------------------------------------------------------- a slow twin for what the fixtures lack


def _bits(v, k):
    return [(v >> i) & 1 for i in range(k)]


def _expression(nr, m, length, n_ops, ids):
    """(characters, value) of an expression of ``length``, drawn pre-order from nr."""
    plus, minus, times, lpar, rpar = ids
    if length < 5:
        t = int(nr.randint(0, m))
        chars = [int(c) for c in str(t)]
        neg = length in (2, 4)
        chars = ([minus] if neg else []) + chars
        if length >= 3:
            chars = [lpar] + chars + [rpar]
        return chars, (-t) % m if neg else t % m
    a = int(nr.randint(1, length - 3))
    left, lv = _expression(nr, m, a, n_ops, ids)
    right, rv = _expression(nr, m, length - 3 - a, n_ops, ids)
    op = int(nr.randint(0, n_ops))
    return [lpar] + left + [(plus, minus, times)[op]] + right + [rpar], (lv + rv, lv - rv, lv * rv)[op] % m


def _twin(name, count, seed, length, params):
    """(inputs, targets) from the documented draw order; None where the authors' code raises."""
    nr, pr = np.random.RandomState(seed), random.Random(seed)
    if name in ("modular-arithmetic-brackets", "solve-equation"):
        m = params.get("modulus", 5)
        if name == "solve-equation" and 0 <= length < 3:
            return np.zeros((count, length), np.int64), np.zeros(count, np.int64)
        if count == 0 or length < (3 if name == "solve-equation" else 1):
            return None
        rows, ys = [], []
        for _ in range(count):
            if name == "modular-arithmetic-brackets":
                chars, v = _expression(nr, m, length, 3 if params.get("mult", True) else 2,
                                       (m, m + 1, m + 2, m + 3, m + 4))
                rows.append(chars)
                ys.append(v)
                continue
            chars, v = _expression(nr, m, length - 2, 2, (m, m + 1, None, m + 2, m + 3))
            idx = int(nr.randint(0, len(chars)))
            while chars[idx] >= m:
                idx = (idx + 1) % (length - 2)
            ys.append(chars[idx])
            rows.append(chars[:idx] + [m + 4] + chars[idx + 1:] + [m + 5] + [int(c) for c in str(v)])
        if len({len(r) for r in rows}) > 1:
            return None
        return np.array(rows, np.int64), np.array(ys, np.int64)
    if count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if length < 1:
        return None
    xs, ys = [], []
    if name == "stack-manipulation":
        for _ in range(count):
            if length == 1:
                x = [int(nr.randint(0, 2, size=(1,))[0])]
                stack = list(x)
            else:
                k = int(nr.randint(1, length))
                x = list(nr.randint(0, 2, size=k)) + list(nr.randint(2, 5, size=length - k))
                stack = x[:k]
                for a in x[k:]:
                    if a == 2:
                        stack = stack[:-1]
                    else:
                        stack.append(a - 3)
            xs.append(x)
            ys.append(stack[::-1] + [2] + [0] * (length - len(stack)))
    elif name == "compute-sqrt":
        for _ in range(count):
            v = pr.randint(1, 2**length - 1)
            o = (length + 1) // 2
            xs.append(_bits(v, length)[::-1])
            ys.append(_bits(math.isqrt(v), o)[::-1])
    else:
        mul = name == "binary-multiplication"
        out_len = length if mul else length + 1
        if length <= 2:
            for v in nr.randint(0, 2**length - 1, size=count):
                xs.append(_bits(int(v), length))
                res = [0] * (length - 1) if mul else _bits(int(v), max(1, int(v).bit_length()))
                ys.append(res + [2] + [0] * (out_len - 1 - len(res)))
        else:
            a = [int(v) for v in nr.randint(1, length - 1, size=count)]
            ns = [pr.randint(1, 2**k - 1) for k in a]
            ms = [pr.randint(1, 2**(length - 1 - k) - 1) for k in a]
            for k, p, q in zip(a, ns, ms):
                xs.append(_bits(p, k) + [2] + _bits(q, length - 1 - k))
                v = p * q if mul else p + q
                ys.append(_bits(v, v.bit_length()) + [2] + [0] * (out_len - 1 - v.bit_length()))
    return np.array(xs, np.int64), np.array(ys, np.int64)


TWIN_CASES = (
    [(name, {}) for name in NAMES]
    + [("modular-arithmetic-brackets", p) for p in ({"mult": False}, {"modulus": 2}, {"modulus": 1}, {"modulus": 10},
                                                     {"modulus": 11}, {"modulus": 13, "mult": False})]
    + [("solve-equation", p) for p in ({"modulus": 2}, {"modulus": 1}, {"modulus": 11}, {"modulus": 100})]
)


@pytest.mark.parametrize("name, params", TWIN_CASES, ids=lambda v: str(v))
def test_against_twin(name, params):
    for i, (length, count) in enumerate([(1, 4), (2, 9), (3, 5), (4, 1), (5, 6), (6, 2), (9, 3), (33, 5),
                                         (64, 2), (65, 3), (500, 4), (0, 2), (-1, 1), (7, 0), (0, 0)]):
        seed = SEEDS[i % len(SEEDS)]
        want = _twin(name, count, seed, length, params)
        if want is None:
            with pytest.raises(LongsynthError, match="raises"):
                draw(name, count, seed, length, params)
            continue
        x, y = draw(name, count, seed, length, params)
        assert x.shape == want[0].shape and y.shape == want[1].shape, (length, count)
        assert np.array_equal(x, want[0]) and np.array_equal(y, want[1]), (length, count)


def test_edge_shapes_and_raises():
    # their placeholders and empty batches, as np.argmax of their one-hot arrays gives them
    assert [a.shape for a in draw("solve-equation", 3, 0, 0, {})] == [(3, 0), (3,)]
    assert [a.shape for a in draw("solve-equation", 0, 0, 2, {})] == [(0, 2), (0,)]
    for name in ("stack-manipulation", "binary-addition", "binary-multiplication", "compute-sqrt"):
        for length in (-3, 0, 1, 40):
            assert [a.shape for a in draw(name, 0, 5, length, {})] == [(0,), (0,)]
    assert [a.shape for a in draw("binary-multiplication", 2, 0, 1, {})] == [(2, 1), (2, 1)]
    assert draw("binary-multiplication", 2, 0, 1, {})[1].tolist() == [[2], [2]]
    for name, count, length, params in [("modular-arithmetic-brackets", 0, 5, {}),
                                        ("modular-arithmetic-brackets", 2, 0, {}),
                                        ("modular-arithmetic-brackets", 2, 5, {"modulus": 0}),
                                        ("solve-equation", 0, 3, {}), ("solve-equation", 1, -1, {}),
                                        ("solve-equation", 1, 1, {"modulus": 0}),
                                        ("stack-manipulation", 1, 0, {}), ("binary-addition", 3, 0, {}),
                                        ("compute-sqrt", 1, 0, {})]:
        with pytest.raises(LongsynthError, match="raises"):
            draw(name, count, 0, length, params)
    with pytest.raises(LongsynthError, match="no authors' Python stream"):
        draw("parity-check", 1, 0, 5, {})
