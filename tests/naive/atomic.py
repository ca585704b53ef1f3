"""Twins of the atomic tasks (docs/tasks/atomic.md): cumsum, shift, cummax, reverse, sort,
context-shift, select, select-fixed, mips, solve, solve-fixed."""
import math

import numpy as np

from .core import FIXED, SPLITS, Stream


# ---------------------------------------------------------------- atomic tasks


def cumsum(seed, split, index, L):
    """docs/tasks/atomic.md: x normalised noise; y_i = (i+1)^-1/2 sum_{j<=i} x_j. Returns inputs, targets."""
    x = Stream(seed, SPLITS[split], index).unit_inf_noise(L)
    y = np.cumsum(x.astype(np.float64)) / np.sqrt(np.arange(1, L + 1))
    return {"inputs": x[:, None], "targets": y.astype(np.float32)[:, None]}


# ---------------------------------------------------------------- atomic tasks
# Written from docs/tasks/atomic.md and the draw orders documented in generators/{noise,select,mips,
# solve}.py. Each returns the sample dict (inputs, targets, extras) as the kernel should.


def _noise(seed, split, index, n):
    return Stream(seed, SPLITS[split], index).unit_inf_noise(n)


def shift(seed, split, index, L, C):
    x = _noise(seed, split, index, L)
    y = np.zeros((L, C), dtype=np.float32)
    for j in range(C):
        o = (j * L) // C
        y[o:, j] = x[: L - o]
    return {"inputs": x[:, None], "targets": y}


def cummax(seed, split, index, L):
    x = _noise(seed, split, index, L)
    return {"inputs": x[:, None], "targets": np.maximum.accumulate(x)[:, None]}


def reverse(seed, split, index, L):
    x = _noise(seed, split, index, L)
    inputs = np.concatenate([x, np.zeros(L, dtype=np.float32)])
    return {"inputs": inputs[:, None], "targets": x[::-1].copy()[:, None]}


def exact_int(v):
    """A float32 value as an exact Python integer multiple of 2^-149 (its smallest ulp)."""
    return int(np.float64(v) * 2.0**149)


def sort_order(x):
    """Indices of x ordered by the exact |x_i - x_0|, ties by index (Python's stable sort)."""
    n = [exact_int(v) for v in x]
    return sorted(range(len(x)), key=lambda i: (abs(n[i] - n[0]), i))


def sort(seed, split, index, L):
    x = _noise(seed, split, index, L)
    inputs = np.concatenate([x, np.zeros(L, dtype=np.float32)])
    return {"inputs": inputs[:, None], "targets": x[sort_order(x)][:, None]}


def context_shift(seed, split, index, L):
    st = Stream(seed, SPLITS[split], index)
    s = st.randint(L - 1)
    angle = 2.0 * math.pi * s / L
    xp = np.concatenate([np.array([math.cos(angle), math.sin(angle)], dtype=np.float32), st.unit_inf_noise(L - 2)])
    y = np.zeros(L, dtype=np.float32)
    y[s:] = xp[: L - s]
    return {"inputs": xp[:, None], "targets": y[:, None], "s": np.array(s, dtype=np.int64)}


def floyd(st, n, m):
    """Floyd's uniform m-subset of 0..n-1, as documented in generators/atomic/select.py; sorted."""
    chosen = set()
    for t in range(n - m, n):
        r = st.randint(t + 1)
        chosen.add(t if r in chosen else r)
    return sorted(chosen)


def _select_sample(v, pos, L, M):
    inputs = np.zeros((L + 2 * M, 2), dtype=np.float32)
    inputs[: L + M, 0] = v
    inputs[pos, 1] = 1.0
    return {"inputs": inputs, "targets": v[pos][:, None], "positions": np.array(pos, dtype=np.int64)}


def select(seed, split, index, L, M):
    st = Stream(seed, SPLITS[split], index)
    v = st.unit_inf_noise(L + M)
    return _select_sample(v, floyd(st, L + M, M), L, M)


def select_fixed_positions(seed, L, M):
    return np.array(floyd(Stream(seed, FIXED, 0), L + M, M), dtype=np.int64)


def select_fixed(seed, split, index, L, M):
    v = _noise(seed, split, index, L + M)
    return _select_sample(v, list(select_fixed_positions(seed, L, M)), L, M)


def _unit(g):
    ss = 0.0
    for v in g:
        ss += v * v
    return g / math.sqrt(ss)


def mips_scores(q, k):
    """float64 scores [L, L]: ((q_0 k_0 + q_1 k_1) + ...) left to right, from float32 rows."""
    q, k = q.astype(np.float64), k.astype(np.float64)
    s = q[:, None, 0] * k[None, :, 0]
    for d in range(1, q.shape[1]):
        s = s + q[:, None, d] * k[None, :, d]
    return s


def mips_argmax(q, k):
    """Causal argmax_{j <= i} with ties to the smallest j (np.argmax returns the first)."""
    s = mips_scores(q, k)
    s[np.triu_indices(len(q), 1)] = -np.inf
    return s.argmax(axis=1)


def mips(seed, split, index, L, D):
    st = Stream(seed, SPLITS[split], index)
    inputs = np.empty((L, 3 * D), dtype=np.float32)
    for i in range(L):
        for part in range(3):
            inputs[i, part * D : (part + 1) * D] = _unit(st.normals(D)).astype(np.float32)
    q, k, v = inputs[:, :D], inputs[:, D : 2 * D], inputs[:, 2 * D :]
    return {"inputs": inputs, "targets": v[mips_argmax(q, k)]}


def solve_size(L):
    n = 0
    while (n + 1) ** 2 + 2 * (n + 1) <= L:
        n += 1
    return n


def haar(st, n):
    """Q of the QR of a row-major Gaussian G, sign-fixed so that diag(R) > 0 (LAPACK)."""
    g = st.normals(n * n).reshape(n, n)
    q, r = np.linalg.qr(g)
    return q * np.sign(np.diag(r))


def _solve_sample(st, a, L):
    n = a.shape[0]
    a32 = a.astype(np.float32)
    x32 = _unit(st.normals(n)).astype(np.float32)
    b = a32.astype(np.float64) @ x32.astype(np.float64)
    rows = np.concatenate([a32, b.astype(np.float32)[:, None]], axis=1).ravel()
    inputs = np.zeros(L, dtype=np.float32)
    inputs[: rows.size] = rows
    return {"inputs": inputs[:, None], "targets": x32[:, None], "N": np.array(n, dtype=np.int64)}


def solve(seed, split, index, L):
    st = Stream(seed, SPLITS[split], index)
    return _solve_sample(st, haar(st, solve_size(L)), L)


def solve_fixed_matrix(seed, L):
    return haar(Stream(seed, FIXED, 0), solve_size(L))


def solve_fixed(seed, split, index, L):
    return _solve_sample(Stream(seed, SPLITS[split], index), solve_fixed_matrix(seed, L), L)
