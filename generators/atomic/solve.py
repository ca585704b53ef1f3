"""Solve and solve-fixed: read a linear system A X = B, output X.

Definition (docs/tasks/atomic.md, "solve"; the authors' code, not the paper's text): N is
the largest integer with N^2 + 2N <= L (N = 63 at L = 4096), so the N rightmost outputs
lie in the zero padding.
A is a Haar-random orthonormal N x N matrix: the Q factor of the QR decomposition of a
Gaussian matrix G with the sign fix Q <- Q diag(sign(diag R)) (equivalently: the R with
positive diagonal). X is a random unit vector, B = A X. Input [L, 1] float32:
(a_1, b_1, a_2, b_2, ..., a_N, b_N, 0, ..., 0) with a_i row i of A. Target [N, 1] = X.
Extra key ``N`` (int64 scalar). In solve-fixed A is drawn once per dataset from the root
seed (stored in the manifest) and only X varies.

Precision: the QR is modified Gram-Schmidt in float64 (plain loops, no LAPACK, so bytes
do not depend on a BLAS build); its R has a positive diagonal, so Q is the sign-fixed
factor. X = g / |g| in float64. The stored A and X are float32 roundings, and
b_i = float32(sum_j a_ij x_j) summed left to right in float64 over the *stored* float32
a and x, so the stored system holds to float32 rounding of B.

Draw order:
    solve         stream(seed, split, index): N^2 normals for G (row-major, G_00 first),
                  then N normals for X.
    solve-fixed   stream(seed, FIXED, 0): N^2 normals for G; stream(seed, split, index):
                  N normals for X.

Worked example (L = 8, so N = 2, since 2^2 + 2*2 = 8):
    G = [[1, 1], [-1, 1]]  ->  Q = [[0.70711, 0.70711], [-0.70711, 0.70711]],
    R = [[1.41421, 0], [0, 1.41421]]; X from g = (3, 4): X = (0.6, 0.8);
    B = A X = (0.98995, 0.14142); input [0.70711, 0.70711, 0.98995,
    -0.70711, 0.70711, 0.14142, 0, 0]; target [0.6, 0.8]; N = 2.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.generators._preview import preview
from longsynth.rng import normal_fill as normals
from longsynth.rng import FIXED, stream
from longsynth.task import KeySpec, Task, param


@dataclass(frozen=True)
class SolveConfig:
    L: int = param(4096, "input length; the system size N is the largest with N^2 + 2N <= L", lo=3, hi=1 << 20)


@dataclass(frozen=True)
class SolveFixedConfig:
    L: int = param(4096, "input length; the system size N is the largest with N^2 + 2N <= L", lo=3, hi=1 << 20)


def system_size(L):
    """Largest N with N^2 + 2N <= L, i.e. (N + 1)^2 <= L + 1."""
    n = math.isqrt(L + 1) - 1
    return n


@njit(cache=True)
def haar_from_stream(s, n, a):
    """a [n, n] float64 <- Q of G = QR (positive diag R), G drawn row-major from s.

    Modified Gram-Schmidt on the columns: for k = 0..n-1, column k is divided by its
    norm (sum of squares top to bottom), then r_j = sum_i q_ik a_ij (top to bottom) and
    a_ij -= q_ik r_j for every later column j. Loops run along rows (j inner) so they
    vectorise without reassociating any sum.
    """
    f = a.ravel()
    normals(s, f)
    r = np.empty(n, dtype=np.float64)
    for k in range(n):
        ss = 0.0
        for i in range(n):
            ss += f[i * n + k] * f[i * n + k]
        nrm = math.sqrt(ss)
        for i in range(n):
            f[i * n + k] = f[i * n + k] / nrm
        m = n - k - 1
        for j in range(m):
            r[j] = 0.0
        for i in range(n):
            qik = f[i * n + k]
            base = i * n + k + 1
            for j in range(m):
                r[j] += qik * f[base + j]
        for i in range(n):
            qik = f[i * n + k]
            base = i * n + k + 1
            for j in range(m):
                f[base + j] -= qik * r[j]


@njit(cache=True)
def _write_system(s, a32, x, y):
    """X from s (n normals, unit norm) into y; x <- (a_1, b_1, ..., a_n, b_n, 0...)."""
    n = a32.shape[0]
    g = np.empty(n, dtype=np.float64)
    normals(s, g)
    ss = 0.0
    for j in range(n):
        ss += g[j] * g[j]
    nrm = math.sqrt(ss)
    for j in range(n):
        y[j] = g[j] / nrm
    xs = np.empty(n, dtype=np.float64)
    for j in range(n):
        xs[j] = y[j]
    b = np.zeros(n, dtype=np.float64)
    i = 0
    while i + 4 <= n:  # four rows at a time: independent chains, each summed left to right
        b0 = b1 = b2 = b3 = 0.0
        for j in range(n):
            b0 += np.float64(a32[i, j]) * xs[j]
            b1 += np.float64(a32[i + 1, j]) * xs[j]
            b2 += np.float64(a32[i + 2, j]) * xs[j]
            b3 += np.float64(a32[i + 3, j]) * xs[j]
        b[i], b[i + 1], b[i + 2], b[i + 3] = b0, b1, b2, b3
        i += 4
    for r in range(i, n):
        acc = 0.0
        for j in range(n):
            acc += np.float64(a32[r, j]) * xs[j]
        b[r] = acc
    p = 0
    for i in range(n):
        for j in range(n):
            x[p + j] = a32[i, j]
        x[p + n] = b[i]
        p += n + 1
    for t in range(p, x.shape[0]):
        x[t] = 0.0


@njit(cache=True)
def solve_one(seed, split, index, x, y, nout):
    """x [L], y [N], nout [1]."""
    n = y.shape[0]
    s = stream(seed, split, index)
    a = np.empty((n, n), dtype=np.float64)
    haar_from_stream(s, n, a)
    a32 = a.astype(np.float32)
    _write_system(s, a32, x, y)
    nout[0] = n


@njit(cache=True)
def solve_fixed_one(seed, split, index, a32, x, y, nout):
    s = stream(seed, split, index)
    _write_system(s, a32, x, y)
    nout[0] = a32.shape[0]


@njit(cache=True)
def fixed_matrix(seed, n):
    """float32 [n, n]: the dataset's A, from stream(seed, FIXED, 0)."""
    a = np.empty((n, n), dtype=np.float64)
    haar_from_stream(stream(seed, FIXED, 0), n, a)
    return a.astype(np.float32)


@njit(cache=True, parallel=True)
def solve_fill(seed, split, start, x, y, nout):
    for b in prange(x.shape[0]):
        solve_one(seed, split, start + b, x[b], y[b], nout[b : b + 1])


@njit(cache=True, parallel=True)
def solve_fixed_fill(seed, split, start, a32, x, y, nout):
    for b in prange(x.shape[0]):
        solve_fixed_one(seed, split, start + b, a32, x[b], y[b], nout[b : b + 1])


def _keys(cfg):
    n = system_size(cfg.L)
    return {
        "inputs": KeySpec("float32", (cfg.L, 1), doc="(a_1, b_1, ..., a_N, b_N, zeros)"),
        "targets": KeySpec("float32", (n, 1), doc="X, the unit solution of A X = B"),
        "N": KeySpec("int64", (), doc="system size N"),
    }


@functools.lru_cache(maxsize=64)
def _fixed(cfg, seed):
    a = fixed_matrix(seed, system_size(cfg.L))
    a.setflags(write=False)
    return {"A": a}


def _fill_solve(cfg, seed, split, start, out, fixed):
    solve_fill(seed, split, start, out["inputs"][..., 0], out["targets"][..., 0], out["N"])


def _fill_solve_fixed(cfg, seed, split, start, out, fixed):
    a = np.ascontiguousarray(fixed["A"], dtype=np.float32)
    solve_fixed_fill(seed, split, start, a, out["inputs"][..., 0], out["targets"][..., 0], out["N"])


TASKS = [
    Task(
        name="solve",
        config=SolveConfig,
        summary="read a random orthonormal system A X = B row by row, output X",
        keys=_keys,
        fill=_fill_solve,
        show=preview,
        card="N largest with N^2 + 2N <= L; A Haar orthonormal (QR of a Gaussian, sign-fixed), "
        "X a random unit vector, B = AX; input (a_1, b_1, ..., a_N, b_N, 0...); target X.",
    ),
    Task(
        name="solve-fixed",
        config=SolveFixedConfig,
        summary="as solve, with one matrix A for the whole dataset",
        keys=_keys,
        fill=_fill_solve_fixed,
        fixed=_fixed,
        show=preview,
        card="as solve, but A is drawn once from the root seed (the manifest's 'fixed' entry) and "
        "shared by all samples; only X varies.",
    ),
]
