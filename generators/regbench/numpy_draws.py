"""NumPy's ``default_rng`` in Numba, draw for draw, for the draws berlino/seq_icl's RegBench makes.

A state is a uint64 array of 6: the 128-bit PCG64 state (high, low word), its 128-bit increment (high,
low) and the 32-bit buffer NumPy's PCG64 keeps (a flag, the word). Written from NumPy's behaviour
(numpy/random: bit_generator.pyx ``SeedSequence``, src/pcg64/pcg64.h, src/distributions/distributions.c,
_generator.pyx), checked against NumPy itself in tests/test_regbench_authors.py.

- ``seed(entropy_words, st)``: ``default_rng(s)`` for an int s >= 0, given as its 32-bit words, least
  significant first (one word 0 for s = 0): SeedSequence's pool of 4 words (``mix_entropy``), 4 uint64
  words out of it (``generate_state``), the first two the PCG64 state, the last two its stream; set as
  ``pcg_setseq_128_srandom_r`` does.
- ``next32(st)``: NumPy's ``next_uint32`` of a PCG64: the low half of a 64-bit output, its high half
  kept for the next call. Every draw below goes through it, so the halves interleave as NumPy's do.
- ``integers(st, low, high)``: ``Generator.integers(low, high)`` (int64, high exclusive) for
  high - low <= 2^32: nothing drawn for a width of 1, one word for a width of 2^32, else Lemire's
  multiply-and-reject on 32-bit words. ``choice(seq)`` of a sequence of n is ``integers(0, n)``.
- ``choice_distinct(st, n, k, out)``: ``Generator.choice(n, size=k, replace=False)`` for n <= 10,000:
  Floyd's algorithm (j from n - k to n - 1 draws ``integers(0, j + 1)``; a value already taken is
  replaced by j), then the k picks shuffled (``integers`` again, from the last position down).
- ``shuffle_list(st, order)``: ``Generator.shuffle`` of a Python list: from the last position down,
  position i swaps with a 32-bit word masked to i's bits, redrawn while above i.
"""
import numpy as np
from numba import njit

M32 = np.uint64(0xFFFFFFFF)
_MULT_HI = np.uint64(2549297995355413924)
_MULT_LO = np.uint64(4865540595714422341)
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_U1, _U16, _U32, _U58, _U63, _U64 = (np.uint64(v) for v in (1, 16, 32, 58, 63, 64))


def new_state():
    """An unseeded state; ``seed`` it before drawing."""
    return np.zeros(6, dtype=np.uint64)


def entropy_words(s):
    """The 32-bit words of an int s >= 0, least significant first, as SeedSequence reads an int."""
    words = []
    while True:
        words.append(s & 0xFFFFFFFF)
        s >>= 32
        if not s:
            return np.array(words, dtype=np.uint64)


@njit(cache=True)
def _mul64(a, b):
    """(high, low) words of the 128-bit product of two uint64."""
    a0, a1, b0, b1 = a & M32, a >> _U32, b & M32, b >> _U32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _U32) + (p01 & M32) + (p10 & M32)
    return p11 + (p01 >> _U32) + (p10 >> _U32) + (mid >> _U32), (p00 & M32) | (mid << _U32)


@njit(cache=True)
def _step(st):
    """state <- state * multiplier + increment (mod 2^128)."""
    hi, lo = _mul64(st[1], _MULT_LO)
    hi = hi + st[0] * _MULT_LO + st[1] * _MULT_HI
    lo2 = lo + st[3]
    st[0] = hi + st[2] + (_U1 if lo2 < lo else np.uint64(0))
    st[1] = lo2


@njit(cache=True)
def next64(st):
    """PCG64's output after a step: the XOR of the state's halves rotated right by its top 6 bits."""
    _step(st)
    x = st[0] ^ st[1]
    rot = st[0] >> _U58
    return (x >> rot) | (x << ((_U64 - rot) & _U63))


@njit(cache=True)
def next32(st):
    if st[4]:
        st[4] = 0
        return st[5]
    x = next64(st)
    st[4] = 1
    st[5] = x >> _U32
    return x & M32


@njit(cache=True)
def _hashmix(value, const):
    value = value ^ const[0]
    const[0] = (const[0] * _MULT_A) & M32
    value = (value * const[0]) & M32
    return value ^ (value >> _U16)


@njit(cache=True)
def _mix(x, y):
    r = (_MIX_L * x - _MIX_R * y) & M32
    return r ^ (r >> _U16)


@njit(cache=True)
def seed(words, st):
    pool = np.zeros(4, dtype=np.uint64)
    const = np.full(1, _INIT_A, dtype=np.uint64)
    for i in range(4):
        pool[i] = _hashmix(words[i] if i < words.shape[0] else np.uint64(0), const)
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = _mix(pool[i_dst], _hashmix(pool[i_src], const))
    for i_src in range(4, words.shape[0]):
        for i_dst in range(4):
            pool[i_dst] = _mix(pool[i_dst], _hashmix(words[i_src], const))
    out = np.zeros(8, dtype=np.uint64)
    h = _INIT_B
    for i in range(8):
        v = pool[i % 4] ^ h
        h = (h * _MULT_B) & M32
        v = (v * h) & M32
        out[i] = v ^ (v >> _U16)
    s_hi, s_lo = out[0] | (out[1] << _U32), out[2] | (out[3] << _U32)
    i_hi, i_lo = out[4] | (out[5] << _U32), out[6] | (out[7] << _U32)
    st[0], st[1] = np.uint64(0), np.uint64(0)
    st[2] = (i_hi << _U1) | (i_lo >> _U63)
    st[3] = (i_lo << _U1) | _U1
    _step(st)
    lo = st[1] + s_lo
    st[0] = st[0] + s_hi + (_U1 if lo < st[1] else np.uint64(0))
    st[1] = lo
    _step(st)
    st[4], st[5] = np.uint64(0), np.uint64(0)


@njit(cache=True)
def _bounded(st, rng):
    """A value in [0, rng] (rng < 2^32), as NumPy's bounded 32-bit draws make it."""
    if rng == 0:
        return np.int64(0)
    if rng == M32:
        return np.int64(next32(st))
    excl = rng + _U1
    m = next32(st) * excl
    left = m & M32
    if left < excl:
        threshold = (M32 - rng) % excl
        while left < threshold:
            m = next32(st) * excl
            left = m & M32
    return np.int64(m >> _U32)


@njit(cache=True)
def integers(st, low, high):
    return low + _bounded(st, np.uint64(high - 1 - low))


@njit(cache=True)
def choice_distinct(st, n, k, out):
    mask = np.uint64(int(1.2 * k))
    for sh in (1, 2, 4, 8, 16, 32):
        mask |= mask >> np.uint64(sh)
    table = np.full(int(mask) + 1, -1, dtype=np.int64)
    for j in range(n - k, n):
        val = _bounded(st, np.uint64(j))
        loc = np.uint64(val) & mask
        while table[loc] != -1 and table[loc] != val:
            loc = (loc + _U1) & mask
        if table[loc] == -1:
            table[loc] = val
            out[j - n + k] = val
        else:
            loc = np.uint64(j) & mask
            while table[loc] != -1:
                loc = (loc + _U1) & mask
            table[loc] = j
            out[j - n + k] = j
    for i in range(k - 1, 0, -1):
        j = _bounded(st, np.uint64(i))
        out[i], out[j] = out[j], out[i]


@njit(cache=True)
def shuffle_list(st, order):
    for i in range(order.shape[0] - 1, 0, -1):
        mask = np.uint64(i)
        for sh in (1, 2, 4, 8, 16, 32):
            mask |= mask >> np.uint64(sh)
        j = next32(st) & mask
        while j > np.uint64(i):
            j = next32(st) & mask
        order[i], order[j] = order[j], order[i]
