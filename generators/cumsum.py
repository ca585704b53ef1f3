"""CumSum: normalised noise in, scaled running sum out (DLR paper, section 3.1).

Definition (TASKS.md): x in R^L, i.i.d. N(0, 1) divided by max |x_i|;
y_i = (i + 1)^(-1/2) * sum_{j <= i} x_j. Inputs [L, 1], targets [L, 1], float32.

Draw order (the reproducibility contract, see ``longsynth.rng``): the sample's stream
yields L normals, x_0 first. The sum runs in float64 over the float32 inputs.

Worked example (L = 4): x = [0.5, -1.0, 0.25, 0.75]
    y = [0.5/1, -0.5/sqrt(2), -0.25/sqrt(3), 0.5/2] = [0.5, -0.35355, -0.14434, 0.25]
"""
import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from longsynth.rng import stream, unit_inf_noise
from longsynth.task import KeySpec, Task, param


@dataclass(frozen=True)
class CumsumConfig:
    L: int = param(4096, "sequence length", lo=1, hi=1 << 24)


@njit(cache=True)
def cumsum_one(seed, split, index, x, y):
    """One sample into x [L] and y [L] (float32 views)."""
    s = stream(seed, split, index)
    unit_inf_noise(s, x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += np.float64(x[i])
        y[i] = acc / math.sqrt(i + 1.0)


@njit(cache=True, parallel=True)
def cumsum_fill(seed, split, start, x, y):
    """Samples start..start+n-1 into x [n, L] and y [n, L]."""
    for b in prange(x.shape[0]):
        cumsum_one(seed, split, start + b, x[b], y[b])


def _keys(cfg):
    return {
        "inputs": KeySpec("float32", (cfg.L, 1), doc="normalised noise x"),
        "targets": KeySpec("float32", (cfg.L, 1), doc="(i+1)^-1/2 * cumulative sum of x"),
    }


def _fill(cfg, seed, split, start, out, fixed):
    cumsum_fill(seed, split, start, out["inputs"][..., 0], out["targets"][..., 0])


TASK = Task(
    name="cumsum",
    config=CumsumConfig,
    summary="running sum of normalised noise, scaled by (i+1)^-1/2",
    keys=_keys,
    fill=_fill,
    card="x in R^L is N(0,1) noise divided by max|x|; target y_i = (i+1)^(-1/2) sum_{j<=i} x_j.",
)
