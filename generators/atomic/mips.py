"""MIPS: causal maximum inner product search over unit queries and keys.

Definition (docs/tasks/atomic.md, "mips"): q, k, v in R^{L x D} (D = 4 by default),
every row i.i.d. N(0, 1) and scaled to unit Euclidean norm. Inputs [L, 3D] float32, row i = (q_i, k_i, v_i).
Targets [L, D] float32, y_i = v_{i*} with i* = argmax_{j <= i} <q_i, k_j> (causal), ties
to the smallest j.

Exact scores: <q_i, k_j> is computed from the stored float32 rows in float64, summed
left to right: ((q_0 k_0 + q_1 k_1) + q_2 k_2) + q_3 k_3 (each product is exact in
float64); the argmax is exact for these scores. Normalisation: norm = sqrt(sum of squares)
in float64 over the float64 draws, then q = float32(draw / norm).

Draw order: stream(seed, split, index) yields, for i = 0..L-1, D normals for q_i, then D
for k_i, then D for v_i (the input row order).

Search: O(L * D) memory per sample, no L x L score matrix; exact branch and bound
over cells of key directions (see ``causal_argmax``), checked against the brute-force
scan ``causal_argmax_brute`` and the NumPy twin in the tests.

Worked example (L = 3, D = 2; rows already unit):
    q = [(1, 0), (0, 1), (0.6, 0.8)], k = [(1, 0), (0.6, -0.8), (0, 1)],
    v = [(1, 0), (0, 1), (-1, 0)]
    i = 0: scores [1]              -> i* = 0, y_0 = (1, 0)
    i = 1: scores [0, -0.8]        -> i* = 0, y_1 = (1, 0)
    i = 2: scores [0.6, -0.28, .8] -> i* = 2, y_2 = (-1, 0)
"""
import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._preview import preview
from longsynth.rng import normal_fill as normals
from longsynth.rng import stream
from longsynth.task import KeySpec, Task, param



@dataclass(frozen=True)
class MipsConfig:
    L: int = param(4096, "sequence length (number of queries, keys and values)", lo=1, hi=1 << 20)
    D: int = param(4, "dimension of queries, keys and values (3D input channels)", lo=1, hi=256)


@njit(cache=True)
def _unit_rows(s, inp, D):
    """inp [L, 3D] <- per row: D normals for q, D for k, D for v, each group unit norm."""
    L = inp.shape[0]
    g = np.empty(3 * D * L, dtype=np.float64)
    normals(s, g)
    p = 0
    for i in range(L):
        for part in range(3):
            ss = 0.0
            for d in range(D):
                ss += g[p + d] * g[p + d]
            norm = math.sqrt(ss)
            for d in range(D):
                inp[i, part * D + d] = g[p + d] / norm
            p += D


MARGIN = 1e-12  # > float64 rounding of a 4..256-term score and of a cell bound


@njit(cache=True)
def _cells(kt):
    """Cell id per key (cube-map cell of its direction), cell count, grid resolution."""
    D, L = kt.shape
    g = 1  # grid steps per axis: about 16 keys per cell (float64: no integer overflow for large D)
    while D > 1 and (2.0 * D) * (g + 1.0) ** (D - 1) <= L / 16.0:
        g += 1
    cell = np.empty(L, dtype=np.int64)
    for j in range(L):
        a = 0
        for d in range(1, D):
            if abs(kt[d, j]) > abs(kt[a, j]):
                a = d
        c = 2 * a + (1 if kt[a, j] < 0 else 0)
        for d in range(D):
            if d != a:
                u = kt[d, j] / abs(kt[a, j]) if kt[a, j] != 0 else 0.0
                b = int((u + 1.0) * 0.5 * g)
                c = c * g + min(max(b, 0), g - 1)
        cell[j] = c
    return cell, (2 * D) * g ** (D - 1)


@njit(cache=True, inline="always")
def _scores(q, ks, lo, n, sc):
    """sc[:n] <- documented float64 scores of q with the keys in columns lo..lo+n-1 of ks."""
    D = ks.shape[0]
    q0 = q[0]
    for t in range(n):
        sc[t] = q0 * ks[0, lo + t]
    for d in range(1, D):
        qd = q[d]
        for t in range(n):
            sc[t] = sc[t] + qd * ks[d, lo + t]


@njit(cache=True, fastmath={"nnan", "ninf", "nsz"})
def _max(sc, n):
    """max(sc[:n]); the flags only let LLVM vectorise the reduction (no NaN or inf occur)."""
    m = -np.inf
    for t in range(n):
        m = max(m, sc[t])
    return m


@njit(cache=True)
def causal_argmax(qt, kt, arg):
    """arg[i] <- argmax_{j <= i} <q_i, k_j>, ties to the smallest j; qt, kt float64 [D, L].

    Exact branch and bound: keys are grouped into cells (cube-map cells of their
    direction), each cell keeps its keys in index order, so the keys j <= i of a cell are
    a prefix. For query i, a cell whose bounding-box bound sum_d max(q_d lo_d, q_d hi_d)
    is below the best score found so far (minus MARGIN, which covers rounding) cannot
    hold a key scoring >= best and is skipped; all other active cells are scanned,
    the most promising one first. Scores are exactly the documented float64 sums.
    """
    D, L = qt.shape
    cell, K = _cells(kt)
    start = np.zeros(K + 1, dtype=np.int64)
    for j in range(L):
        start[cell[j] + 1] += 1
    for c in range(K):
        start[c + 1] += start[c]
    fill = start[:K].copy()
    ks = np.empty((D, L), dtype=np.float64)
    idx = np.empty(L, dtype=np.int64)
    lo = np.full((D, K), np.inf)
    hi = np.full((D, K), -np.inf)
    for j in range(L):
        c = cell[j]
        t = fill[c]
        fill[c] += 1
        idx[t] = j
        for d in range(D):
            v = kt[d, j]
            ks[d, t] = v
            lo[d, c] = min(lo[d, c], v)
            hi[d, c] = max(hi[d, c], v)
    for c in range(K):
        if start[c + 1] == start[c]:  # never active; finite box keeps the bound loop NaN-free
            for d in range(D):
                lo[d, c] = 0.0
                hi[d, c] = 0.0
    act = np.zeros(K, dtype=np.int64)
    ub = np.empty(K, dtype=np.float64)
    q = np.empty(D, dtype=np.float64)
    sc = np.empty(L, dtype=np.float64)
    for i in range(L):
        act[cell[i]] += 1
        for d in range(D):
            q[d] = qt[d, i]
        for c in range(K):
            ub[c] = 0.0
        for d in range(D):
            qd = q[d]
            for c in range(K):
                ub[c] += max(qd * lo[d, c], qd * hi[d, c])
        first = cell[i]
        for c in range(K):
            if act[c] > 0 and ub[c] > ub[first]:
                first = c
        best = -np.inf
        bestj = L
        for r in range(K + 1):
            c = first if r == 0 else r - 1
            if (r > 0 and c == first) or act[c] == 0 or ub[c] + MARGIN < best:
                continue
            lo_t = start[c]
            n = act[c]
            _scores(q, ks, lo_t, n, sc)
            m = _max(sc, n)
            if m >= best:
                for t in range(n):
                    if sc[t] == m:
                        break
                if m > best or idx[lo_t + t] < bestj:
                    best = m
                    bestj = idx[lo_t + t]
        arg[i] = bestj


@njit(cache=True)
def causal_argmax_brute(qt, kt, arg):
    """Reference O(L^2 D) scan with the same scores; for tests and benchmarks."""
    D, L = qt.shape
    for i in range(L):
        best = -np.inf
        bestj = 0
        for j in range(i + 1):
            s = qt[0, i] * kt[0, j]
            for d in range(1, D):
                s = s + qt[d, i] * kt[d, j]
            if s > best:
                best = s
                bestj = j
        arg[i] = bestj


@njit(cache=True)
def mips_one(seed, split, index, inp, y):
    """inp [L, 3D], y [L, D]."""
    L, D = y.shape
    s = stream(seed, split, index)
    _unit_rows(s, inp, D)
    qt = np.empty((D, L), dtype=np.float64)
    kt = np.empty((D, L), dtype=np.float64)
    for i in range(L):
        for d in range(D):
            qt[d, i] = inp[i, d]
            kt[d, i] = inp[i, D + d]
    arg = np.empty(L, dtype=np.int64)
    causal_argmax(qt, kt, arg)
    for i in range(L):
        for d in range(D):
            y[i, d] = inp[arg[i], 2 * D + d]


@njit(cache=True, parallel=True)
def mips_fill(seed, split, start, inp, y):
    for b in prange(inp.shape[0]):
        mips_one(seed, split, start + b, inp[b], y[b])


def _keys(cfg):
    return {
        "inputs": KeySpec("float32", (cfg.L, 3 * cfg.D), doc="rows (q_i, k_i, v_i), each unit norm"),
        "targets": KeySpec("float32", (cfg.L, cfg.D), doc="v_{i*}, i* = argmax_{j<=i} <q_i, k_j> (ties: smallest j)"),
    }


def _fill(cfg, seed, split, start, out, fixed):
    mips_fill(seed, split, start, out["inputs"], out["targets"])


TASKS = [
    Task(
        name="mips",
        config=MipsConfig,
        summary="causal maximum inner product search: return the value of the best-matching earlier key",
        keys=_keys,
        fill=_fill,
        show=preview,
        card="q, k, v in R^(L x D) with unit rows; input rows (q_i, k_i, v_i); target "
        "y_i = v_{i*}, i* = argmax_{j<=i} <q_i, k_j>, ties to the smallest j.",
    ),
]
