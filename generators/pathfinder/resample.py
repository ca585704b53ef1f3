"""Ports of PIL's resampling (``Resample.c``) for the LANCZOS reductions the Pathfinder
generators reproduce: the filter, the per-output-pixel weights renormalised where the frame
cuts the filter, and the 8-bit path's fixed-point weights and clipping. PIL reduces in two
passes, rows then columns; float images keep float32 between the passes, 8-bit images round
and clip each pass to uint8. :func:`reduce_float` and :func:`reduce_8bit` are whole-image
reductions built from these parts (``tests/test_pathfinder_resample.py`` holds them against
PIL); the renderer uses the parts for markers that the frame's edge cuts (``canvas.py``).
"""
import math

import numpy as np
from numba import njit

@njit(cache=True)
def _sinc(x):
    if x == 0.0:
        return 1.0
    x = x * math.pi
    return math.sin(x) / x


@njit(cache=True)
def lanczos(x):
    """PIL's LANCZOS filter (support 3)."""
    if -3.0 <= x < 3.0:
        return _sinc(x) * _sinc(x / 3)
    return 0.0


@njit(cache=True)
def coeffs(xx, in_size, scale, k):
    """PIL's resampling weights of output pixel xx (a reduction by ``scale``), renormalised
    where the frame cuts the filter: fills k, returns (first input pixel, count)."""
    support = 3.0 * scale
    center = (xx + 0.5) * scale
    ss = 1.0 / scale
    xmin = max(int(center - support + 0.5), 0)
    xmax = min(int(center + support + 0.5), in_size) - xmin
    ww = 0.0
    for x in range(xmax):
        k[x] = lanczos((x + xmin - center + 0.5) * ss)
        ww += k[x]
    if ww != 0.0:
        for x in range(xmax):
            k[x] /= ww
    return xmin, xmax


PRECISION_BITS = 22  # PIL's 8-bit resampling: weights in fixed point (Resample.c, 32 - 8 - 2)


@njit(cache=True)
def fixed(w):
    """PIL's fixed-point weight: (int)(w * 2^22 +- 0.5), truncated towards zero."""
    v = w * (1 << PRECISION_BITS)
    return int(v + 0.5) if v >= 0.0 else -int(-v + 0.5)


@njit(cache=True)
def clip8(ss):
    """PIL's clip8: the accumulator (with its 2^21 rounding term) >> 22, clipped to 0..255."""
    v = ss >> PRECISION_BITS
    return 0 if v < 0 else (255 if v > 255 else v)


@njit(cache=True)
def _weights(n_out, n_in):
    scale = n_in / n_out
    k = np.zeros((n_out, 2 * int(math.ceil(3.0 * scale)) + 2))
    span = np.zeros((n_out, 2), np.int64)
    for i in range(n_out):
        span[i, 0], span[i, 1] = coeffs(i, n_in, scale, k[i])
    return k, span


@njit(cache=True)
def reduce_float(img, h, w):
    """float32 [h, w]: a float image reduced as PIL's ``resize((w, h), LANCZOS)`` of mode 'F'."""
    kx, sx = _weights(w, img.shape[1])
    ky, sy = _weights(h, img.shape[0])
    mid = np.zeros((img.shape[0], w), np.float32)
    for Y in range(img.shape[0]):
        for x in range(w):
            acc = 0.0
            for t in range(sx[x, 1]):
                acc += np.float64(img[Y, sx[x, 0] + t]) * kx[x, t]
            mid[Y, x] = np.float32(acc)
    out = np.zeros((h, w), np.float32)
    for y in range(h):
        for x in range(w):
            acc = 0.0
            for t in range(sy[y, 1]):
                acc += np.float64(mid[sy[y, 0] + t, x]) * ky[y, t]
            out[y, x] = np.float32(acc)
    return out


@njit(cache=True)
def reduce_8bit(img, h, w):
    """uint8 [h, w]: an 8-bit image reduced as PIL's ``resize((w, h), LANCZOS)`` of mode 'L'."""
    kx, sx = _weights(w, img.shape[1])
    ky, sy = _weights(h, img.shape[0])
    mid = np.zeros((img.shape[0], w), np.int64)
    for Y in range(img.shape[0]):
        for x in range(w):
            ss = 1 << (PRECISION_BITS - 1)
            for t in range(sx[x, 1]):
                ss += np.int64(img[Y, sx[x, 0] + t]) * fixed(kx[x, t])
            mid[Y, x] = clip8(ss)
    out = np.zeros((h, w), np.uint8)
    for y in range(h):
        for x in range(w):
            ss = 1 << (PRECISION_BITS - 1)
            for t in range(sy[y, 1]):
                ss += mid[sy[y, 0] + t, x] * fixed(ky[y, t])
            out[y, x] = clip8(ss)
    return out
