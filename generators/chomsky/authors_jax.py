"""The authors' own batches of their 9 jitted Chomsky tasks, replayed without JAX.

``draw(name, count, seed, length, params) -> (inputs, targets)`` gives, as int64 arrays,
exactly ``np.argmax(b["input"], -1)`` and ``np.argmax(b["output"], -1)`` of
``b = Task(**params).sample_batch(jax.random.PRNGKey(seed), count, length)`` run by JAX 0.10.2
with ``jax_threefry_partitionable=False``, Task built as experiments/constants.py TASK_BUILDERS
builds it (checkout 2b8eb4be). Single-output tasks give ``targets`` of shape [count]. Every
one-hot these tasks build holds an id in range, so the argmax is the id itself.

The random arrays are drawn with jax_random.py's primitives in the authors' order; the answers
are computed here, the way their code computes them (including its int32 wrap-around):

- even-pairs, parity-check, cycle-navigation, reverse-string, duplicate-string, odds-first,
  bucket-sort: one ``randint(key, (count, length), 0, V)`` (V = 2, 2, 3, vocab_size ...), then
  the answer of tasks/regular/even_pairs.py 42-57, parity_check.py 42-50,
  cycle_navigation.py 52-60, tasks/dcf/reverse_string.py 42-47, tasks/cs/duplicate_string.py
  52-59, odds_first.py 52-60, bucket_sort.py 50-64.
- modular-arithmetic (tasks/regular/modular_arithmetic.py 153-188): an even length is made
  one shorter; the key is split in two; ``randint(k1, (count, length // 2 + 1), 0, modulus)``
  gives the numbers, ``choice(k2, modulus + codes, (count, length // 2))`` the operators
  (codes in the order of ``operators``: + 0, - 1, * 2, _ 3). Their label (lines 37-117):
  blanks read as '+', a '-' negates the number after it and reads as '+', products of
  '*'-joined numbers are summed, all in int32 (so long products wrap modulo 2**32), then taken
  modulo ``modulus`` (the sign of the divisor).
- missing-duplicate-string (tasks/cs/missing_duplicate_string.py 45-87): length 1 gives ones;
  else the key is split in two, ``randint(k1, (count, length // 2), 0, 2)`` is the half,
  ``randint(k2, (count,), 0, 2 * (length // 2))`` the position hidden by 2 in the doubled
  string; an odd length appends a 3.

Length 0 is refused where their code raises (modular-arithmetic, missing-duplicate-string).
Seeds: any Python int in [-2**63, 2**63) (jax_random.prng_key: the key is (0, seed mod 2**32)).
"""
import operator

import numpy as np
from numba import njit

from longsynth.generators.chomsky import jax_random as jr

M32 = 0xFFFFFFFF
OPERATOR_CODES = {"+": 0, "-": 1, "*": 2, "_": 3}  # their OP_BY_CHARACTER (modular_arithmetic.py 34)
DEFAULTS = {
    "even-pairs": {},
    "parity-check": {},
    "cycle-navigation": {},
    "modular-arithmetic": {"modulus": 5, "operators": "+*-"},  # their ('+', '*', '-')
    "reverse-string": {"vocab_size": 2},
    "duplicate-string": {"vocab_size": 2},
    "missing-duplicate-string": {},
    "odds-first": {"vocab_size": 2},
    "bucket-sort": {"vocab_size": 5},
}
TASKS = tuple(DEFAULTS)
_SIZE = {"even-pairs": 2, "parity-check": 2, "cycle-navigation": 3}
CYCLE = 5  # cycle_navigation.py 46-49


@njit(cache=True)
def _arith_fill(nums, ops, m, inp, tgt):
    """Interleave numbers and operators into inp and write their (int32) label into tgt."""
    minus, times = m + 1, m + 2
    for b in range(inp.shape[0]):
        k_max = nums.shape[1]
        for k in range(k_max):
            inp[b, 2 * k] = nums[b, k]
        for k in range(k_max - 1):
            inp[b, 2 * k + 1] = ops[b, k]
        total = 0
        term = nums[b, 0] & M32
        for k in range(1, k_max):
            op = ops[b, k - 1]
            v = -nums[b, k] if op == minus else nums[b, k]
            if op == times:
                term = (term * v) & M32
            else:  # '+', '-' (now '+') and '_' (read as '+') end a term
                total = (total + term) & M32
                term = v & M32
        total = (total + term) & M32
        signed = total - (1 << 32) if total >= (1 << 31) else total
        tgt[b] = signed % m


def _check(name, count, length, params):
    if name not in DEFAULTS:
        raise ValueError(f"no jitted authors' task {name!r}; known: {', '.join(TASKS)}")
    count, length = operator.index(count), operator.index(length)
    if count < 0 or length < 0:
        raise ValueError(f"count and length must be >= 0, got {count}, {length}")
    params = dict(params or {})
    unknown = set(params) - set(DEFAULTS[name])
    if unknown:
        raise ValueError(f"{name} takes no parameter {', '.join(sorted(unknown))}")
    p = {**DEFAULTS[name], **params}
    if "vocab_size" in p and not 1 <= operator.index(p["vocab_size"]) < 1 << 31:
        raise ValueError(f"vocab_size must be >= 1, got {p['vocab_size']}")
    if name == "modular-arithmetic":
        if not 1 <= operator.index(p["modulus"]) < (1 << 31) - 4:
            raise ValueError(f"modulus must be >= 1, got {p['modulus']}")
        if not isinstance(p["operators"], str) or set(p["operators"]) - set(OPERATOR_CODES):
            raise ValueError(f"operators must be a string of {''.join(OPERATOR_CODES)}, got {p['operators']!r}")
    if length == 0 and name in ("modular-arithmetic", "missing-duplicate-string"):
        raise ValueError(f"the authors' {name} cannot sample length 0 (their code raises)")
    return count, length, p


def _modular_arithmetic(key, count, length, modulus, operators):
    if length % 2 != 1:
        length -= 1
    k1, k2 = jr.split(key, 2)
    nums = jr.randint(k1, (count, length // 2 + 1), 0, modulus)
    codes = np.array([OPERATOR_CODES[c] for c in operators], dtype=np.int64)
    if count * (length // 2) and not codes.size:
        raise ValueError("operators is empty but the expressions need operators (their choice raises)")
    ops = jr.choice(k2, modulus + codes, (count, length // 2))
    inputs = np.empty((count, length), dtype=np.int64)
    targets = np.empty(count, dtype=np.int64)
    _arith_fill(nums, ops, modulus, inputs, targets)
    return inputs, targets


def _missing_duplicate(key, count, length):
    if length == 1:
        return np.ones((count, 1), dtype=np.int64), np.ones(count, dtype=np.int64)
    k1, k2 = jr.split(key, 2)
    half = length // 2
    strings = jr.randint(k1, (count, half), 0, 2)
    where = jr.randint(k2, (count,), 0, 2 * half)
    inputs = np.full((count, length), 3, dtype=np.int64)
    inputs[:, :half] = strings
    inputs[:, half:2 * half] = strings
    rows = np.arange(count)
    targets = inputs[rows, where].copy()
    inputs[rows, where] = 2
    return inputs, targets


def draw(name, count, seed, length, params=None):
    """The authors' batch of task ``name``: (inputs, targets) int64, as the module docstring says."""
    count, length, p = _check(name, count, length, params)
    key = jr.prng_key(seed)
    if name == "modular-arithmetic":
        return _modular_arithmetic(key, count, length, p["modulus"], p["operators"])
    if name == "missing-duplicate-string":
        return _missing_duplicate(key, count, length)
    x = jr.randint(key, (count, length), 0, p.get("vocab_size", _SIZE.get(name)))
    if name == "even-pairs":
        y = np.count_nonzero(x[:, 1:] != x[:, :-1], axis=1) % 2
    elif name == "parity-check":
        y = x.sum(axis=1) % 2
    elif name == "cycle-navigation":
        y = (x.sum(axis=1) - length) % CYCLE
    elif name == "reverse-string":
        y = x[:, ::-1]
    elif name == "duplicate-string":
        y = np.concatenate([x, x], axis=1)
    elif name == "odds-first":
        y = np.concatenate([x[:, 1::2], x[:, ::2]], axis=1)
    else:  # bucket-sort
        y = np.sort(x, axis=1)
    return x, np.ascontiguousarray(y, dtype=np.int64)
