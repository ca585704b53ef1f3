"""Noise-driven atomic tasks: shift, cumsum, cummax, reverse, sort, context-shift.

All six start from "normalised noise" (TASKS.md): i.i.d. N(0, 1) draws divided by their
maximum absolute value, so max |x_i| == 1 exactly, stored as float32. Inputs are
[T, 1], targets [T', C'] (float32); the loader appends the positional channels.

Definitions and shapes (L is the sequence length):
    shift          in [L, 1] x;  out [L, C], y[i, j] = x[i - o_j] (0 where i < o_j),
                   o_j = floor(j * L / C) (integer division; == j L / C when C divides L).
    cumsum         in [L, 1] x;  out [L, 1], y_i = (i + 1)^(-1/2) sum_{j <= i} x_j
                   (float64 running sum over the float32 inputs, then rounded).
    cummax         in [L, 1] x;  out [L, 1], y_i = max_{j <= i} x_j.
    reverse        in [2L, 1] (x, then L zeros);  out [L, 1], y_i = x_{L-1-i}.
    sort           in [2L, 1] as reverse;  out [L, 1]: x ordered by |x_i - x_0| ascending,
                   ties by smaller index (stable), so y_0 = x_0. The order is the exact
                   real-number order of the float32 inputs (no rounding of the keys:
                   equal distances x_0 - a == b - x_0 are detected exactly).
    context-shift  in [L, 1] x' = (cos(2 pi s / L), sin(2 pi s / L), x_0..x_{L-3});
                   out [L, 1], y_i = x'_{i-s} (0 where i < s); extra key s (int64 scalar).
                   cos/sin are evaluated in float64 as cos(2.0 * pi * s / L), then rounded.

Draw order (the reproducibility contract; ``stream(seed, split, index)`` of
``longsynth.rng``, one stream per sample):
    shift, cumsum, cummax, reverse, sort: L normals, x_0 first, then normalised.
    context-shift: s = randint(L - 1) first, then L - 2 normals for x.

Worked example (L = 4, C = 2 for shift; x = [0.5, -1.0, 0.25, 0.75]):
    shift         y = [[0.5, 0], [-1.0, 0], [0.25, 0.5], [0.75, -1.0]]   (o = [0, 2])
    cumsum        y = [0.5, -0.35355, -0.14434, 0.25]
    cummax        y = [0.5, 0.5, 0.5, 0.75]
    reverse       inputs [0.5, -1.0, 0.25, 0.75, 0, 0, 0, 0], y = [0.75, 0.25, -1.0, 0.5]
    sort          |x - x_0| = [0, 1.5, 0.25, 0.25] -> order 0, 2, 3, 1 (2 before 3: tie,
                  smaller index first), y = [0.5, 0.25, 0.75, -1.0]
    context-shift with s = 1 (L = 6, x = [0.5, -1.0, 0.25, 0.75]):
                  x' = [cos(pi/3), sin(pi/3), 0.5, -1.0, 0.25, 0.75]
                     = [0.5, 0.86603, 0.5, -1.0, 0.25, 0.75]
                  y  = [0, 0.5, 0.86603, 0.5, -1.0, 0.25]
"""
import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._draws import unit_inf_noise
from longsynth.generators._preview import preview
from longsynth.rng import randint, stream
from longsynth.task import KeySpec, Task, param

MAX_L = 1 << 24


# ---------------------------------------------------------------- configs


@dataclass(frozen=True)
class ShiftConfig:
    L: int = param(4096, "sequence length", lo=1, hi=MAX_L)
    C: int = param(8, "number of uniformly spaced shifts (output channels), C <= L", lo=1, hi=4096)


@dataclass(frozen=True)
class CumsumConfig:
    L: int = param(4096, "sequence length", lo=1, hi=MAX_L)


@dataclass(frozen=True)
class CummaxConfig:
    L: int = param(4096, "sequence length", lo=1, hi=MAX_L)


@dataclass(frozen=True)
class ReverseConfig:
    L: int = param(4096, "sequence length (the input is 2L long)", lo=1, hi=MAX_L)


@dataclass(frozen=True)
class SortConfig:
    L: int = param(4096, "sequence length (the input is 2L long)", lo=1, hi=MAX_L)


@dataclass(frozen=True)
class ContextShiftConfig:
    L: int = param(4096, "sequence length (2 context values + L - 2 noise values)", lo=3, hi=MAX_L)


def _check_shift(cfg):
    if cfg.C > cfg.L:
        raise ValueError(f"C: must be <= L ({cfg.L}), got {cfg.C}")


# ---------------------------------------------------------------- one-sample kernels


@njit(cache=True)
def shift_one(seed, split, index, x, y):
    """x [L], y [L, C]: y[i, j] = x[i - j*L//C] or 0."""
    s = stream(seed, split, index)
    unit_inf_noise(s, x)
    L, C = y.shape[0], y.shape[1]
    for i in range(L):
        for j in range(C):
            o = (j * L) // C
            y[i, j] = x[i - o] if i >= o else np.float32(0.0)


@njit(cache=True)
def cumsum_one(seed, split, index, x, y):
    s = stream(seed, split, index)
    unit_inf_noise(s, x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += np.float64(x[i])
        y[i] = acc / math.sqrt(i + 1.0)


@njit(cache=True)
def cummax_one(seed, split, index, x, y):
    s = stream(seed, split, index)
    unit_inf_noise(s, x)
    m = x[0]
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
        y[i] = m


@njit(cache=True)
def reverse_one(seed, split, index, x2, y):
    """x2 [2L] (noise then zeros), y [L]."""
    L = y.shape[0]
    s = stream(seed, split, index)
    unit_inf_noise(s, x2[:L])
    for i in range(L, 2 * L):
        x2[i] = 0.0
    for i in range(L):
        y[i] = x2[L - 1 - i]


@njit(cache=True)
def _order_key(v):
    """uint32 whose unsigned order is the float32 order of v (-0.0 mapped to +0.0)."""
    u = np.uint32(0)
    a = np.empty(1, dtype=np.float32)
    a[0] = v + np.float32(0.0)
    u = a.view(np.uint32)[0]
    if u & np.uint32(0x80000000):
        return ~u
    return u | np.uint32(0x80000000)


@njit(cache=True)
def _sort_by_value(x, order, tmp):
    """order <- indices of x sorted by value, stable (LSD radix, 3 passes of 11/11/10 bits)."""
    n = x.shape[0]
    xs = np.empty(n, dtype=np.float32)
    for i in range(n):
        xs[i] = x[i] + np.float32(0.0)  # -0.0 -> +0.0, so equal values share one key
    u = xs.view(np.uint32)
    keys = np.empty(n, dtype=np.uint32)
    c0 = np.zeros(2049, dtype=np.int64)
    c1 = np.zeros(2049, dtype=np.int64)
    c2 = np.zeros(1025, dtype=np.int64)
    for i in range(n):
        k = u[i]
        k = ~k if k & np.uint32(0x80000000) else k | np.uint32(0x80000000)
        keys[i] = k
        c0[(k & np.uint32(0x7FF)) + 1] += 1
        c1[((k >> np.uint32(11)) & np.uint32(0x7FF)) + 1] += 1
        c2[(k >> np.uint32(22)) + 1] += 1
    for d in range(2048):
        c0[d + 1] += c0[d]
        c1[d + 1] += c1[d]
    for d in range(1024):
        c2[d + 1] += c2[d]
    for i in range(n):
        d = keys[i] & np.uint32(0x7FF)
        tmp[c0[d]] = i
        c0[d] += 1
    for p in range(n):
        i = tmp[p]
        d = (keys[i] >> np.uint32(11)) & np.uint32(0x7FF)
        order[c1[d]] = i
        c1[d] += 1
    for p in range(n):
        i = order[p]
        d = keys[i] >> np.uint32(22)
        tmp[c2[d]] = i
        c2[d] += 1
    for p in range(n):
        order[p] = tmp[p]
    return keys


@njit(cache=True, inline="always")
def _right_first(xr, ir, xl, il, twice0):
    """True iff (xr - x0, ir) < (x0 - xl, il) exactly; xr > x0 > xl, twice0 = 2 x0 (exact)."""
    a = np.float64(xr)
    b = np.float64(xl)
    s = a + b  # TwoSum: s + e == a + b exactly
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    if s != twice0:
        return s < twice0
    if e != 0.0:
        return e < 0.0
    return ir < il


@njit(cache=True)
def sort_targets(x, y):
    """y <- x ordered by (|x_i - x_0|, i) with exact distance comparisons."""
    n = x.shape[0]
    order = np.empty(n, dtype=np.int64)
    tmp = np.empty(n, dtype=np.int64)
    keys = _sort_by_value(x, order, tmp)
    k0 = keys[0]
    lo = 0  # first sorted position with key >= k0
    hi = n  # first sorted position with key > k0
    a, b = 0, n
    while a < b:
        m = (a + b) // 2
        if keys[order[m]] < k0:
            a = m + 1
        else:
            b = m
    lo = a
    b = n
    while a < b:
        m = (a + b) // 2
        if keys[order[m]] <= k0:
            a = m + 1
        else:
            b = m
    hi = a
    out = 0
    for p in range(lo, hi):  # distance 0, already in index order
        y[out] = x[order[p]]
        out += 1
    # left side: values < x0, visited by decreasing value; each run of equal values
    # (equal distance) is visited in increasing index order, i.e. forward within the run.
    for p in range(lo):
        tmp[p] = order[p]
    nl = 0
    end = lo - 1
    while end >= 0:
        start = end
        while start > 0 and keys[order[start - 1]] == keys[order[end]]:
            start -= 1
        for p in range(start, end + 1):
            tmp[nl] = order[p]
            nl += 1
        end = start - 1
    twice0 = 2.0 * np.float64(x[0])
    pl, pr = 0, hi
    while pl < nl and pr < n:
        il = tmp[pl]
        ir = order[pr]
        if _right_first(x[ir], ir, x[il], il, twice0):
            y[out] = x[ir]
            pr += 1
        else:
            y[out] = x[il]
            pl += 1
        out += 1
    while pl < nl:
        y[out] = x[tmp[pl]]
        pl += 1
        out += 1
    while pr < n:
        y[out] = x[order[pr]]
        pr += 1
        out += 1


@njit(cache=True)
def sort_one(seed, split, index, x2, y):
    """x2 [2L] (noise then zeros), y [L]."""
    L = y.shape[0]
    s = stream(seed, split, index)
    unit_inf_noise(s, x2[:L])
    for i in range(L, 2 * L):
        x2[i] = 0.0
    sort_targets(x2[:L], y)


@njit(cache=True)
def context_shift_one(seed, split, index, xp, y, shift):
    """xp [L] = (cos, sin, noise), y [L]; shift[0] <- s."""
    L = xp.shape[0]
    st = stream(seed, split, index)
    s = randint(st, L - 1)
    shift[0] = s
    angle = 2.0 * math.pi * s / L
    xp[0] = math.cos(angle)
    xp[1] = math.sin(angle)
    unit_inf_noise(st, xp[2:])
    for i in range(L):
        y[i] = xp[i - s] if i >= s else np.float32(0.0)


# ---------------------------------------------------------------- batch fillers


@njit(cache=True, parallel=True)
def shift_fill(seed, split, start, x, y):
    for b in prange(x.shape[0]):
        shift_one(seed, split, start + b, x[b], y[b])


@njit(cache=True, parallel=True)
def cumsum_fill(seed, split, start, x, y):
    for b in prange(x.shape[0]):
        cumsum_one(seed, split, start + b, x[b], y[b])


@njit(cache=True, parallel=True)
def cummax_fill(seed, split, start, x, y):
    for b in prange(x.shape[0]):
        cummax_one(seed, split, start + b, x[b], y[b])


@njit(cache=True, parallel=True)
def reverse_fill(seed, split, start, x, y):
    for b in prange(x.shape[0]):
        reverse_one(seed, split, start + b, x[b], y[b])


@njit(cache=True, parallel=True)
def sort_fill(seed, split, start, x, y):
    for b in prange(x.shape[0]):
        sort_one(seed, split, start + b, x[b], y[b])


@njit(cache=True, parallel=True)
def context_shift_fill(seed, split, start, x, y, shift):
    for b in prange(x.shape[0]):
        context_shift_one(seed, split, start + b, x[b], y[b], shift[b : b + 1])


# ---------------------------------------------------------------- thin wrappers


def _fill_shift(cfg, seed, split, start, out, fixed):
    shift_fill(seed, split, start, out["inputs"][..., 0], out["targets"])


def _fill_cumsum(cfg, seed, split, start, out, fixed):
    cumsum_fill(seed, split, start, out["inputs"][..., 0], out["targets"][..., 0])


def _fill_cummax(cfg, seed, split, start, out, fixed):
    cummax_fill(seed, split, start, out["inputs"][..., 0], out["targets"][..., 0])


def _fill_reverse(cfg, seed, split, start, out, fixed):
    reverse_fill(seed, split, start, out["inputs"][..., 0], out["targets"][..., 0])


def _fill_sort(cfg, seed, split, start, out, fixed):
    sort_fill(seed, split, start, out["inputs"][..., 0], out["targets"][..., 0])


def _fill_context_shift(cfg, seed, split, start, out, fixed):
    context_shift_fill(seed, split, start, out["inputs"][..., 0], out["targets"][..., 0], out["s"])


def _keys_1to1(doc_in, doc_out):
    def keys(cfg):
        return {
            "inputs": KeySpec("float32", (cfg.L, 1), doc=doc_in),
            "targets": KeySpec("float32", (cfg.L, 1), doc=doc_out),
        }

    return keys


def _keys_shift(cfg):
    return {
        "inputs": KeySpec("float32", (cfg.L, 1), doc="normalised noise x"),
        "targets": KeySpec("float32", (cfg.L, cfg.C), doc="y[i, j] = x[i - j*L//C], 0 before the start"),
    }


def _keys_padded(doc_out):
    def keys(cfg):
        return {
            "inputs": KeySpec("float32", (2 * cfg.L, 1), doc="normalised noise x, then L zeros"),
            "targets": KeySpec("float32", (cfg.L, 1), doc=doc_out),
        }

    return keys


def _keys_context_shift(cfg):
    return {
        "inputs": KeySpec("float32", (cfg.L, 1), doc="x' = (cos(2 pi s/L), sin(2 pi s/L), noise[L-2])"),
        "targets": KeySpec("float32", (cfg.L, 1), doc="y_i = x'_{i-s}, 0 before s"),
        "s": KeySpec("int64", (), doc="shift s in 0..L-2"),
    }


TASKS = [
    Task(
        name="shift",
        config=ShiftConfig,
        summary="C uniformly spaced right shifts of normalised noise (exact copies)",
        keys=_keys_shift,
        fill=_fill_shift,
        check=_check_shift,
        show=preview,
        card="x in R^L is N(0,1) noise divided by max|x|; y[i, j] = x[i - floor(jL/C)], "
        "0 where the index is negative (exact copies).",
    ),
    Task(
        name="cumsum",
        config=CumsumConfig,
        summary="running sum of normalised noise, scaled by (i+1)^-1/2",
        keys=_keys_1to1("normalised noise x", "(i+1)^-1/2 * cumulative sum of x"),
        fill=_fill_cumsum,
        show=preview,
        card="x in R^L is N(0,1) noise divided by max|x|; target y_i = (i+1)^(-1/2) sum_{j<=i} x_j.",
    ),
    Task(
        name="cummax",
        config=CummaxConfig,
        summary="running maximum of normalised noise",
        keys=_keys_1to1("normalised noise x", "max_{j<=i} x_j"),
        fill=_fill_cummax,
        show=preview,
        card="x in R^L is N(0,1) noise divided by max|x|; target y_i = max_{j<=i} x_j.",
    ),
    Task(
        name="reverse",
        config=ReverseConfig,
        summary="normalised noise reversed (read x, then write it backwards into L zeros)",
        keys=_keys_padded("y_i = x_{L-1-i}"),
        fill=_fill_reverse,
        show=preview,
        card="input (x, 0_L) with x normalised noise; target y_i = x_{L-1-i} (the model's L rightmost outputs).",
    ),
    Task(
        name="sort",
        config=SortConfig,
        summary="normalised noise ordered by distance to its first element (stable)",
        keys=_keys_padded("x ordered by |x_i - x_0| ascending, ties by index"),
        fill=_fill_sort,
        show=preview,
        card="input (x, 0_L) with x normalised noise; target: the elements of x ordered by "
        "|x_i - x_0| ascending, ties by smaller index (exact comparisons), so y_0 = x_0.",
    ),
    Task(
        name="context-shift",
        config=ContextShiftConfig,
        summary="noise shifted right by s, where s is announced by (cos, sin) at the start",
        keys=_keys_context_shift,
        fill=_fill_context_shift,
        show=preview,
        card="s uniform in 0..L-2; x in R^(L-2) normalised noise; input x' = (cos(2 pi s/L), "
        "sin(2 pi s/L), x); target y_i = x'_{i-s}, 0 where i < s.",
    ),
]
