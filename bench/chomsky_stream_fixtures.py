"""Remake tests/data/chomsky_stream.npz: the authors' exact batches for given (seed, length, count).

    /tmp/jaxenv/bin/python bench/chomsky_stream_fixtures.py CHECKOUT [OUT]

CHECKOUT is a checkout of google-deepmind/neural_networks_chomsky_hierarchy (2b8eb4be); its
``tasks`` package is imported as ``neural_networks_chomsky_hierarchy.tasks`` (through a link in
a temporary folder) and each task is built as their ``experiments/constants.py`` TASK_BUILDERS
builds it (modular-arithmetic-brackets with ``mult=True`` unless the setting says otherwise).
It needs jax, chex, dm-tree (a CPU JAX is enough); the tests that read the file need none of
them. Nothing of theirs is copied: the script stores what their ``sample_batch`` returns, as
class ids (``np.argmax`` of their one-hot arrays, so an all-zero row reads as 0).

Every setting is run as the exact-stream contract says, before any random call
``jax_threefry_partitionable`` is False, and for each setting:
a fresh task object, ``random.seed(seed)``, ``np.random.seed(seed)``, then
``b = task.sample_batch(jax.random.PRNGKey(seed), count, length)``.

Stored arrays (keys are '/'-joined; PARAMS is ``json.dumps(params, sort_keys=True,
separators=(",", ":"))`` of the constructor arguments under our config names, ``{}`` for the
defaults, e.g. ``{"modulus":7}`` or ``{"operators":"+-"}``):
- ``<task>/<seed>/<length>/<count>/<PARAMS>/inputs``: ``np.argmax(b["input"], -1)``;
- ``<task>/<seed>/<length>/<count>/<PARAMS>/targets``: ``np.argmax(b["output"], -1)``
  (shape [count] for single-output tasks); both stored in the smallest signed dtype that
  holds them (compare values and shape, not dtype);
- ``prim/...``: JAX's own PRNG outputs for the primitive tests of
  ``generators/chomsky/jax_random.py`` (see ``_primitives``; its keys are listed in meta).
``meta`` (JSON, uint8 bytes): the commit, the JAX version, the flag, ``settings`` (a list of
[task, seed, length, count, params] that were stored), ``errors`` (the same for settings where
the authors' code raised, with the exception's type name) and ``prim`` (the prim keys with
what each holds).
"""
import hashlib
import json
import random
import sys
from pathlib import Path

import numpy as np

from chomsky_fixtures import _tasks  # their classes, built as experiments/constants.py 81-113

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "chomsky_stream.npz"
COMMIT = "2b8eb4bee872acf5b637fcc672f01c06939dc4ef"
SEEDS = [0, 1, 42, 2**32 - 1]
LENGTHS = [1, 2, 3, 4, 5, 7, 16, 40, 41, 100, 257]
COUNTS = [1, 3, 17, 128]
VARIANT_SEEDS = [0, 42]
VARIANT_LENGTHS = [1, 2, 3, 7, 40, 41, 257]
EDGES = [(0, 1, 0), (0, 5, 0), (0, 0, 3), (7, 6, 2)]  # (seed, length, count): empty batch, length 0
EXTRAS = {  # (seed, length, count, params): settings a grid does not reach
    # int32 wrap-around of long products: their label differs from the exact value mod 5 here
    "modular-arithmetic": [(2, 61, 128, {"operators": "*"}), (3, 500, 40, {"modulus": 7, "operators": "*+"})],
    "parity-check": [(3, 500, 200, {})],  # more than 2**16 values in one randint
    "missing-duplicate-string": [(2**32 - 1, 500, 150, {})],
}
VARIANTS = {
    "modular-arithmetic": [{"modulus": 7}, {"operators": "+-"}, {"operators": "*"}, {"modulus": 3, "operators": "-_*"}],
    "modular-arithmetic-brackets": [{"mult": False}, {"modulus": 7}],
    "solve-equation": [{"modulus": 7}],
    "reverse-string": [{"vocab_size": 3}],
    "duplicate-string": [{"vocab_size": 3}],
    "odds-first": [{"vocab_size": 3}],
    "bucket-sort": [{"vocab_size": 3}, {"vocab_size": 2}],
}


def _settings(name):
    """[(seed, length, count, params)] for one task: a seed x length grid with rotating counts, the edges
    (count 0, length 0), each variant of its parameters on a smaller grid, and its EXTRAS."""
    out = []
    for i, n in enumerate(LENGTHS):
        for j, seed in enumerate(SEEDS):
            out.append((seed, n, COUNTS[(i + j) % len(COUNTS)], {}))
    out += [(seed, n, count, {}) for seed, n, count in EDGES]
    for params in VARIANTS.get(name, []):
        for i, n in enumerate(VARIANT_LENGTHS):
            for j, seed in enumerate(VARIANT_SEEDS):
                out.append((seed, n, COUNTS[(i + j + 1) % len(COUNTS)], params))
    return out + EXTRAS.get(name, [])


def params_key(params):
    """The PARAMS part of a key."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def _small(a):
    a = np.asarray(a)
    for dt in (np.int8, np.int16, np.int32):
        if a.size == 0 or (a.min() >= np.iinfo(dt).min and a.max() <= np.iinfo(dt).max):
            return a.astype(dt)
    return a.astype(np.int64)


def run_authors(build, seed, length, count, params):
    """Their batch as the contract runs it: (argmax inputs, argmax outputs)."""
    import jax

    task = build(**params)
    random.seed(seed)
    np.random.seed(seed)
    b = task.sample_batch(jax.random.PRNGKey(seed), count, length)
    return np.argmax(np.asarray(b["input"]), -1), np.argmax(np.asarray(b["output"]), -1)


def _primitives(arrays, notes):
    """JAX's threefry block, random_bits layout, split, randint and choice on a few keys."""
    import jax
    import jax.numpy as jnp
    from jax._src.random import threefry2x32 as tf

    rng = np.random.default_rng(20240611)
    keys = np.concatenate([np.array([[0, 0], [0, 1], [0, 42], [0xFFFFFFFF, 0xFFFFFFFF], [1, 0]], np.uint32),
                           rng.integers(0, 2**32, size=(6, 2), dtype=np.uint64).astype(np.uint32)])
    arrays["prim/keys"] = keys
    notes["prim/keys"] = "uint32 [K, 2] raw keys used below"
    x = rng.integers(0, 2**32, size=(2, 257), dtype=np.uint64).astype(np.uint32)
    arrays["prim/block/x"] = x
    blocks = []
    for k in keys:
        y0, y1 = tf.threefry2x32_p.bind(jnp.uint32(k[0]), jnp.uint32(k[1]), jnp.asarray(x[0]), jnp.asarray(x[1]))
        blocks.append(np.stack([np.asarray(y0), np.asarray(y1)]))
    arrays["prim/block/y"] = np.stack(blocks)
    notes["prim/block/y"] = "[K, 2, 257]: threefry2x32 of key k on the word pairs (x[0, i], x[1, i])"
    seeds = [0, 1, 42, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40 + 5, 2**63 - 1, -1, -2**31, -2**31 - 1, -2**63]
    notes["prim/seed/<s>"] = "PRNGKey(s) as uint32 [2], for Python int s"
    for s in seeds:
        arrays[f"prim/seed/{s}"] = np.asarray(jax.random.PRNGKey(s))
    sizes = [0, 1, 2, 3, 5, 8, 17, 100, 2**16 + 3]
    for kk, k in enumerate(keys[:4]):
        key = jnp.asarray(k)
        for num in [1, 2, 3, 4, 7]:
            arrays[f"prim/split/{kk}/{num}"] = np.asarray(jax.random.split(key, num))
        for size in sizes:
            bits = np.asarray(jax.random.bits(key, (size,), dtype=jnp.uint32))
            if size > 1000:
                arrays[f"prim/bits/{kk}/{size}/sha256"] = np.frombuffer(
                    hashlib.sha256(bits.astype("<u4").tobytes()).digest(), np.uint8)
                bits = bits[:64]
            arrays[f"prim/bits/{kk}/{size}"] = bits
    notes["prim/split/<k>/<num>"] = "jax.random.split(keys[k], num), uint32 [num, 2]"
    notes["prim/bits/<k>/<size>"] = ("jax.random.bits(keys[k], (size,), uint32); for size > 1000 only the first 64, "
                                     "with .../sha256 the digest of all of them as little-endian uint32")
    spans = [(0, 1), (0, 2), (0, 3), (0, 5), (0, 7), (0, 2**31 - 1), (-5, 5), (3, 3), (4, 2), (-2**31, 2**31 - 1),
             (-2**31, 0), (7, 1000003), (-100, -1), (0, 2**16 + 1)]
    shapes = [(0,), (1,), (3, 5), (7,), (2, 0, 3), (4, 33), (2**16 + 3,)]
    notes["prim/randint/<k>/<min>/<max>/<shape>"] = ("jax.random.randint(keys[k], shape, min, max) (int32); shape "
                                                     "written as dims joined by 'x'; same sha256 rule as bits")
    for kk, k in enumerate(keys):
        key = jnp.asarray(k)
        for si, (lo, hi) in enumerate(spans):
            for sh in shapes if kk < 3 else shapes[si % len(shapes):si % len(shapes) + 1]:
                v = np.asarray(jax.random.randint(key, sh, lo, hi))
                name = f"prim/randint/{kk}/{lo}/{hi}/{'x'.join(map(str, sh))}"
                if v.size > 1000:
                    arrays[name + "/sha256"] = np.frombuffer(hashlib.sha256(v.astype("<i4").tobytes()).digest(),
                                                             np.uint8)
                    v = v.reshape(-1)[:64]
                arrays[name] = v
    notes["prim/choice/<k>/<ops>/<shape>"] = ("jax.random.choice(keys[k], jnp.array(ops), shape) with ops written "
                                              "as values joined by '_'")
    for kk, k in enumerate(keys[:5]):
        for ops in [[5, 6, 7], [9], [8, 5], [5, 6, 7, 8]]:
            for sh in [(0,), (3, 4), (17, 20), (1, 0)]:
                v = np.asarray(jax.random.choice(jnp.asarray(k), jnp.array(ops), sh))
                arrays[f"prim/choice/{kk}/{'_'.join(map(str, ops))}/{'x'.join(map(str, sh))}"] = v


def main(root, out=OUT):
    import jax

    jax.config.update("jax_threefry_partitionable", False)
    arrays, notes, settings, errors = {}, {}, [], []
    _primitives(arrays, notes)
    for name, build in _tasks(root).items():
        for seed, n, count, params in _settings(name):
            try:
                x, y = run_authors(build, seed, n, count, params)
            except Exception as e:  # noqa: BLE001 - the error itself is what we record
                errors.append([name, seed, n, count, params, type(e).__name__])
                continue
            stem = f"{name}/{seed}/{n}/{count}/{params_key(params)}"
            arrays[stem + "/inputs"] = _small(x)
            arrays[stem + "/targets"] = _small(y)
            settings.append([name, seed, n, count, params])
        print(name, "done", flush=True)
    meta = {"commit": COMMIT, "jax": jax.__version__, "jax_threefry_partitionable": False, "seeds": SEEDS,
            "lengths": LENGTHS, "counts": COUNTS, "settings": settings, "errors": errors, "prim": notes}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({Path(out).stat().st_size} bytes, {len(settings)} settings, {len(errors)} errors)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], *(Path(a) for a in sys.argv[2:3]))
