"""Keyed random streams for longsynth kernels (Numba, no global RNG state).

Every sample owns one xoshiro256** stream. Its 256-bit state is an injective function of
the key (root seed, split code, index): distinct keys give distinct states, so train, val,
test and the dataset-level "fixed" stream can never share a state. Nothing here touches
numpy's or numba's random generators, so dataset bytes do not change when they do.

Key -> state (all words uint64, ``mix`` is the SplitMix64 finaliser, a bijection):
    a = mix(seed ^ K0); b = mix(a ^ mix(split ^ K1)); c = mix(b ^ mix(index ^ K2));
    d = mix(c ^ K3); state = (a, c, b, d)
``c`` sits in word 1 because xoshiro256**'s first output reads word 1 only; then
``WARMUP`` steps diffuse the key over all words.

``reseed(s, ...)`` writes that state into an existing array (a kernel making many samples).

Draws:
    next_u64(s)        64 random bits
    uniform(s)         (u >> 11) * 2^-53, in [0, 1)
    randint(s, n)      exact uniform integer in [0, n) by rejection (threshold 2^64 mod n)
    below(s, n)        exact uniform integer in [0, n), n <= 2^32, without a division on most
                       draws (Lemire): x = the top 32 bits of a u64, m = x * n; redrawn while
                       m mod 2^32 < 2^32 mod n; the result m >> 32 (the token tasks' draw)
    below_fill(s, out, start, n, bound)  n draws of below(s, bound) into out[start:], the
                       state in registers (the same values as the loop)
    normal(s)          ziggurat, 256 layers (Marsaglia & Tsang), one u64 per fast draw:
                       bits 0-7 layer, bit 8 sign, bits 9-60 the 52-bit abscissa
    normal_fill(s, x)  x[i] = normal(s) for i in order
    unit_inf_noise     normals divided by their max |x| (docs/tasks/atomic.md, "Conventions")
Bits: popcount(x) counts the set bits of a uint64 (ListOps counts 32 decisions per word).
"""
import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from longsynth.errors import LongsynthError

SPLITS = {"train": 1, "val": 2, "test": 3}
FIXED = 0  # split code of the dataset-level stream (select-fixed positions, solve-fixed A)
WARMUP = 4

_K0 = np.uint64(0x9E3779B97F4A7C15)
_K1 = np.uint64(0xD1B54A32D192ED03)
_K2 = np.uint64(0x8CB92BA72F3D8DD7)
_K3 = np.uint64(0x2545F4914F6CDD1D)


SPLIT_ALIASES = {"validation": "val"}  # the Hugging Face name of the validation split


def split_name(split):
    """The canonical name of a split: ``train``, ``val`` or ``test``. ``validation`` (the
    Hugging Face name, which ``export --format hf`` writes) is accepted as ``val``."""
    name = SPLIT_ALIASES.get(split, split) if isinstance(split, str) else split
    if name not in SPLITS:
        raise LongsynthError(f"split: must be one of {', '.join(SPLITS)} (or validation, for val), got {split!r}")
    return name


def split_code(split):
    """Integer code of a split name (``split_name``); LongsynthError for anything else."""
    return SPLITS[split_name(split)]


def _ziggurat_tables(layers=256, r=3.6541528853610088, v=0.00492867323399):
    """Layer edges x[0..256] and f(x) for the 256-layer normal ziggurat (pure math)."""
    f = lambda t: math.exp(-0.5 * t * t)  # noqa: E731
    x = [0.0] * (layers + 1)
    x[0] = v / f(r)
    x[1] = r
    for i in range(1, layers - 1):
        x[i + 1] = math.sqrt(-2.0 * math.log(v / x[i] + f(x[i])))
    x[layers] = 0.0
    ki = np.array([int(x[i + 1] / x[i] * 2.0**52) for i in range(layers)], dtype=np.uint64)
    wi = np.array([x[i] / 2.0**52 for i in range(layers)], dtype=np.float64)
    fi = np.array([f(t) for t in x], dtype=np.float64)
    return ki, wi, fi, r


_KI, _WI, _FI, _R = _ziggurat_tables()


@njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True, inline="always")
def _step(s0, s1, s2, s3):
    """One xoshiro256** step on the state's four words: (output, the next four words)."""
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@njit(cache=True, inline="always")
def next_u64(s):
    result, s[0], s[1], s[2], s[3] = _step(s[0], s[1], s[2], s[3])
    return result


@intrinsic
def popcount(typingctx, x):
    """Number of set bits of a uint64, as int64 (one ``popcnt`` instruction where the CPU has it)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.int64(types.uint64), codegen


@njit(cache=True, inline="always")
def reseed(s, seed, split, index):
    """s (uint64[4]) <- the state of key (seed, split code, index): ``stream`` without allocating,
    for a kernel that makes many samples with one state array."""
    a = _mix(np.uint64(seed) ^ _K0)
    b = _mix(a ^ _mix(np.uint64(split) ^ _K1))
    c = _mix(b ^ _mix(np.uint64(index) ^ _K2))
    d = _mix(c ^ _K3)
    s[0], s[1], s[2], s[3] = a, c, b, d
    for _ in range(WARMUP):
        next_u64(s)


@njit(cache=True)
def stream(seed, split, index):
    """xoshiro256** state (uint64[4]) for key (seed, split code, index); all >= 0."""
    s = np.empty(4, dtype=np.uint64)
    reseed(s, seed, split, index)
    return s


@njit(cache=True, inline="always")
def uniform(s):
    return np.float64(next_u64(s) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def randint(s, n):
    """Uniform integer in [0, n), n >= 1, without modulo bias."""
    un = np.uint64(n)
    threshold = (np.uint64(0) - un) % un
    while True:  # threshold < n <= 2^63: a word is accepted with probability 1 - threshold / 2^64 > 1/2
        r = next_u64(s)
        if r >= threshold:
            return np.int64(r % un)


@njit(cache=True, inline="always")
def below(s, n):
    """Uniform integer in [0, n), 1 <= n <= 2^32 (Lemire's multiply-shift with rejection):
    one u64 per draw, of which the top 32 bits are used; a division only when a draw lands
    in the first n of the 2^32 low words."""
    un = np.uint64(n)
    m = (next_u64(s) >> np.uint64(32)) * un
    low = m & np.uint64(0xFFFFFFFF)
    if low < un:
        threshold = (np.uint64(0x100000000) - un) % un
        while low < threshold:  # threshold < n <= 2^32: accepted with probability > 1/2
            m = (next_u64(s) >> np.uint64(32)) * un
            low = m & np.uint64(0xFFFFFFFF)
    return np.int64(m >> np.uint64(32))


@njit(cache=True, inline="always")
def below_fill(s, out, start, n, bound):
    """out[start + i] <- below(s, bound) for i < n, in order: the same values and final state as a
    loop of below(). The state stays in local variables (registers) over the loop; through the
    array, every store to ``out`` would make the compiler reload it (they might alias)."""
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    un = np.uint64(bound)
    for i in range(n):
        while True:  # one pass but for a draw rejected by below's test (probability < n / 2^32)
            r, s0, s1, s2, s3 = _step(s0, s1, s2, s3)
            m = (r >> np.uint64(32)) * un
            low = m & np.uint64(0xFFFFFFFF)
            if low >= un or low >= (np.uint64(0x100000000) - un) % un:
                break
        out[start + i] = m >> np.uint64(32)
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3


@njit(cache=True)
def normal(s):
    # each pass returns with probability > 0.99 (the ziggurat's rectangles; the tail and
    # wedge tests accept with positive probability): about 1.01 passes expected
    while True:
        r = next_u64(s)
        idx = np.int64(r & np.uint64(0xFF))
        r = r >> np.uint64(8)
        negative = (r & np.uint64(1)) != np.uint64(0)
        rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
        x = np.float64(rabs) * _WI[idx]
        if negative:
            x = -x
        if rabs < _KI[idx]:
            return x
        if idx == 0:
            while True:  # tail beyond R (Marsaglia 1964)
                xx = -math.log(1.0 - uniform(s)) / _R
                yy = -math.log(1.0 - uniform(s))
                if yy + yy > xx * xx:
                    return -(_R + xx) if negative else _R + xx
        elif _FI[idx] + uniform(s) * (_FI[idx + 1] - _FI[idx]) < math.exp(-0.5 * x * x):
            return x


@njit(cache=True)
def normal_fill(s, out):
    """out[i] <- normal(s) for i in order: the same values and final state as a loop of normal().

    The state lives in local variables (registers) while the ziggurat's fast path (about
    99% of draws) runs; on any other draw the pre-draw state is written back and normal()
    redoes that draw in full. About twice as fast as calling normal() per value, which
    must load and store the state array around every draw.
    """
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    for i in range(out.shape[0]):
        m = s1 * np.uint64(5)
        r = ((m << np.uint64(7)) | (m >> np.uint64(57))) * np.uint64(9)
        layer = np.int64(r & np.uint64(0xFF))
        rabs = (r >> np.uint64(9)) & np.uint64(0x000FFFFFFFFFFFFF)
        if rabs < _KI[layer]:
            t = s1 << np.uint64(17)
            s2 ^= s0
            s3 ^= s1
            s1 ^= s2
            s0 ^= s3
            s2 ^= t
            s3 = (s3 << np.uint64(45)) | (s3 >> np.uint64(19))
            x = np.float64(rabs) * _WI[layer]
            out[i] = -x if (r >> np.uint64(8)) & np.uint64(1) else x
        else:
            s[0], s[1], s[2], s[3] = s0, s1, s2, s3
            out[i] = normal(s)
            s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3


@njit(cache=True)
def unit_inf_noise(s, out):
    """out <- n i.i.d. normals divided by their max |value| (so max |out| == 1 exactly)."""
    n = out.shape[0]
    tmp = np.empty(n, dtype=np.float64)
    normal_fill(s, tmp)
    peak = 0.0
    for i in range(n):
        peak = max(peak, abs(tmp[i]))
    for i in range(n):
        out[i] = tmp[i] / peak
