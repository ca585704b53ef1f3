"""The two Mersenne Twisters the authors' Python tasks draw from, in Numba: NumPy's legacy global
``np.random`` (``RandomState``) and CPython's ``random`` module, each reproduced draw for draw.

A generator state is an int64 array of 625: the 624 words of MT19937 (each in [0, 2^32)) and, last,
the index of the next word to temper (624: twist before the next draw). Two states are kept apart,
one per library, as the authors' code keeps them.

Seeding (both use Matsumoto and Nishimura's reference MT19937, which the code below follows):
- NumPy, ``np.random.seed(s)`` with an integer s in [0, 2^32 - 1]: ``init_genrand(s)``
  (numpy/random/_mt19937.pyx, ``_legacy_seeding``: an integer seed goes to ``mt19937_seed``).
- CPython, ``random.seed(s)`` with an int s: ``init_by_array`` of the 32-bit words of |s|, least
  significant first, one word (0) for s = 0 (Modules/_randommodule.c, ``random_seed``).

Draws:
- ``np_randint(st, low, high)``: ``RandomState.randint(low, high)`` for the default int64 dtype,
  low < high, high - low <= 2^63. The legacy generator always takes the masked rejection path
  (numpy/random/_bounded_integers.pyx.in, ``_rand_int64``; distributions.c,
  ``random_bounded_uint64_fill``): with rng = high - 1 - low, nothing is drawn when rng = 0; for
  rng < 2^32 a 32-bit word is drawn, ANDed with the smallest all-ones mask >= rng, until it is
  <= rng; above, the same with 64-bit words (the first 32-bit draw is the high half). The scalar
  and the array forms (``size=k``, ``size=(1,)`` included) draw the same words in the same
  order: an array of k values is k calls, first to last; an empty size draws nothing.
- ``py_getrandbits(st, k, out)``: ``random.getrandbits(k)`` as ceil(k / 32) words, least
  significant first; each word is one 32-bit draw, the last keeping its top k mod 32 bits (all
  32 when k is a multiple of 32). k = 0 draws nothing.
- ``py_randbelow(st, n)``, ``py_randint(st, a, b)``: ``random.randint(a, b)`` =
  ``randrange(a, b + 1)`` = a + ``_randbelow_with_getrandbits(b - a + 1)``: getrandbits(k) with
  k the bit length of the width, again while >= the width (even a width of 1 draws), for widths
  below 2^63.
- ``py_randint_ones(st, k, out, start)``: ``random.randint(1, 2^k - 1)`` for any k >= 1, as k
  bits least significant first (no Python int): getrandbits(k) again while all k bits are 1,
  then plus one.
"""
import numpy as np
from numba import njit

N = 624
M = 397
MASK32 = 0xFFFFFFFF
_UPPER = 0x80000000
_LOWER = 0x7FFFFFFF
_MATRIX_A = 0x9908B0DF


def new_state():
    """An unseeded state (all zero words); seed it before drawing."""
    return np.zeros(N + 1, dtype=np.int64)


@njit(cache=True)
def init_genrand(st, s):
    """The reference ``init_genrand(s)``: mt[0] = s, mt[i] = 1812433253 (mt[i-1] ^ (mt[i-1] >> 30)) + i."""
    st[0] = s & MASK32
    for i in range(1, N):
        prev = st[i - 1]
        st[i] = (1812433253 * (prev ^ (prev >> 30)) + i) & MASK32
    st[N] = N


@njit(cache=True)
def init_by_array(st, key):
    """The reference ``init_by_array(key)`` (key: 32-bit words, at least one)."""
    init_genrand(st, 19650218)
    n_key = key.shape[0]
    i, j = 1, 0
    for _ in range(max(N, n_key)):
        prev = st[i - 1]
        st[i] = ((st[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + j) & MASK32
        i += 1
        j += 1
        if i >= N:
            st[0] = st[N - 1]
            i = 1
        if j >= n_key:
            j = 0
    for _ in range(N - 1):
        prev = st[i - 1]
        st[i] = ((st[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - i) & MASK32
        i += 1
        if i >= N:
            st[0] = st[N - 1]
            i = 1
    st[0] = _UPPER
    st[N] = N


@njit(cache=True)
def _twist(st):
    """Regenerates the 624 words in place, as the reference's three loops: words i + M (i < N - M)
    are still old when read, the wrapped ones (i + M - N) already new."""
    for i in range(N - M):
        y = (st[i] & _UPPER) | (st[i + 1] & _LOWER)
        st[i] = st[i + M] ^ (y >> 1) ^ (_MATRIX_A * (y & 1))
    for i in range(N - M, N - 1):
        y = (st[i] & _UPPER) | (st[i + 1] & _LOWER)
        st[i] = st[i + M - N] ^ (y >> 1) ^ (_MATRIX_A * (y & 1))
    y = (st[N - 1] & _UPPER) | (st[0] & _LOWER)
    st[N - 1] = st[M - 1] ^ (y >> 1) ^ (_MATRIX_A * (y & 1))
    st[N] = 0


@njit(cache=True, inline="always")
def next32(st):
    """The next tempered 32-bit word, in [0, 2^32)."""
    if st[N] >= N:
        _twist(st)
    y = st[st[N]]
    st[N] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@njit(cache=True)
def _mask_of(rng):
    """The smallest 2^j - 1 >= rng (rng >= 0)."""
    m = rng
    m |= m >> 1
    m |= m >> 2
    m |= m >> 4
    m |= m >> 8
    m |= m >> 16
    m |= m >> 32
    return m


@njit(cache=True)
def np_randint(st, low, high):
    """``RandomState.randint(low, high)`` (int64, legacy masked rejection); low < high."""
    rng = high - 1 - low
    if rng == 0:
        return low
    mask = _mask_of(rng)
    if rng <= MASK32:
        while True:
            v = next32(st) & mask
            if v <= rng:
                return low + v
    hi_mask = mask >> 32  # mask < 2^63: the high word keeps at most 31 bits, no int64 overflow
    while True:
        hi = next32(st)
        lo = next32(st)
        v = ((hi & hi_mask) << 32) | lo
        if v <= rng:
            return low + v


@njit(cache=True)
def np_randint_fill(st, low, high, out):
    """``out[:] = RandomState.randint(low, high, size=out.shape[0])``: one value after another."""
    for i in range(out.shape[0]):
        out[i] = np_randint(st, low, high)


@njit(cache=True)
def py_getrandbits(st, k, out):
    """``random.getrandbits(k)`` into out[:ceil(k / 32)], 32-bit words least significant first."""
    w = 0
    while k > 0:
        r = next32(st)
        if k < 32:
            r >>= 32 - k
        out[w] = r
        w += 1
        k -= 32


@njit(cache=True)
def _bit_length(n):
    k = 0
    while n > 0:
        n >>= 1
        k += 1
    return k


@njit(cache=True)
def py_randbelow(st, n):
    """``random._randbelow_with_getrandbits(n)`` for 1 <= n < 2^63."""
    k = _bit_length(n)
    while True:
        if k <= 32:
            r = next32(st) >> (32 - k)
        else:
            lo = next32(st)
            r = ((next32(st) >> (64 - k)) << 32) | lo
        if r < n:
            return r


@njit(cache=True)
def py_randint(st, a, b):
    """``random.randint(a, b)`` for a <= b, b - a + 1 < 2^63."""
    return a + py_randbelow(st, b - a + 1)


@njit(cache=True)
def py_randint_ones(st, k, out, start):
    """``random.randint(1, 2^k - 1)``, k >= 1, written as k bits (least significant first) at
    out[start:start + k]; returns the index of its highest 1 bit plus one (its bit length)."""
    while True:
        ones = 0
        left = k
        pos = start
        while left > 0:
            r = next32(st)
            take = 32
            if left < 32:
                r >>= 32 - left
                take = left
            for j in range(take):
                b = (r >> j) & 1
                out[pos + j] = b
                ones += b
            pos += take
            left -= take
        if ones < k:  # r < 2^k - 1: accepted
            break
    # plus one: clear the trailing 1s, set the first 0 (there is one: r is not all ones)
    i = start
    while out[i] == 1:
        out[i] = 0
        i += 1
    out[i] = 1
    top = start + k - 1
    while out[top] == 0:
        top -= 1
    return top - start + 1


def numpy_state(seed):
    """A fresh state as ``np.random.seed(seed)`` leaves NumPy's global generator (0 <= seed < 2^32)."""
    st = new_state()
    init_genrand(st, int(seed))
    return st


def python_state(seed):
    """A fresh state as ``random.seed(seed)`` leaves Python's global generator (any int seed)."""
    a = abs(int(seed))
    words = []
    while True:
        words.append(a & MASK32)
        a >>= 32
        if a == 0:
            break
    st = new_state()
    init_by_array(st, np.array(words, dtype=np.int64))
    return st
