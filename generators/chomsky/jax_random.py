"""JAX's default PRNG (threefry-2x32) with ``jax_threefry_partitionable=False``, as JAX 0.10.2
computes it, so that the authors' jitted Chomsky samplers can be replayed without JAX.

A key is two uint32 words (k0, k1), held here as an int64 array [2] (or two int64 scalars in
the kernels; every word is kept in [0, 2**32)). What each function mirrors (paths under
jax/_src/random/ of jax 0.10.2):

- ``block``: the threefry-2x32 hash of one counter pair, 20 rounds in five groups of four,
  rotations (13, 15, 26, 6) and (17, 29, 16, 24) taking turns, the key schedule
  (k0, k1, k0 ^ k1 ^ 0x1BD11BDA) injected after each group with the group number added to the
  second word (threefry2x32.py, ``_threefry2x32_lowering``).
- ``random_bits`` (kernel ``bits_fill``): n uint32 words from one key (threefry2x32.py, ``threefry_2x32`` and
  ``_threefry_random_bits_original``): the counters 0 .. n-1, padded with one 0 when n is odd,
  are cut into a first and a second half of h = ceil(n / 2); pair j is (j, h + j) (or (j, 0)
  for the padding), its first output word is word j, its second is word h + j (dropped when
  that is the padding). Only one block of counters (n < 2**32 - 1) is supported.
- ``split(key, num)``: ``random_bits(key, 2 * num)`` read as num keys of two words
  (threefry2x32.py, ``_threefry_split_original``).
- ``prng_key(seed)``: ``jax.random.PRNGKey`` with x64 off: a Python int seed is taken as int64
  (so -2**63 <= seed < 2**63, as JAX requires) and then as int32, so the key is
  (0, seed mod 2**32) (prng.py ``random_seed``, threefry2x32.py ``_threefry_seed``).
- ``randint(key, shape, minval, maxval)``: int32 values (core.py ``randint``/``_randint``): the
  key is split in two, each half gives ``random_bits`` of the flat size (the higher and the lower
  words); span = (maxval - minval) mod 2**32, or 1 when maxval <= minval; the value is
  minval + ((hi % span) * m + lo % span) % span with m = (2**16 % span)**2 % span, every step
  in uint32 arithmetic, wrapping (so m = 0 when span > 2**16: the square 2**32 wraps to 0),
  the sum taken back to int32 with wrap-around.
  A Python int bound must be an int32 value (with x64 off JAX refuses others); a NumPy integer
  bound wraps to int32 as JAX converts it.
- ``choice(key, values, shape)``: with replacement and no probabilities (core.py ``choice``):
  no draws gives zeros; otherwise ``randint(key, shape, 0, len(values))`` indexes ``values``.
"""
import math
import operator

import numpy as np
from numba import njit

M32 = 0xFFFFFFFF
PARITY = 0x1BD11BDA  # the threefry key-schedule constant
CHUNK = 2048  # pairs of higher words randint holds at a time


@njit(cache=True, inline="always")
def _rotl(x, d):
    """x rotated left by d within 32 bits."""
    return ((x << d) | (x >> (32 - d))) & M32


@njit(cache=True, inline="always")
def _four(x0, x1, r0, r1, r2, r3):
    """Four threefry rounds with the rotations r0 .. r3."""
    x0 = (x0 + x1) & M32
    x1 = _rotl(x1, r0) ^ x0
    x0 = (x0 + x1) & M32
    x1 = _rotl(x1, r1) ^ x0
    x0 = (x0 + x1) & M32
    x1 = _rotl(x1, r2) ^ x0
    x0 = (x0 + x1) & M32
    x1 = _rotl(x1, r3) ^ x0
    return x0, x1


@njit(cache=True, inline="always")
def block(k0, k1, x0, x1):
    """threefry2x32 of the word pair (x0, x1) under the key (k0, k1): two words."""
    k2 = k0 ^ k1 ^ PARITY
    x0 = (x0 + k0) & M32
    x1 = (x1 + k1) & M32
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    x0 = (x0 + k1) & M32
    x1 = (x1 + k2 + 1) & M32
    x0, x1 = _four(x0, x1, 17, 29, 16, 24)
    x0 = (x0 + k2) & M32
    x1 = (x1 + k0 + 2) & M32
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    x0 = (x0 + k0) & M32
    x1 = (x1 + k1 + 3) & M32
    x0, x1 = _four(x0, x1, 17, 29, 16, 24)
    x0 = (x0 + k1) & M32
    x1 = (x1 + k2 + 4) & M32
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    x0 = (x0 + k2) & M32
    x1 = (x1 + k0 + 5) & M32
    return x0, x1


@njit(cache=True)
def block_fill(k0, k1, x0, x1, y0, y1):
    """y0[i], y1[i] = block(k0, k1, x0[i], x1[i]) for every i."""
    for i in range(x0.shape[0]):
        y0[i], y1[i] = block(k0, k1, x0[i], x1[i])


@njit(cache=True)
def _halves(k0, k1, first, second, start, h):
    """first[j], second[j] = block(k0, k1, start + j, start + j + h) for j < len(second): a loop
    LLVM vectorizes."""
    for j in range(second.shape[0]):
        y0, y1 = block(k0, k1, start + j, start + j + h)
        first[j] = y0
        second[j] = y1


@njit(cache=True)
def bits_fill(k0, k1, out):
    """out[:] = the out.shape[0] words of key (k0, k1), in JAX's non-partitionable layout."""
    n = out.shape[0]
    h = (n + 1) // 2
    _halves(k0, k1, out[:h], out[h:], 0, h)
    if n % 2:  # the last pair is (h - 1, the padding 0); its second word is dropped
        out[h - 1] = block(k0, k1, h - 1, 0)[0]


@njit(cache=True, inline="always")
def _mulmod32(a, b):
    """(a * b) mod 2**32 for a, b in [0, 2**32), without leaving int64."""
    return (a * (b & 0xFFFF) + (((a * (b >> 16)) & M32) << 16)) & M32


@njit(cache=True, inline="always")
def _mod(a, d, inv):
    """a mod d for 0 <= a < 2**33 and 1 <= d < 2**32, inv = 1.0 / d: a float quotient, off by at most
    one (its relative error is below 2**-51), then corrected."""
    r = a - np.int64(a * inv) * d
    if r < 0:
        r += d
    elif r >= d:
        r -= d
    return r


@njit(cache=True, inline="always")
def _wrap32(v):
    """v mod 2**32 read as int32."""
    v &= M32
    return v - (1 << 32) if v >= (1 << 31) else v


@njit(cache=True, inline="always")
def _combine(hi, lo, span, inv, mult):
    """((hi % span) * mult + lo % span) % span, the sum wrapping in uint32 (core.py _randint)."""
    return _mod((_mulmod32(_mod(hi, span, inv), mult) + _mod(lo, span, inv)) & M32, span, inv)


@njit(cache=True)
def split_key(k0, k1, i, num):
    """Key i (two words) of split((k0, k1), num)."""
    # key i is words 2i and 2i+1 of bits(key, 2 num); with h = num, word w < num is the first
    # output of pair w, word num + w the second output of pair w
    w = 2 * i
    a = block(k0, k1, w, w + num) if w < num else block(k0, k1, w - num, w)
    w += 1
    b = block(k0, k1, w, w + num) if w < num else block(k0, k1, w - num, w)
    return a[0] if 2 * i < num else a[1], b[0] if 2 * i + 1 < num else b[1]


@njit(cache=True)
def randint_fill(k0, k1, minval, maxval, out):
    """out[:] (int64, flat) = randint((k0, k1), out.shape, minval, maxval) as JAX gives it (int32)."""
    n = out.shape[0]
    span = (maxval - minval) & M32
    if maxval <= minval:
        span = 1
    inv = 1.0 / span
    # JAX squares in uint32 too: for span > 2**16 the square 2**32 wraps to 0, the high words drop out
    mult = ((65536 % span) * (65536 % span) & M32) % span
    ha, hb = split_key(k0, k1, 0, 2)
    la, lb = split_key(k0, k1, 1, 2)
    bits_fill(la, lb, out)  # the lower words, turned into values in place
    if span & (span - 1) == 0:  # a power of two: mult is 0 and the remainder a mask
        for i in range(n):
            out[i] = _wrap32(minval + (out[i] & (span - 1)))
    elif mult == 0:
        for i in range(n):
            out[i] = _wrap32(minval + _mod(out[i], span, inv))
    else:  # the higher words, CHUNK pairs at a time (a small buffer, no second array of n)
        h = (n + 1) // 2
        buf = np.empty(2 * CHUNK, dtype=np.int64)
        for j0 in range(0, n // 2, CHUNK):
            c = min(CHUNK, n // 2 - j0)
            _halves(ha, hb, buf[:c], buf[CHUNK:CHUNK + c], j0, h)
            for j in range(c):
                out[j0 + j] = _wrap32(minval + _combine(buf[j], out[j0 + j], span, inv, mult))
                out[h + j0 + j] = _wrap32(minval + _combine(buf[CHUNK + j], out[h + j0 + j], span, inv, mult))
        if n % 2:
            out[h - 1] = _wrap32(minval + _combine(block(ha, hb, h - 1, 0)[0], out[h - 1], span, inv, mult))


def _key(key):
    """The two words of a key, checked."""
    k = np.asarray(key)
    if k.shape != (2,) or not np.issubdtype(k.dtype, np.integer) or k.min(initial=0) < 0 or k.max(initial=0) > M32:
        raise ValueError(f"a key is two uint32 words, got {key!r}")
    return int(k[0]), int(k[1])


def _shape(shape):
    """(shape as a tuple, its size), checked."""
    shape = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in {shape}")
    size = math.prod(shape)
    if size >= M32:
        raise ValueError(f"{size} values need more than one block of counters (not supported)")
    return shape, size


def _int32(v):
    """A bound as JAX takes it with x64 off: a NumPy integer wraps to int32, a Python int must fit."""
    i = operator.index(v)
    if isinstance(v, np.integer):
        return ((i + (1 << 31)) & M32) - (1 << 31)
    if not -(1 << 31) <= i < (1 << 31):
        raise ValueError(f"minval and maxval must be int32 values, got {v} (JAX overflows)")
    return i


def prng_key(seed):
    """jax.random.PRNGKey(seed) with x64 off: int64 [2] = (0, seed mod 2**32)."""
    s = operator.index(seed)
    if not isinstance(seed, np.integer) and not -(1 << 63) <= s < (1 << 63):
        raise ValueError(f"seed {seed} does not fit int64 (JAX refuses it)")
    return np.array([0, s & M32], dtype=np.int64)


def threefry2x32(key, x0, x1):
    """The hash of the word pairs (x0[i], x1[i]) under key: two int64 arrays."""
    k0, k1 = _key(key)
    x0 = np.ascontiguousarray(x0, dtype=np.int64).reshape(-1)
    x1 = np.ascontiguousarray(x1, dtype=np.int64).reshape(-1)
    if x0.shape != x1.shape or min(x0.min(initial=0), x1.min(initial=0)) < 0 \
            or max(x0.max(initial=0), x1.max(initial=0)) > M32:
        raise ValueError("x0 and x1 must be uint32 words of one size")
    y0, y1 = np.empty_like(x0), np.empty_like(x1)
    block_fill(k0, k1, x0, x1, y0, y1)
    return y0, y1


def random_bits(key, shape):
    """jax.random.bits(key, shape, uint32), as int64 words."""
    k0, k1 = _key(key)
    shape, size = _shape(shape)
    out = np.empty(size, dtype=np.int64)
    bits_fill(k0, k1, out)
    return out.reshape(shape)


def split(key, num=2):
    """jax.random.split(key, num): int64 [num, 2]."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"num must be >= 0, got {num}")
    return random_bits(key, (2 * num,)).reshape(num, 2)


def randint(key, shape, minval, maxval):
    """jax.random.randint(key, shape, minval, maxval) with x64 off (int32 values), as int64."""
    k0, k1 = _key(key)
    shape, size = _shape(shape)
    lo, hi = _int32(minval), _int32(maxval)
    out = np.empty(size, dtype=np.int64)
    randint_fill(k0, k1, lo, hi, out)
    return out.reshape(shape)


def choice(key, values, shape):
    """jax.random.choice(key, values, shape) with replacement, values 1-D: int64 array."""
    values = np.asarray(values, dtype=np.int64).reshape(-1)
    shape, size = _shape(shape)
    if size == 0:
        return np.zeros(shape, dtype=np.int64)
    if values.shape[0] == 0:
        raise ValueError("choice from no values")
    return values[randint(key, shape, 0, values.shape[0])]
