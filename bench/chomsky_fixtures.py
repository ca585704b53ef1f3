"""Remake tests/data/chomsky_authors.npz by running the authors' own task samplers.

    python bench/chomsky_fixtures.py CHECKOUT [OUT]

CHECKOUT is a checkout of google-deepmind/neural_networks_chomsky_hierarchy (2b8eb4be); its
``tasks`` package is imported as ``neural_networks_chomsky_hierarchy.tasks`` (through a link in
a temporary folder) and each task is built as their ``experiments/constants.py``'s
TASK_BUILDERS builds it. It needs jax, chex, dm-tree and tqdm (a CPU JAX is enough); the tests
that read the file need none of them. Nothing of theirs is copied: the script stores what their
``sample_batch`` returns, as class ids (the argmax of their one-hot arrays).

Stored arrays:
- ``pairs/<task>/<n>/input`` and ``.../output`` (int8 [PAIRS, n'] and [PAIRS, o]): raw
  (input, output) pairs of length n, for the test that our definition's answer (the twin's
  ``answer``) is theirs on their own inputs;
- ``law/<task>/<n>/input`` and ``.../output`` (int32 [n', input_size] and [o, output_size]):
  how often each class sits at each position in LAW samples of length n, for the test that
  our law is theirs;
- ``raw/<task>/<n>/input`` and ``.../output`` (int8 [RAW, n] and [RAW, 1]): RAW whole samples of
  the tasks in RAW_TASKS, whose structure (the split of the brackets, the place of 'x') the
  per-position counts do not show; drawn last, so the arrays above do not depend on them.
``meta`` (JSON): the commit, the JAX version, PAIRS, LAW, RAW and the lengths.
"""
import functools
import json
import os
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "chomsky_authors.npz"
COMMIT = "2b8eb4bee872acf5b637fcc672f01c06939dc4ef"
PAIRS = 24
LAW = 4000
PAIR_LENGTHS = list(range(1, 13)) + [17, 40, 100]
LAW_LENGTHS = [1, 2, 3, 4, 5, 6, 9, 16, 40]
RAW = 4000
RAW_LENGTHS = [9, 16, 40]
RAW_TASKS = ["modular-arithmetic-brackets", "solve-equation"]  # laws the per-position counts cannot see
SUB = 500  # samples per sample_batch call (their Python tasks build lists of this many)


def _tasks(root):
    """{our name without 'chomsky-': a builder of their task, as TASK_BUILDERS (called with no arguments) or with
    their constructor's arguments (modulus, mult, operators as a string of characters, vocab_size)}."""
    tmp = tempfile.mkdtemp()
    os.symlink(os.path.abspath(root), os.path.join(tmp, "neural_networks_chomsky_hierarchy"))
    sys.path.insert(0, tmp)
    from neural_networks_chomsky_hierarchy.tasks.cs import (binary_addition, binary_multiplication, bucket_sort,
                                                             compute_sqrt, duplicate_string,
                                                             missing_duplicate_string, odds_first)
    from neural_networks_chomsky_hierarchy.tasks.dcf import (modular_arithmetic_brackets, reverse_string,
                                                              solve_equation, stack_manipulation)
    from neural_networks_chomsky_hierarchy.tasks.regular import (cycle_navigation, even_pairs,
                                                                  modular_arithmetic, parity_check)
    return {
        "even-pairs": even_pairs.EvenPairs,
        "parity-check": parity_check.ParityCheck,
        "cycle-navigation": cycle_navigation.CycleNavigation,
        # a new instance per call: their operators are a generator, used up by the first trace
        "modular-arithmetic": modular_arithmetic.ModularArithmetic,
        "modular-arithmetic-brackets": functools.partial(modular_arithmetic_brackets.ModularArithmeticBrackets,
                                                         mult=True),
        "reverse-string": reverse_string.ReverseString,
        "solve-equation": solve_equation.SolveEquation,
        "stack-manipulation": stack_manipulation.StackManipulation,
        "binary-addition": binary_addition.BinaryAddition,
        "binary-multiplication": binary_multiplication.BinaryMultiplication,
        "compute-sqrt": compute_sqrt.ComputeSqrt,
        "duplicate-string": duplicate_string.DuplicateString,
        "missing-duplicate-string": missing_duplicate_string.MissingDuplicateString,
        "odds-first": odds_first.OddsFirst,
        "bucket-sort": bucket_sort.BucketSort,
    }


def _ids(onehot):
    """Class ids of a one-hot batch; an output of one token is given as [B, 1]."""
    a = np.asarray(onehot)
    ids = a.argmax(-1)
    return ids[:, None] if ids.ndim == 1 else ids


def _batch(build, key, count, n):
    import jax

    task = build()
    inputs, outputs = [], []
    for k in range(0, count, SUB):
        key, sub = jax.random.split(key)
        b = task.sample_batch(sub, min(SUB, count - k), n)
        inputs.append(_ids(b["input"]))
        outputs.append(_ids(b["output"]))
    sizes = (task.input_size, task.output_size)
    return np.concatenate(inputs), np.concatenate(outputs), sizes, key


def _counts(ids, size):
    out = np.zeros((ids.shape[1], size), dtype=np.int32)
    for t in range(ids.shape[1]):
        out[t] = np.bincount(ids[:, t], minlength=size)[:size]
    return out


def main(root, out=OUT):
    import jax

    random.seed(0)
    np.random.seed(0)
    key = jax.random.PRNGKey(0)
    arrays = {}
    tasks = _tasks(root)
    for name, build in tasks.items():
        for n in PAIR_LENGTHS:
            x, y, _, key = _batch(build, key, PAIRS, n)
            arrays[f"pairs/{name}/{n}/input"] = x.astype(np.int8)
            arrays[f"pairs/{name}/{n}/output"] = y.astype(np.int8)
        for n in LAW_LENGTHS:
            x, y, (isize, osize), key = _batch(build, key, LAW, n)
            arrays[f"law/{name}/{n}/input"] = _counts(x, isize)
            arrays[f"law/{name}/{n}/output"] = _counts(y, osize)
        print(name, "done", flush=True)
    for name in RAW_TASKS:
        for n in RAW_LENGTHS:
            x, y, _, key = _batch(tasks[name], key, RAW, n)
            arrays[f"raw/{name}/{n}/input"] = x.astype(np.int8)
            arrays[f"raw/{name}/{n}/output"] = y.astype(np.int8)
    meta = {"commit": COMMIT, "jax": jax.__version__, "pairs": PAIRS, "law": LAW, "pair_lengths": PAIR_LENGTHS,
            "law_lengths": LAW_LENGTHS, "raw": RAW, "raw_lengths": RAW_LENGTHS, "raw_tasks": RAW_TASKS}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], *(Path(a) for a in sys.argv[2:3]))
