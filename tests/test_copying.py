"""selective-copying (docs/tasks/selective-copying.md): the kernel against its twin, the
definition, S4's own bytes (tests/data/s4_copying.npz, made by bench/copying_fixtures.py
running S4's torch_copying_data) and our law beside S4's."""
import os

import numpy as np
import pytest
from scipy import stats

import longsynth
import naive
from longsynth.store import sample_digest

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "s4_copying.npz")
CASES = [dict(L=1, M=1, A=3), dict(L=4, M=2, A=6), dict(L=100, M=16, A=16), dict(L=4064, M=16, A=16),
         dict(L=7, M=30, A=32768), dict(L=500, M=200, A=5)]
KEYS = [(0, "train", 0), (7, "val", 3), (2**40 + 1, "test", 12345)]


@pytest.mark.parametrize("params", CASES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{k[2]}")
def test_kernel_matches_twin(params, key):
    seed, split, index = key
    got = longsynth.sample("selective-copying", index, seed=seed, split=split, **params)
    want = naive.selective_copying(seed, split, index, **params)
    for k in ("inputs", "targets"):
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_definition_and_defaults():
    b = longsynth.batch("selective-copying", 0, 100, seed=4)
    x, y = b["inputs"].astype(np.int64), b["targets"].astype(np.int64)
    assert x.shape == (100, 4096) and b["inputs"].dtype == np.int8  # Mamba: length 4096, 16 tokens, vocab 16
    for r in range(100):
        data = x[r, :4080][x[r, :4080] != 0]
        assert data.size == 16 and np.all((data >= 1) & (data <= 14))
        assert np.all(x[r, 4080:] == 15) and np.array_equal(y[r, 4080:], data) and np.all(y[r, :4080] == -100)


GOLDEN = ["fba480389a94ae14f19e9a98bbe71bc8a2e0ea07eaefef6ef8ea8627cbc7cf88",
          "62f4c974605a322c57f11c6cad2f83d218cb4f351152b6c6348fbebc3f68c9c8"]


def test_golden_digests():
    got = [sample_digest(longsynth.sample("selective-copying", i, seed=2023)).hex() for i in (0, 9)]
    assert got == GOLDEN


def _fixture():
    z = np.load(FIXTURE)
    out = {}
    for name in sorted({k.split("/")[0] for k in z.files}):
        L, M, A, count, seed = (int(v) for v in z[f"{name}/params"])
        out[name] = (dict(L=L, M=M, A=A), count, seed, z[f"{name}/x"].astype(np.int64), z[f"{name}/y"].astype(np.int64))
    return out


FIX = _fixture()


@pytest.mark.parametrize("name", sorted(FIX))
def test_authors_stream_is_s4s(name):
    params, count, seed, x, y = FIX[name]
    got = longsynth.authors_stream("selective-copying", count, seed=seed, **params)
    n = params["L"] + params["M"]
    np.testing.assert_array_equal(got["inputs"], x)
    np.testing.assert_array_equal(got["targets"][:, n:], y)
    assert np.all(got["targets"][:, :n] == -100)


def _p_values(**change):
    params, count, _, x, y = FIX["s4-like"]
    ours = longsynth.batch("selective-copying", 0, count, seed=5, **{**params, **change})
    ox, oy = ours["inputs"].astype(np.int64), ours["targets"].astype(np.int64)
    n = params["L"] + params["M"]
    pos_ours, pos_theirs = np.nonzero(ox[:, :n])[1], np.nonzero(x[:, :n])[1]
    table = np.array([np.bincount(oy[:, n:].ravel(), minlength=params["A"]), np.bincount(y.ravel(),
                                                                                      minlength=params["A"])])
    return {"positions": stats.ks_2samp(pos_ours, pos_theirs).pvalue,
            "first": stats.ks_2samp(np.argmax(ox[:, :n] != 0, axis=1), np.argmax(x[:, :n] != 0, axis=1)).pvalue,
            "tokens": stats.chi2_contingency(table[:, table.sum(axis=0) > 0])[1]}


def test_default_law_matches_s4s():
    p = _p_values()
    assert min(p.values()) > 1e-3, p


def test_the_law_comparison_can_fail():
    assert _p_values(L=150, M=10 + 25)["positions"] < 1e-6
