"""Select and select-fixed: copy M values from (random or fixed) marked positions.

Definition (docs/tasks/atomic.md, "select"): v in R^{L+M} normalised noise (N(0, 1)
draws divided by their max |v_i|); M distinct positions i_1 < ... < i_M drawn uniformly among 0..L+M-1; v is
padded with M zeros. Inputs [L + 2M, 2] float32: channel 0 the padded v, channel 1 1.0
at the selected positions and 0 elsewhere. Targets [M, 1], y_j = v_{i_j}. Extra key
``positions`` int64 [M] (i_1..i_M, ascending). In select-fixed the positions are drawn once
per dataset from the root seed and shared by every sample (stored in the manifest).

Draw order:
    select        stream(seed, split, index): L + M normals for v (v_0 first), then the
                  positions by Floyd's algorithm with n = L + M: for t = n - M, ..., n - 1:
                  r = randint(t + 1); if r is already chosen choose t, else choose r.
                  (Every M-subset is equally likely.) Positions are then sorted.
    select-fixed  stream(seed, FIXED, 0): the positions, by the same Floyd procedure;
                  stream(seed, split, index): L + M normals for v.

Worked example (L = 4, M = 2): v = [0.5, -1.0, 0.25, 0.75, -0.5, 0.125],
positions (1, 4):
    inputs channel 0  [0.5, -1.0, 0.25, 0.75, -0.5, 0.125, 0, 0]
    inputs channel 1  [0,    1,   0,    0,     1,   0,     0, 0]
    targets           [-1.0, -0.5]
"""
import functools
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.rng import unit_inf_noise
from longsynth.generators._preview import preview
from longsynth.rng import FIXED, randint, stream
from longsynth.task import KeySpec, Task, param

MAX_L = 1 << 24


@dataclass(frozen=True)
class SelectConfig:
    L: int = param(4096, "length of the noise before the M extra values and M padding zeros", lo=1, hi=MAX_L)
    M: int = param(32, "number of selected positions (target length)", lo=1, hi=1 << 16)


@dataclass(frozen=True)
class SelectFixedConfig:
    L: int = param(4096, "length of the noise before the M extra values and M padding zeros", lo=1, hi=MAX_L)
    M: int = param(32, "number of selected positions, the same for every sample", lo=1, hi=1 << 16)


@njit(cache=True)
def floyd_mark(s, n, m, flags):
    """flags[:n] <- 0, then 1.0 at a uniform m-subset of 0..n-1 (Floyd's algorithm)."""
    for i in range(n):
        flags[i] = 0.0
    for t in range(n - m, n):
        r = randint(s, t + 1)
        if flags[r] != 0.0:
            flags[t] = 1.0
        else:
            flags[r] = 1.0


@njit(cache=True)
def select_one(seed, split, index, inp, y, pos):
    """inp [L + 2M, 2], y [M], pos [M]: random positions."""
    m = y.shape[0]
    n = inp.shape[0] - m
    s = stream(seed, split, index)
    unit_inf_noise(s, inp[:n, 0])
    floyd_mark(s, n, m, inp[:, 1])
    for i in range(n, n + m):
        inp[i, 0] = 0.0
        inp[i, 1] = 0.0
    j = 0
    for i in range(n):
        if inp[i, 1] != 0.0:
            pos[j] = i
            y[j] = inp[i, 0]
            j += 1


@njit(cache=True)
def select_fixed_one(seed, split, index, fixed_pos, inp, y, pos):
    """inp [L + 2M, 2], y [M], pos [M]: positions fixed_pos (ascending)."""
    m = y.shape[0]
    n = inp.shape[0] - m
    s = stream(seed, split, index)
    unit_inf_noise(s, inp[:n, 0])
    for i in range(n, n + m):
        inp[i, 0] = 0.0
    for i in range(n + m):
        inp[i, 1] = 0.0
    for j in range(m):
        p = fixed_pos[j]
        inp[p, 1] = 1.0
        pos[j] = p
        y[j] = inp[p, 0]


@njit(cache=True)
def fixed_positions(seed, n, m):
    """Ascending int64 [m]: Floyd's m-subset of 0..n-1 from stream(seed, FIXED, 0)."""
    s = stream(seed, FIXED, 0)
    flags = np.empty(n, dtype=np.float32)
    floyd_mark(s, n, m, flags)
    out = np.empty(m, dtype=np.int64)
    j = 0
    for i in range(n):
        if flags[i] != 0.0:
            out[j] = i
            j += 1
    return out


@njit(cache=True, parallel=True)
def select_fill(seed, split, start, inp, y, pos):
    for b in prange(inp.shape[0]):
        select_one(seed, split, start + b, inp[b], y[b], pos[b])


@njit(cache=True, parallel=True)
def select_fixed_fill(seed, split, start, fixed_pos, inp, y, pos):
    for b in prange(inp.shape[0]):
        select_fixed_one(seed, split, start + b, fixed_pos, inp[b], y[b], pos[b])


def _keys(cfg):
    return {
        "inputs": KeySpec("float32", (cfg.L + 2 * cfg.M, 2), doc="(v padded with M zeros, selection flags)"),
        "targets": KeySpec("float32", (cfg.M, 1), doc="v at the selected positions, in order"),
        "positions": KeySpec("int64", (cfg.M,), doc="selected positions i_1 < ... < i_M"),
    }


@functools.lru_cache(maxsize=64)
def _fixed(cfg, seed):
    pos = fixed_positions(seed, cfg.L + cfg.M, cfg.M)
    pos.setflags(write=False)
    return {"positions": pos}


def _fill_select(cfg, seed, split, start, out, fixed):
    select_fill(seed, split, start, out["inputs"], out["targets"][..., 0], out["positions"])


def _fill_select_fixed(cfg, seed, split, start, out, fixed):
    pos = np.ascontiguousarray(fixed["positions"], dtype=np.int64)
    select_fixed_fill(seed, split, start, pos, out["inputs"], out["targets"][..., 0], out["positions"])


TASKS = [
    Task(
        name="select",
        config=SelectConfig,
        summary="copy the values at M marked random positions",
        keys=_keys,
        fill=_fill_select,
        show=preview,
        card="v in R^(L+M) normalised noise, padded with M zeros; channel 2 marks M uniformly "
        "random distinct positions i_1 < ... < i_M; target y_j = v_{i_j}.",
    ),
    Task(
        name="select-fixed",
        config=SelectFixedConfig,
        summary="copy the values at M marked positions that are the same for every sample",
        keys=_keys,
        fill=_fill_select_fixed,
        fixed=_fixed,
        show=preview,
        card="as select, but the M positions are drawn once from the root seed (see the manifest's "
        "'fixed' entry) and shared by all samples.",
    ),
]
