"""The authors' jitted Chomsky batches replayed without JAX (generators/chomsky/authors_jax.py and
jax_random.py) against what JAX 0.10.2 and the authors' code gave (tests/data/chomsky_stream.npz,
made by bench/chomsky_stream_fixtures.py). No JAX is needed here."""
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from longsynth.generators.chomsky import jax_random as jr
from longsynth.generators.chomsky.authors_jax import TASKS, draw

DATA = np.load(Path(__file__).parent / "data" / "chomsky_stream.npz")
META = json.loads(bytes(DATA["meta"]))
KEYS = DATA["prim/keys"].astype(np.int64)


def _stem(name, seed, length, count, params):
    return f"{name}/{seed}/{length}/{count}/{json.dumps(params, sort_keys=True, separators=(',', ':'))}"


def _dims(text):
    return tuple(int(d) for d in text.split("x"))


def _same(got, name, dtype):
    """got equals the stored array (or its first 64 values and the digest of all of them)."""
    want = DATA[name]
    if name + "/sha256" in DATA.files:
        digest = hashlib.sha256(np.asarray(got).astype(dtype).tobytes()).digest()
        return digest == bytes(DATA[name + "/sha256"]) and np.array_equal(np.asarray(got).reshape(-1)[:64], want)
    return got.shape == want.shape and np.array_equal(got, want)


def test_fixture_covers_every_jitted_task():
    stored = {s[0] for s in META["settings"]}
    assert set(TASKS) <= stored
    assert META["jax_threefry_partitionable"] is False and META["jax"] == "0.10.2"


@pytest.mark.parametrize("name", TASKS)
def test_draw_is_the_authors_batch(name):
    settings = [s for s in META["settings"] if s[0] == name]
    assert len(settings) > 40
    for _, seed, length, count, params in settings:
        stem = _stem(name, seed, length, count, params)
        x, y = draw(name, count, seed, length, params)
        assert x.dtype == np.int64 and y.dtype == np.int64, stem
        want_x, want_y = DATA[stem + "/inputs"], DATA[stem + "/targets"]
        assert x.shape == want_x.shape and y.shape == want_y.shape, stem
        assert np.array_equal(x, want_x) and np.array_equal(y, want_y), stem


@pytest.mark.parametrize("setting", [e for e in META["errors"] if e[0] in TASKS], ids=str)
def test_draw_refuses_where_the_authors_raise(setting):
    name, seed, length, count, params, _ = setting
    with pytest.raises(ValueError):
        draw(name, count, seed, length, params)


def test_modular_arithmetic_keeps_their_int32_wrap():
    """Their label wraps long products modulo 2**32; the stored batch has rows where that differs
    from the exact value, and draw gives theirs."""
    stem = _stem("modular-arithmetic", 2, 61, 128, {"operators": "*"})
    x, y = DATA[stem + "/inputs"], DATA[stem + "/targets"]
    exact = np.array([math.prod(int(v) for v in row[::2]) % 5 for row in x])
    assert (exact != y).any()
    got_x, got_y = draw("modular-arithmetic", 128, 2, 61, {"operators": "*"})
    assert np.array_equal(got_x, x) and np.array_equal(got_y, y)


def test_draw_refuses_bad_arguments():
    for args in [("no-such-task", 1, 0, 5, {}), ("even-pairs", 1, 0, 5, {"vocab_size": 3}),
                 ("bucket-sort", 1, 0, 5, {"vocab_size": 0}), ("modular-arithmetic", 1, 0, 5, {"operators": "/"}),
                 ("modular-arithmetic", 2, 0, 5, {"operators": ""}), ("parity-check", -1, 0, 5, {}),
                 ("parity-check", 1, 2**63, 5, {})]:
        with pytest.raises(ValueError):
            draw(*args)


def test_threefry_block():
    x = DATA["prim/block/x"].astype(np.int64)
    y = DATA["prim/block/y"]
    for k, key in enumerate(KEYS):
        y0, y1 = jr.threefry2x32(key, x[0], x[1])
        assert np.array_equal(y0, y[k, 0]) and np.array_equal(y1, y[k, 1])


def test_prng_key_of_seeds():
    names = [n for n in DATA.files if n.startswith("prim/seed/")]
    assert len(names) >= 10
    for name in names:
        assert np.array_equal(jr.prng_key(int(name.split("/")[2])), DATA[name]), name


def test_split_and_bits():
    names = [n for n in DATA.files if n.startswith(("prim/split/", "prim/bits/")) and not n.endswith("sha256")]
    assert len(names) > 50
    for name in names:
        kind, k, n = name.split("/")[1:]
        if kind == "split":
            got = jr.split(KEYS[int(k)], int(n))
        else:
            got = jr.random_bits(KEYS[int(k)], (int(n),))
        assert _same(got, name, "<u4"), name


def test_randint():
    names = [n for n in DATA.files if n.startswith("prim/randint/") and not n.endswith("sha256")]
    assert len(names) > 100 and any(n.endswith("/sha256") for n in DATA.files)
    for name in names:
        k, lo, hi, shape = name.split("/")[2:]
        got = jr.randint(KEYS[int(k)], _dims(shape), int(lo), int(hi))
        assert got.dtype == np.int64 and _same(got, name, "<i4"), name


def test_choice():
    names = [n for n in DATA.files if n.startswith("prim/choice/")]
    assert len(names) > 20
    for name in names:
        k, values, shape = name.split("/")[2:]
        got = jr.choice(KEYS[int(k)], [int(v) for v in values.split("_")], _dims(shape))
        assert _same(got, name, "<i8"), name


def test_randint_bounds_as_jax_takes_them():
    key = KEYS[1]
    # a NumPy int64 wraps to int32 (2**31 reads as -2**31, so maxval <= minval and every value is minval)
    assert np.array_equal(jr.randint(key, (5,), 0, np.int64(2**31)), np.zeros(5, dtype=np.int64))
    assert np.array_equal(jr.randint(key, (9,), np.int64(-2**40), 3), jr.randint(key, (9,), 0, 3))
    with pytest.raises(ValueError):
        jr.randint(key, (2,), 0, 2**31)
