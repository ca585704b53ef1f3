"""Multi-limb binary arithmetic for the Chomsky arithmetic tasks (cs_arith.py): the product of
two numbers and the integer square root, on numbers of any length.

A number is a little-endian array of 32-bit limbs, each held in a uint64 word: limb i carries
bits 32 i .. 32 i + 31. A limb product plus two limbs fits one word, (2^32 - 1)^2 + 2 (2^32 - 1)
= 2^64 - 1, so no 128-bit arithmetic is needed. The tasks keep their numbers as arrays of bits
(least significant first); ``pack`` and ``unpack`` convert, O(k) for k bits.

Routines (none validates or allocates, but mul_bits; the caller sizes the work arrays with
``mul_work`` and ``isqrt_work``). Numbers are addressed by (array, offset), not by slices: a
view costs about as much as a small product.
    pack(bits, start, k, shift, w, wo)    w[wo:] = bits[start:start + k] times 2^shift
    unpack(w, wo, nw, skip, out, start, k)  out[start + i] = bit skip + i of w[wo:wo + nw]
    bit_length(w, wo, nw)                 the bit length of w[wo:wo + nw]
    mul(w, nx, ny)                        w[nx + ny:] = w[0:nx] w[nx:nx + ny], schoolbook
    isqrt_u64(v)                          floor(sqrt(v)) of one uint64 word
    isqrt(w, m)                           w[2m:3m] = floor(sqrt(w[0:2m])), w normalised (below)
    isqrt_bits_limbs(bits, start, k, w)   the root of a bit string: pack, normalise, isqrt
    mul_bits(x, a, y, c, out)             the product of two bit strings, as bits

Square root (``isqrt``): long-hand, in base B = 2^32, one root limb a step, like schoolbook
division. w (2m limbs) is normalised: its top two limbs, read as one 64-bit number, are
>= 2^62, so the root's top limb is >= 2^31. Step 0: R = isqrt_u64(top pair), Rem = pair - R^2.
Step j = 1..m-1: bring down the next pair, Rem' = Rem B^2 + pair; the next limb d is the
largest with (2 R B + d) d <= Rem' (it is < B); Rem = Rem' - (2 R B + d) d, R = R B + d. The
invariant 0 <= Rem <= 2 R keeps Rem in j + 1 limbs, so it lives in place in the top of w.
d is estimated in floating point as Rem' / (2 R B) from the top three limbs of Rem' and the
top two of R (R >= 2^31 B^(j-1) bounds the neglected d^2 by 2 R B, so the estimate is at most
one too large, seldom one too small), then corrected exactly, so the result never depends on
it: lowered while (2 R B + d) d > Rem', raised while Rem' - (2 R B + d) d >= 2 R B + 2 d + 1.
Cost: step j does O(j) limb operations (one limb-times-number product, a compare, a
subtraction), so a root of m limbs costs about 3 m^2 / 2 limb operations: m = 8 at 500 bits
(about 100 limb operations), m = 128 at 8192 bits. Normalising X into w multiplies it by 4^s
(an even shift 2s); then floor(isqrt(4^s X) / 2^s) = isqrt(X), read by skipping s bits of r.
"""
import math

import numpy as np
from numba import njit

MASK = np.uint64(0xFFFFFFFF)
_U1 = np.uint64(1)
_U31 = np.uint64(31)
_U32 = np.uint64(32)
_B = 4294967296.0  # 2^32 as a float


@njit(cache=True)
def mul_work(k):
    """uint64 words of scratch the product of two operands of k bits together needs."""
    return 2 * ((k + 31) // 32 + 2)


@njit(cache=True)
def isqrt_work(k):
    """uint64 words of scratch the square root of a number of k bits needs (``isqrt_bits_limbs``)."""
    m = (k + 63) // 64
    return 2 * m + m + (m + 3)


@njit(cache=True, inline="always")
def pack(bits, start, k, shift, w, wo):
    """w[wo:wo + nw] = the k bits bits[start:start + k] (least significant first) times
    2^shift, as 32-bit limbs, nw = ceil((k + shift) / 32); returns nw."""
    nw = (k + shift + 31) // 32
    for i in range(nw):
        w[wo + i] = 0
    word = np.uint64(0)
    pos = shift
    for i in range(k):
        word |= np.uint64(bits[start + i]) << np.uint64(pos & 31)
        pos += 1
        if (pos & 31) == 0:
            w[wo + (pos >> 5) - 1] = word
            word = np.uint64(0)
    if pos & 31:
        w[wo + (pos >> 5)] = word
    return nw


@njit(cache=True, inline="always")
def unpack(w, wo, nw, skip, out, start, k):
    """out[start + i] = bit skip + i of the nw limbs w[wo:wo + nw], for i < k (0 past the top)."""
    for i in range(k):
        p = skip + i
        li = p >> 5
        out[start + i] = (w[wo + li] >> np.uint64(p & 31)) & _U1 if li < nw else np.uint64(0)


@njit(cache=True, inline="always")
def bit_length(w, wo, nw):
    """The number of bits of the nw limbs w[wo:wo + nw] up to the highest 1 (0 for zero)."""
    i = nw - 1
    while i >= 0 and w[wo + i] == 0:
        i -= 1
    if i < 0:
        return 0
    v, b = w[wo + i], 0
    while v:
        v >>= _U1
        b += 1
    return 32 * i + b


@njit(cache=True, inline="always")
def mul(w, nx, ny):
    """Z = X Y in one work array: X = w[0:nx], Y = w[nx:nx + ny], Z = w[nx + ny:2 (nx + ny)].
    Schoolbook: one pass over Y per limb of X, nx ny limb products."""
    z = nx + ny
    for i in range(nx + ny):
        w[z + i] = 0
    for i in range(nx):
        xi = w[i]
        if xi == 0:
            continue
        carry = np.uint64(0)
        for j in range(ny):
            t = xi * w[nx + j] + w[z + i + j] + carry  # <= (2^32 - 1)^2 + 2 (2^32 - 1) = 2^64 - 1
            w[z + i + j] = t & MASK
            carry = t >> _U32
        w[z + i + ny] = carry


@njit(cache=True)
def isqrt_u64(v):
    """floor(sqrt(v)) of a uint64 v: the float root, corrected to the exact one."""
    d = np.uint64(min(math.sqrt(np.float64(v)), 4294967295.0))
    while d * d > v:
        d -= _U1
    while d < MASK and (d + _U1) * (d + _U1) <= v:
        d += _U1
    return d


@njit(cache=True)
def _twice_root_limb(w, lo, j, i):
    """Limb i of 2 R, R = w[lo:lo + j] (i <= j)."""
    cur = w[lo + i] if i < j else np.uint64(0)
    prev = w[lo + i - 1] if i >= 1 else np.uint64(0)
    return ((cur << _U1) & MASK) | (prev >> _U31)


@njit(cache=True)
def _trial(w, lo, j, d, t):
    """w[t:t + j + 3] = (2 R B + d) d, R = w[lo:lo + j]."""
    carry = d * d
    w[t] = carry & MASK
    carry >>= _U32
    for i in range(j + 1):
        p = _twice_root_limb(w, lo, j, i) * d + carry
        w[t + i + 1] = p & MASK
        carry = p >> _U32
    w[t + j + 2] = carry


@njit(cache=True)
def _step_up(w, lo, j, d, t):
    """w[t:t + j + 3] = 2 R B + 2 d + 1, the growth of (2 R B + d) d when d grows by one."""
    low = d + d + _U1
    w[t] = low & MASK
    w[t + 1] = _twice_root_limb(w, lo, j, 0) + (low >> _U32)  # limb 0 of 2 R is even: no carry out
    for i in range(1, j + 1):
        w[t + i + 1] = _twice_root_limb(w, lo, j, i)
    w[t + j + 2] = 0


@njit(cache=True)
def _exceeds(w, t, base, k):
    """w[t:t + k] > w[base:base + k]."""
    for i in range(k - 1, -1, -1):
        if w[t + i] != w[base + i]:
            return w[t + i] > w[base + i]
    return False


@njit(cache=True)
def _subtract(w, base, t, k):
    """w[base:base + k] -= w[t:t + k] (the result is >= 0)."""
    borrow = np.uint64(0)
    for i in range(k):
        a, b = w[base + i], w[t + i] + borrow
        borrow = np.uint64(1) if b > a else np.uint64(0)
        w[base + i] = (a + (borrow << _U32) - b) & MASK


@njit(cache=True)
def isqrt(w, m):
    """In one work array of isqrt_work words: the root R = floor(sqrt(W)) of W = w[0:2m],
    normalised (w[2m - 1] >= 2^30), goes to w[2m:3m]; w[0:2m] is left holding W - R^2;
    w[3m:4m + 3] is scratch. Long-hand in base 2^32 (module docstring)."""
    r, t = 2 * m, 3 * m
    top = (w[2 * m - 1] << _U32) | w[2 * m - 2]
    d = isqrt_u64(top)
    w[r + m - 1] = d
    rem = top - d * d
    w[2 * m - 1], w[2 * m - 2] = rem >> _U32, rem & MASK
    for j in range(1, m):
        base, lo = 2 * m - 2 - 2 * j, r + m - j  # Rem' = w[base:base + j + 3]; R = w[lo:r + m]
        num = (np.float64(w[base + j + 2]) * _B + np.float64(w[base + j + 1])) * _B + np.float64(w[base + j])
        den = np.float64(w[r + m - 1])
        if j >= 2:
            den += np.float64(w[r + m - 2]) / _B
        q = np.floor(num / (2.0 * den))
        d = MASK if q >= 4294967295.0 else np.uint64(max(q, 0.0))
        _trial(w, lo, j, d, t)
        while _exceeds(w, t, base, j + 3):
            d -= _U1
            _trial(w, lo, j, d, t)
        _subtract(w, base, t, j + 3)
        while d < MASK:
            _step_up(w, lo, j, d, t)
            if _exceeds(w, t, base, j + 3):
                break
            _subtract(w, base, t, j + 3)
            d += _U1
        w[lo - 1] = d


@njit(cache=True)
def isqrt_bits_limbs(bits, start, k, w):
    """floor(sqrt(X)), X = bits[start:start + k] (least significant first), computed in the work
    array w (``isqrt_work(k)`` words). Returns (m, skip): bit i of the root is bit skip + i of
    the m limbs w[2m:3m], for ``unpack(w, 2 * m, m, skip, ...)``; X = 0 gives m = 0."""
    nb = k
    while nb > 0 and bits[start + nb - 1] == 0:
        nb -= 1
    m = (nb + 63) // 64
    shift = (64 * m - nb) & ~1  # even: X 4^(shift / 2) has 64 m - 1 or 64 m bits
    if m > 0:
        pack(bits, start, nb, shift, w, 0)
        isqrt(w, m)
    return m, shift // 2


@njit(cache=True)
def mul_bits(x, a, y, c, out):
    """out[:r] = x[:a] y[:c] (bits, least significant first, a, c >= 1); returns r, the
    product's bit length; out needs a + c entries. Allocates its own scratch."""
    nx, ny = (a + 31) // 32, (c + 31) // 32
    w = np.empty(2 * (nx + ny), dtype=np.uint64)
    pack(x, 0, a, 0, w, 0)
    pack(y, 0, c, 0, w, nx)
    mul(w, nx, ny)
    r = bit_length(w, nx + ny, nx + ny)
    unpack(w, nx + ny, nx + ny, 0, out, 0, r)
    return r
