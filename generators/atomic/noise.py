"""Noise-driven atomic tasks: shift, cumsum, cummax, reverse, sort, context-shift.

All six start from "normalised noise" (docs/tasks/atomic.md, "Conventions"): i.i.d.
N(0, 1) draws divided by their maximum absolute value, so max |x_i| == 1 exactly, stored
as float32. Inputs are [T, 1], targets [T', C'] (float32); the loader appends the
positional channels.

Definitions and shapes (L is the sequence length):
    shift          in [L, 1] x;  out [L, C], y[i, j] = x[i - o_j] (0 where i < o_j),
                   o_j = floor(j * L / C) (integer division; == j L / C when C divides L).
    cumsum         in [L, 1] x;  out [L, 1], y_i = (i + 1)^(-1/2) sum_{j <= i} x_j
                   (float64 running sum over the float32 inputs, then rounded).
    cummax         in [L, 1] x;  out [L, 1], y_i = max_{j <= i} x_j.
    reverse        in [2L, 1] (x, then L zeros);  out [L, 1], y_i = x_{L-1-i}.
    sort           in [2L, 1] as reverse;  out [L, 1]: x ordered by |x_i - x_0| ascending,
                   ties by smaller index (stable), so y_0 = x_0. The order is the exact
                   real-number order of the distances of the float32 inputs (no rounding
                   of the keys: equal distances x_0 - a == b - x_0 are detected exactly).
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

from longsynth.errors import LongsynthError
from longsynth.rng import unit_inf_noise
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
        raise LongsynthError(f"C: must be <= L ({cfg.L}), got {cfg.C}")


# ---------------------------------------------------------------- one-sample kernels


@njit(cache=True)
def shift_one(seed, split, index, x, y):
    """x [L], y [L, C]: y[i, j] = x[i - j*L//C] or 0."""
    s = stream(seed, split, index)
    unit_inf_noise(s, x)
    L, C = y.shape[0], y.shape[1]
    off = np.empty(C, dtype=np.int64)
    for j in range(C):
        off[j] = (j * L) // C
    last = off[C - 1]
    for i in range(last):
        for j in range(C):
            y[i, j] = x[i - off[j]] if i >= off[j] else np.float32(0.0)
    for i in range(last, L):
        for j in range(C):
            y[i, j] = x[i - off[j]]


@njit(cache=True)
def cumsum_one(seed, split, index, roots, x, y):
    """roots[i] = sqrt(i + 1) in float64 (shared by the batch)."""
    s = stream(seed, split, index)
    unit_inf_noise(s, x)
    n = x.shape[0]
    sums = np.empty(n, dtype=np.float64)
    acc = 0.0
    for i in range(n):
        acc += np.float64(x[i])
        sums[i] = acc
    for i in range(n):  # separate loop so the divisions vectorise
        y[i] = sums[i] / roots[i]


@njit(cache=True)
def cummax_one(seed, split, index, x, y):
    s = stream(seed, split, index)
    unit_inf_noise(s, x)
    m = x[0]
    for i in range(x.shape[0]):
        m = max(m, x[i])  # branch-free; replaces m only when x[i] > m
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


@njit(cache=True, inline="always")
def _exact_dist(v, x0):
    """|v - x0| exactly, as an unevaluated float64 sum hi + lo (TwoSum of float32 inputs)."""
    a = np.float64(v)
    b = np.float64(x0)
    if a < b:
        a, b = b, a
    b = -b
    hi = a + b
    bb = hi - a
    lo = (a - (hi - bb)) + (b - bb)
    return hi, lo


@njit(cache=True, inline="always")
def _goes_before(j, i, ku, x, x0):
    """True iff x[j] sorts strictly before x[i] (i, j of one bucket; i first in the run):
    smaller rounded distance key, or equal key and smaller exact distance."""
    if ku[j] != ku[i]:
        return ku[j] < ku[i]
    h1, l1 = _exact_dist(x[i], x0)
    h2, l2 = _exact_dist(x[j], x0)
    return h2 < h1 or (h2 == h1 and l2 < l1)


@njit(cache=True)
def sort_targets(x, y):
    """y <- x ordered by (|x_i - x_0|, i), comparing distances exactly.

    1. k_i = float32(|x_i - x_0|) is correctly rounded, hence monotone in the exact
       distance, and so is the 22-bit bucket floor(k_i * (2^22 - 1) / max k).
    2. A stable LSD radix sort (2 passes of 11 bits, branch-free) orders the entries by
       bucket, in index order within a bucket.
    3. Runs of equal buckets (rare: about 1% of entries for noise) are insertion-sorted
       by (k, exact TwoSum distance), stably, so exact ties keep index order.
    Worst case O(n^2) only when many distinct distances share a bucket.
    """
    n = x.shape[0]
    x0 = x[0]
    kf = np.empty(n, dtype=np.float32)
    top = np.float32(0.0)
    for i in range(n):
        kf[i] = abs(x[i] - x0)
        top = max(top, kf[i])
    ku = kf.view(np.uint32)
    scale = 4194303.0 / np.float64(top) if top > 0 else 0.0
    a = np.empty(n, dtype=np.uint64)
    b = np.empty(n, dtype=np.uint64)
    c0 = np.zeros(2048, dtype=np.int32)
    c1 = np.zeros(2048, dtype=np.int32)
    for i in range(n):
        bk = np.uint64(np.float64(kf[i]) * scale)
        a[i] = (bk << np.uint64(32)) | np.uint64(i)
        c0[bk & np.uint64(0x7FF)] += 1
        c1[bk >> np.uint64(11)] += 1
    t0 = t1 = 0
    for d in range(2048):
        u, v = c0[d], c1[d]
        c0[d], c1[d] = t0, t1
        t0 += u
        t1 += v
    for i in range(n):
        e = a[i]
        d = (e >> np.uint64(32)) & np.uint64(0x7FF)
        b[c0[d]] = e
        c0[d] += 1
    for i in range(n):
        e = b[i]
        d = e >> np.uint64(43)
        a[c1[d]] = e
        c1[d] += 1
    low = np.uint64(0xFFFFFFFF)
    p = 0
    while p < n - 1:
        if (a[p] >> np.uint64(32)) != (a[p + 1] >> np.uint64(32)):
            p += 1
            continue
        q = p + 1
        while q < n and (a[q] >> np.uint64(32)) == (a[p] >> np.uint64(32)):
            q += 1
        for r in range(p + 1, q):  # one bucket: entries differ only in their index bits
            e = a[r]
            i = np.int64(e & low)
            t = r
            while t > p and _goes_before(i, np.int64(a[t - 1] & low), ku, x, x0):
                a[t] = a[t - 1]
                t -= 1
            a[t] = e
        p = q
    for r in range(n):
        y[r] = x[np.int64(a[r] & low)]


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
    roots = np.empty(x.shape[1], dtype=np.float64)
    for i in range(x.shape[1]):
        roots[i] = math.sqrt(i + 1.0)
    for b in prange(x.shape[0]):
        cumsum_one(seed, split, start + b, roots, x[b], y[b])


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
