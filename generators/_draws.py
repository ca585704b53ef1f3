"""Bulk draws for the atomic kernels, byte-identical to ``longsynth.rng``'s, but faster.

``rng.normal_fill`` calls ``rng.normal`` per value, which keeps the xoshiro256** state in
its uint64[4] array: every draw loads and stores it (LLVM cannot keep it in registers
because the output array might alias it). Here the state lives in local variables; the
ziggurat's fast path (about 99% of draws) is evaluated on them, and on any other draw the
pre-draw state is written back and ``rng.normal`` redoes that draw in full, so the output
and the final state are exactly those of ``rng.normal_fill`` / ``rng.unit_inf_noise``
(tests/test_atomic.py checks this).
"""
import numpy as np
from numba import njit

from longsynth.rng import _KI, _WI, normal


@njit(cache=True)
def normals(s, out):
    """out[i] <- rng.normal(s) for i in order (out float64 or float32)."""
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    n = out.shape[0]
    for i in range(n):
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
    """Same values as ``rng.unit_inf_noise``: n normals divided by their max |value|."""
    n = out.shape[0]
    tmp = np.empty(n, dtype=np.float64)
    normals(s, tmp)
    peak = 0.0
    for i in range(n):
        peak = max(peak, abs(tmp[i]))
    for i in range(n):
        out[i] = tmp[i] / peak
