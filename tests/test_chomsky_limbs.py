"""The limb arithmetic of the Chomsky arithmetic tasks (generators/chomsky/limbs.py and
cs_arith.isqrt_bits) against Python's integers: products and integer square roots of random
operands of 1..2000 bits and of the edge cases (0, 1, 2^k - 1, 2^k, perfect squares and their
neighbours); then binary-multiplication and compute-sqrt rows of long inputs decoded and checked
against Python's ``*`` and ``math.isqrt``, serial and parallel fillers alike."""
import math
import random

import numpy as np
import pytest

import longsynth
from longsynth.generators.chomsky import cs_arith, limbs
from longsynth.rng import split_code

EDGE_BITS = [1, 2, 3, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 191, 192, 193, 255, 256, 257, 1023,
             1024, 1025, 1999, 2000]


def to_bits(v, k, dtype=np.int64):
    """v as k bits, least significant first."""
    return np.array([(v >> i) & 1 for i in range(k)], dtype=dtype)


def from_bits(b):
    return int("".join(str(int(t)) for t in b[::-1]), 2) if len(b) else 0


def sqrt_cases():
    """(value, k): numbers to root, written in k >= bit length bits."""
    rng = random.Random(5)
    out = [(0, 1), (0, 7), (1, 1), (1, 64), (2, 2), (3, 2), (4, 3), (2**64 - 1, 64), (2**64, 65)]
    for k in EDGE_BITS:
        out += [((1 << k) - 1, k), (1 << (k - 1), k), ((1 << (k - 1)) + 1, max(k, 2))]
        h = k // 2
        for s in ((1 << h) - 1, 1 << h, (1 << h) + 1, rng.getrandbits(h) | 1):
            for v in (s * s - 1, s * s, s * s + 1, s * s + 2 * s, (s + 1) ** 2 - 1):
                if 0 <= v:
                    out.append((v, max(k, v.bit_length(), 1)))
    for _ in range(400):
        k = rng.randint(1, 2000)
        v = rng.getrandbits(k)
        out.append((v, k + rng.choice([0, 0, 1, 37])))  # some with leading zero bits
    assert all(v.bit_length() <= k for v, k in out)
    return out


def test_isqrt_bits_matches_math_isqrt():
    """cs_arith.isqrt_bits (the authors' stream's entry point) on o = ceil(k / 2) and more."""
    for v, k in sqrt_cases():
        o = (k + 1) // 2
        out = np.full(o + 3, 9, dtype=np.int64)
        cs_arith.isqrt_bits(to_bits(v, k), k, out, o + 3)
        assert from_bits(out) == math.isqrt(v), (v, k)


def test_isqrt_limbs_leave_the_remainder():
    """isqrt_bits_limbs on int8 bits at an offset: the root, and W - R^2 left in w, 0 <= it <= 2 R."""
    for v, k in sqrt_cases()[::3]:
        bits = np.concatenate([np.ones(5, np.int8), to_bits(v, k, np.int8), np.ones(3, np.int8)])
        w = np.full(limbs.isqrt_work(k), 0xDEAD, dtype=np.uint64)
        m, skip = limbs.isqrt_bits_limbs(bits, 5, k, w)
        root = math.isqrt(v)
        assert m == (v.bit_length() + 63) // 64
        out = np.zeros(k // 2 + 2, dtype=np.int64)
        limbs.unpack(w, 2 * m, m, skip, out, 0, out.shape[0])
        assert from_bits(out) == root, (v, k)
        if m:
            scaled = v << (2 * skip)
            big_root = sum(int(w[2 * m + i]) << (32 * i) for i in range(m))
            rem = sum(int(w[i]) << (32 * i) for i in range(2 * m))
            assert big_root == math.isqrt(scaled) and big_root >> skip == root
            assert rem == scaled - big_root * big_root and 0 <= rem <= 2 * big_root
            assert (w[:3 * m] < 1 << 32).all()  # limbs stay 32-bit


@pytest.mark.parametrize("v", [0, 1, 2, 3, 4, 15, 16, 17, 2**32 - 1, 2**32, (2**32 - 1)**2 - 1, (2**32 - 1)**2,
                               (2**32 - 1)**2 + 1, 2**62, 2**63, 2**64 - 2, 2**64 - 1, 0x123456789ABCDEF0])
def test_isqrt_u64(v):
    assert int(limbs.isqrt_u64(np.uint64(v))) == math.isqrt(v)


def mul_cases():
    """(N, a, M, c): operands and their bit counts (N, M >= 1, a + c <= 2001)."""
    rng = random.Random(9)
    out = [(1, 1, 1, 1), (1, 1, 1, 40), (1, 5, 3, 2)]
    for k in EDGE_BITS[:-2]:
        j = max(1, 2000 - k) if k > 1000 else k
        out += [((1 << k) - 1, k, (1 << j) - 1, j), (1 << (k - 1), k, 1 << (j - 1), j),
                ((1 << k) - 1, k, 1, j), (1, 1, (1 << j) - 1, j)]
    for _ in range(400):
        a = rng.randint(1, 1999)
        c = rng.randint(1, 2000 - a)
        out.append((rng.randint(1, 2**a - 1), a, rng.randint(1, 2**c - 1), c))
    return out


def test_mul_bits_matches_python():
    for x, a, y, c in mul_cases():
        out = np.full(a + c, 7, dtype=np.int64)
        r = limbs.mul_bits(to_bits(x, a), a, to_bits(y, c), c, out)
        assert r == (x * y).bit_length() and from_bits(out[:r]) == x * y, (a, c)


def test_mul_limbs_in_one_array():
    """pack both operands into one work array, mul, bit_length, unpack: limbs stay 32-bit."""
    for x, a, y, c in mul_cases()[::4]:
        nx, ny = (a + 31) // 32, (c + 31) // 32
        w = np.full(limbs.mul_work(a + c), 0xBEEF, dtype=np.uint64)
        assert limbs.pack(to_bits(x, a, np.int8), 0, a, 0, w, 0) == nx
        assert limbs.pack(to_bits(y, c, np.int8), 0, c, 0, w, nx) == ny
        limbs.mul(w, nx, ny)
        z = w[nx + ny:2 * (nx + ny)]
        assert (z < 1 << 32).all() and sum(int(t) << (32 * i) for i, t in enumerate(z)) == x * y
        assert limbs.bit_length(w, nx + ny, nx + ny) == (x * y).bit_length()


@pytest.mark.parametrize("shift", [0, 1, 31, 32, 33, 70])
def test_pack_unpack_round_trip(shift):
    rng = random.Random(shift)
    for k in (1, 31, 32, 33, 64, 65, 500):
        v = rng.getrandbits(k)
        w = np.full((k + shift + 31) // 32 + 1, 0xFF, dtype=np.uint64)
        nw = limbs.pack(to_bits(v, k, np.int8), 0, k, shift, w, 1)
        assert nw == (k + shift + 31) // 32 and int(w[0]) == 0xFF
        assert sum(int(w[1 + i]) << (32 * i) for i in range(nw)) == v << shift
        out = np.zeros(k + 40, dtype=np.int16)
        limbs.unpack(w, 1, nw, shift, out, 0, k + 40)  # 0 past the top limb
        assert from_bits(out) == v


def _rows_and_fill(task, n, count):
    """The rows of the serial filler; the parallel filler's must be the same bytes."""
    ser = longsynth.batch(f"chomsky-{task}", 3, count, seed=11, split="test", length=n)
    par = {k: np.empty_like(v) for k, v in ser.items()}
    fill = cs_arith.binary_multiplication_fill if task == "binary-multiplication" else cs_arith.compute_sqrt_fill
    rows = cs_arith.binary_multiplication_rows if task == "binary-multiplication" else cs_arith.compute_sqrt_rows
    code = split_code("test")
    fill(11, code, 3, n, n, False, par["inputs"], par["targets"])
    for k in ser:
        assert (ser[k] == par[k]).all()
    rows(11, code, 3, n, n, False, par["inputs"], par["targets"])
    for k in ser:
        assert (ser[k] == par[k]).all()
    return ser["inputs"].astype(np.int64), ser["targets"].astype(np.int64)


@pytest.mark.parametrize("n", [3, 64, 65, 129, 500, 2000])
def test_long_products(n):
    inp, tgt = _rows_and_fill("binary-multiplication", n, 24)
    for x, y in zip(inp, tgt):
        a = int(np.flatnonzero(x[:n] == 2)[0])
        p = from_bits(x[:a]) * from_bits(x[a + 1:n])
        out = y[n:2 * n]
        r = int(np.flatnonzero(out == 2)[0])
        assert r == p.bit_length() and from_bits(out[:r]) == p


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 128, 129, 500, 2001])
def test_long_roots(n):
    inp, tgt = _rows_and_fill("compute-sqrt", n, 24)
    o = (n + 1) // 2
    for x, y in zip(inp, tgt):
        v = from_bits(x[:n][::-1])
        assert v >= 1 and from_bits(y[n:n + o][::-1]) == math.isqrt(v)
