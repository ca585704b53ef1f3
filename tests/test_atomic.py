"""The 11 atomic tasks: kernels vs the NumPy twins, the definitions' properties, API/store identity."""
import math

import numpy as np
from numba import njit
import pytest
from PIL import Image

import longsynth
from longsynth import rng
import naive
from longsynth import registry
from longsynth.generators.atomic import mips as mips_mod
from longsynth.generators.atomic import noise
from longsynth.generators.atomic import solve as solve_mod
from longsynth.store import generate, sample_digest

ATOMIC = ["shift", "cumsum", "cummax", "reverse", "sort", "select", "select-fixed", "mips",
          "context-shift", "solve", "solve-fixed"]

TWIN = {
    "shift": naive.shift, "cumsum": naive.cumsum, "cummax": naive.cummax, "reverse": naive.reverse,
    "sort": naive.sort, "select": naive.select, "select-fixed": naive.select_fixed, "mips": naive.mips,
    "context-shift": naive.context_shift, "solve": naive.solve, "solve-fixed": naive.solve_fixed,
}

# (task, params): odd and small lengths included, down to each task's minimum
CASES = [
    ("shift", dict(L=1, C=1)), ("shift", dict(L=7, C=3)), ("shift", dict(L=64, C=8)), ("shift", dict(L=257, C=8)),
    ("shift", dict(L=10, C=10)),
    ("cumsum", dict(L=1)), ("cumsum", dict(L=7)), ("cumsum", dict(L=300)),
    ("cummax", dict(L=1)), ("cummax", dict(L=7)), ("cummax", dict(L=300)),
    ("reverse", dict(L=1)), ("reverse", dict(L=7)), ("reverse", dict(L=300)),
    ("sort", dict(L=1)), ("sort", dict(L=2)), ("sort", dict(L=7)), ("sort", dict(L=301)),
    ("select", dict(L=1, M=1)), ("select", dict(L=9, M=5)), ("select", dict(L=301, M=32)),
    ("select-fixed", dict(L=1, M=1)), ("select-fixed", dict(L=9, M=5)), ("select-fixed", dict(L=301, M=32)),
    ("mips", dict(L=1, D=4)), ("mips", dict(L=2, D=1)), ("mips", dict(L=33, D=3)), ("mips", dict(L=150, D=4)),
    ("mips", dict(L=100, D=1)),
    ("context-shift", dict(L=3)), ("context-shift", dict(L=4)), ("context-shift", dict(L=9)),
    ("context-shift", dict(L=301)),
    ("solve", dict(L=3)), ("solve", dict(L=8)), ("solve", dict(L=14)), ("solve", dict(L=99)), ("solve", dict(L=400)),
    ("solve-fixed", dict(L=3)), ("solve-fixed", dict(L=15)), ("solve-fixed", dict(L=400)),
]
KEYS = [(0, "train", 0), (7, "val", 3), (2**40 + 1, "test", 12345)]
APPROX = {"solve", "solve-fixed"}  # the twin's QR is LAPACK's: equal up to rounding


def _id(case):
    task, params = case
    return task + "-" + "-".join(f"{k}{v}" for k, v in params.items())


def _compare(task, got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        if task in APPROX and k in ("inputs", "targets"):
            np.testing.assert_allclose(got[k], want[k], rtol=0, atol=2e-6, err_msg=k)
        else:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@pytest.mark.parametrize("case", CASES, ids=_id)
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{k[2]}")
def test_kernel_matches_twin(case, key):
    task, params = case
    seed, split, index = key
    got = longsynth.sample(task, index, seed=seed, split=split, **params)
    _compare(task, got, TWIN[task](seed, split, index, **params))


@pytest.mark.parametrize("task", ["cumsum", "sort", "solve", "select", "shift"])
def test_default_length_matches_twin(task):
    got = longsynth.sample(task, 5, seed=11)
    params = {"L": 4096}
    if task == "select":
        params["M"] = 32
    if task == "shift":
        params["C"] = 8
    _compare(task, got, TWIN[task](11, "train", 5, **params))


def test_registry_lists_the_atomic_tasks():
    assert set(ATOMIC) <= set(longsynth.tasks())
    for name in ATOMIC:
        t = registry.get(name)
        assert t.family == "atomic" and t.batchable and t.show is not None
        assert "L" in t.config.__dataclass_fields__


# ---------------------------------------------------------------- properties from docs/tasks/atomic.md


def _noise_part(task, s, L):
    x = s["inputs"]
    return {"context-shift": x[2:, 0], "select": x[: L + 32, 0]}.get(task, x[:L, 0])


@pytest.mark.parametrize("task", ["shift", "cumsum", "cummax", "reverse", "sort", "select", "context-shift"])
def test_noise_is_normalised(task):
    for i in range(3):
        s = longsynth.sample(task, i, seed=3, L=513)
        x = _noise_part(task, s, 513)
        assert np.abs(x).max() == 1.0
        assert np.unique(x).size > 400


def test_shift_exact_copies_and_zeros():
    for L, C in [(4096, 8), (100, 7), (9, 9)]:
        s = longsynth.sample("shift", 4, seed=1, L=L, C=C)
        x, y = s["inputs"][:, 0], s["targets"]
        for j in range(C):
            o = j * L // C
            assert np.all(y[:o, j] == 0.0) and not np.signbit(y[:o, j]).any()
            assert np.array_equal(y[o:, j], x[: L - o])
    with pytest.raises(ValueError, match="C"):
        longsynth.sample("shift", 0, L=4, C=5)


def test_cumsum_cummax_reverse_definitions():
    L = 200
    x = longsynth.sample("cumsum", 1, L=L)["inputs"][:, 0].astype(np.float64)
    y = longsynth.sample("cumsum", 1, L=L)["targets"][:, 0]
    np.testing.assert_allclose(y, np.cumsum(x) / np.sqrt(np.arange(1, L + 1)), rtol=1e-6, atol=1e-7)
    s = longsynth.sample("cummax", 1, L=L)
    assert np.array_equal(s["targets"][:, 0], np.maximum.accumulate(s["inputs"][:, 0]))
    s = longsynth.sample("reverse", 1, L=L)
    assert np.all(s["inputs"][L:, 0] == 0) and np.array_equal(s["targets"][:, 0], s["inputs"][:L, 0][::-1])


def _sorted_by_kernel(x):
    y = np.empty_like(x)
    noise.sort_targets(x, y)
    return y


def test_sort_ties_are_stable():
    # x0 = 0.5: 0.25 and 0.75 tie at distance 0.25, 0.0 and 1.0 at 0.5; repeats tie too
    x = np.array([0.5, 0.75, 0.25, 1.0, 0.0, 0.25, 0.75, 0.5, -0.0, 1.0], dtype=np.float32)
    want = x[[0, 7, 1, 2, 5, 6, 3, 4, 8, 9]]
    got = _sorted_by_kernel(x)
    assert np.array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 kept at its own place
    assert got[0] == x[0]


def test_sort_exact_on_ties_and_near_ties():
    rng = np.random.default_rng(0)
    for trial in range(40):
        n = int(rng.integers(1, 200))
        grid = rng.integers(-8, 9, size=n) / 8.0  # many exact ties on both sides of x0
        tiny = rng.choice([0.0, 2.0**-40, -(2.0**-60), 2.0**-126, 2.0**-149], size=n)
        x = (grid + tiny * rng.integers(0, 2, size=n)).astype(np.float32)
        if trial % 2:
            x = rng.standard_normal(n).astype(np.float32) * np.float32(2.0 ** -int(rng.integers(0, 90)))
            x[rng.integers(0, n, size=n // 3)] = x[0]
        want = x[naive.sort_order(x)]
        got = _sorted_by_kernel(x)
        assert np.array_equal(got, want), trial


def test_sort_sample_properties():
    s = longsynth.sample("sort", 2, L=1000)
    x, y = s["inputs"][:1000, 0], s["targets"][:, 0]
    assert y[0] == x[0] and np.all(s["inputs"][1000:, 0] == 0)
    assert np.array_equal(np.sort(y), np.sort(x))
    d = np.abs(y.astype(np.float64) - np.float64(x[0]))
    assert np.all(np.diff(d) >= 0)


def test_select_definition():
    L, M = 500, 32
    for i in range(4):
        s = longsynth.sample("select", i, seed=9, L=L, M=M)
        x, pos = s["inputs"], s["positions"]
        assert x.shape == (L + 2 * M, 2) and pos.shape == (M,)
        assert np.all(np.diff(pos) > 0) and pos[0] >= 0 and pos[-1] < L + M
        flags = np.zeros(L + 2 * M, dtype=np.float32)
        flags[pos] = 1.0
        assert np.array_equal(x[:, 1], flags)
        assert np.all(x[L + M :, 0] == 0)
        assert np.array_equal(s["targets"][:, 0], x[pos, 0])
    a = longsynth.sample("select", 0, seed=9, L=L, M=M)["positions"]
    b = longsynth.sample("select", 1, seed=9, L=L, M=M)["positions"]
    assert not np.array_equal(a, b)


def test_select_positions_are_uniform():
    # every position of 0..L+M-1 equally likely: chi-square over 4000 samples of M = 3 from 8
    counts = np.zeros(8)
    out = longsynth.batch("select", 0, 4000, seed=1, L=5, M=3)
    for p in out["positions"]:
        counts[p] += 1
    expected = 4000 * 3 / 8
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 24.3  # 7 degrees of freedom, p = 0.001


@pytest.mark.parametrize("task, key", [("select-fixed", "positions"), ("solve-fixed", "A")])
def test_fixed_variants(task, key):
    t = registry.get(task)
    cfg = t.make_config(L=120)
    f0, f1 = t.fixed_draws(cfg, 0)[key], t.fixed_draws(cfg, 1)[key]
    assert not np.array_equal(f0, f1)
    out = longsynth.batch(task, 0, 6, seed=0, split="val", L=120)
    if task == "select-fixed":
        assert np.array_equal(f0, naive.select_fixed_positions(0, 120, 32))
        assert all(np.array_equal(p, f0) for p in out["positions"])
        assert all(np.array_equal(np.flatnonzero(x[:, 1]), f0) for x in out["inputs"])
        assert not np.array_equal(out["inputs"][0, :, 0], out["inputs"][1, :, 0])
    else:
        n = int(out["N"][0])
        np.testing.assert_allclose(f0, naive.solve_fixed_matrix(0, 120), atol=1e-6)
        for x in out["inputs"][:, :, 0]:
            assert np.array_equal(x[: n * (n + 1)].reshape(n, n + 1)[:, :n], f0)
        assert not np.array_equal(out["targets"][0], out["targets"][1])


def test_mips_pruned_search_equals_brute_force():
    rng = np.random.default_rng(1)
    for L, D in [(3000, 4), (700, 2), (500, 6), (64, 4), (300, 1), (40, 256)]:
        x = rng.standard_normal((L, D))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        k = rng.standard_normal((L, D))
        k /= np.linalg.norm(k, axis=1, keepdims=True)
        qt = np.ascontiguousarray(x.astype(np.float32).astype(np.float64).T)
        kt = np.ascontiguousarray(k.astype(np.float32).astype(np.float64).T)
        a, b = np.empty(L, np.int64), np.empty(L, np.int64)
        mips_mod.causal_argmax(qt, kt, a)
        mips_mod.causal_argmax_brute(qt, kt, b)
        assert np.array_equal(a, b), (L, D)
        if L <= 700:
            assert np.array_equal(a, naive.mips_argmax(qt.T, kt.T))


def test_mips_ties_go_to_the_smallest_index():
    rng = np.random.default_rng(2)
    L, D = 400, 4
    base = rng.standard_normal((12, D))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    k = base[rng.integers(0, 12, size=L)]  # every key repeated: exact ties everywhere
    q = base[rng.integers(0, 12, size=L)]
    qt, kt = np.ascontiguousarray(q.T), np.ascontiguousarray(k.T)
    a = np.empty(L, np.int64)
    mips_mod.causal_argmax(qt, kt, a)
    want = naive.mips_argmax(q, k)
    assert np.array_equal(a, want)
    s = naive.mips_scores(q, k)
    for i in range(L):  # the winner is the first index attaining the causal maximum
        assert a[i] == np.flatnonzero(s[i, : i + 1] == s[i, : i + 1].max())[0]


def test_mips_rows_are_unit_and_target_is_a_value():
    s = longsynth.sample("mips", 0, L=256)
    x, y = s["inputs"].astype(np.float64), s["targets"]
    for part in range(3):
        np.testing.assert_allclose(np.linalg.norm(x[:, 4 * part : 4 * part + 4], axis=1), 1.0, atol=1e-6)
    assert np.array_equal(y[0], s["inputs"][0, 8:])  # only key 0 is visible to query 0
    vals = {tuple(v) for v in s["inputs"][:, 8:]}
    assert all(tuple(v) in vals for v in y)


def test_context_shift_definition():
    L = 50
    seen = set()
    for i in range(60):
        s = longsynth.sample("context-shift", i, L=L)
        sh = int(s["s"])
        seen.add(sh)
        x, y = s["inputs"][:, 0], s["targets"][:, 0]
        assert 0 <= sh <= L - 2
        assert x[0] == np.float32(math.cos(2 * math.pi * sh / L)) and x[1] == np.float32(math.sin(2 * math.pi * sh / L))
        assert np.abs(x[2:]).max() == 1.0
        assert np.all(y[:sh] == 0) and np.array_equal(y[sh:], x[: L - sh])
    assert len(seen) > 25
    with pytest.raises(ValueError, match="L"):
        longsynth.sample("context-shift", 0, L=2)


@pytest.mark.parametrize("L", [3, 7, 8, 9, 120, 4096])
def test_solve_definition(L):
    s = longsynth.sample("solve", 1, seed=4, L=L)
    n = int(s["N"])
    assert n * n + 2 * n <= L < (n + 1) ** 2 + 2 * (n + 1) and n == solve_mod.system_size(L)
    x = s["inputs"][:, 0].astype(np.float64)
    rows = x[: n * (n + 1)].reshape(n, n + 1)
    a, b, X = rows[:, :n], rows[:, n], s["targets"][:, 0].astype(np.float64)
    assert np.all(s["inputs"][n * (n + 1) :] == 0)
    np.testing.assert_allclose(a.T @ a, np.eye(n), atol=2e-6)
    assert abs(np.linalg.norm(X) - 1.0) < 1e-6
    np.testing.assert_allclose(a @ X, b, rtol=0, atol=1e-6)


def test_solve_is_haar_distributed():
    # Haar: E[A_00] = 0, E[A_00^2] = 1/N, and det = +-1 with both signs (no sign bias)
    out = longsynth.batch("solve", 0, 2000, L=24)  # N = 4
    rows = out["inputs"][:, :20, 0].reshape(-1, 4, 5)[:, :, :4].astype(np.float64)
    a00 = rows[:, 0, 0]
    assert abs(a00.mean()) < 0.05 and abs((a00**2).mean() - 0.25) < 0.03
    dets = np.linalg.det(rows)
    assert 0.4 < (dets > 0).mean() < 0.6


# ---------------------------------------------------------------- API and store identity

SMALL = {"shift": dict(L=40, C=4), "cumsum": dict(L=33), "cummax": dict(L=33), "reverse": dict(L=33),
         "sort": dict(L=33), "select": dict(L=33, M=5), "select-fixed": dict(L=33, M=5), "mips": dict(L=70),
         "context-shift": dict(L=33), "solve": dict(L=50), "solve-fixed": dict(L=50)}


@pytest.mark.parametrize("task", ATOMIC)
def test_sample_batch_store_identical(task, tmp_path):
    params = SMALL[task]
    seed = 21
    b = longsynth.batch(task, 0, 4, seed=seed, split="val", **params)
    out = {k: np.full_like(v, 7) for k, v in b.items()}
    longsynth.batch(task, 0, 4, seed=seed, split="val", out=out, **params)
    generate(str(tmp_path / task), task, params, seed=seed, splits={"train": 3, "val": 4}, shard_size=3, workers=1)
    ds = longsynth.open(str(tmp_path / task))
    for i in range(4):
        s = longsynth.sample(task, i, seed=seed, split="val", **params)
        stored = ds["val"][i]
        for k in s:
            assert np.array_equal(s[k], b[k][i]) and np.array_equal(s[k], out[k][i]), k
            assert np.array_equal(s[k], stored[k]) and stored[k].dtype == s[k].dtype, k
    fixed = registry.get(task).fixed_draws(registry.get(task).make_config(**params), seed)
    for k, v in fixed.items():
        np.testing.assert_array_equal(np.asarray(ds.manifest["fixed"][k], dtype=v.dtype), v)
    ds.close()


GOLDEN = {  # sample_digest hex of samples 0 and 9, seed 2023, train, SMALL params
    "shift": [
        "2e01f623ee0448e44d8ffc5e5a1cc358da3ccc918ac30d70a021377eba48a72f",
        "5abfbb47346bac9cbd9ca35fce36217b283e9b07fa1e3193e26c1989aa5ff290",
    ],
    "cumsum": [
        "adc361d836ea7c1fb31b6749dffac9454097dc8d6495764b804aa6dcc0782ad2",
        "7c3fe8dde42f0b91512595bc2fb54849f46bb13fe265718d010300f673315b51",
    ],
    "cummax": [
        "bb3f0d4aa8af43d38c6daf98db7dc663b736c7270e019965cb2df3ee3e054a8c",
        "47c5b89338e76ec51fe2d81322b49607b3b1065da161e386e3c25b72e79a485f",
    ],
    "reverse": [
        "1aab125095d0adb38f1fb09413cd131137ea4de85396dc2250d9b6ffef3f5cbf",
        "04e8b34796a0d4557d87ab75deaec4caafc05335d99254cc831e0cb1500cbfa4",
    ],
    "sort": [
        "3eb8331c52e70b44c15f34fdcc4e888c59d01eba3302b7861e55d8d2411f055a",
        "addf8fce57172cb2f57502afafa79f65e141907c8464ba732f0879de9acd88d7",
    ],
    "select": [
        "bb3bd6dbb7b98ad1269de107dfc16f58ead8811ae0a5c214fae52aa5a8908688",
        "46457909cc24ccf14f8a947267bc88961e2ddbcb9ffb9df040b3cf433a3735fd",
    ],
    "select-fixed": [
        "2f86f3ad8aa41cffc7338df8453757f56a89fb79f28cbffadd99d559f427adb3",
        "f6a9da61d5ea05fc8444677997c229af2434e87f3e7a549751e50ee4ebac086d",
    ],
    "mips": [
        "0714c7fa515e673e247bc59f8c72dec5bb4799d8ebc0bca56024a84d00770c98",
        "cc566c41354f7a1bd1f5fcdeaa23e70b8f1c437880143dfa27b27992227b9af9",
    ],
    "context-shift": [
        "80d952cbc60c09d6af58a47f429a4d06c7abbcc534a68f8a7c9b7f117469dbd4",
        "b726fe2ed1fb83931b1ee70609771c3818441edb5aec73f55bddf6050d1e72d4",
    ],
    "solve": [
        "76e1c187e36dd318c858d164386aa5a106961d4fe3c1dc49bf20895cdc009861",
        "5f187955a337f11bfe3c0603f5b2245dd0c4b206e02b68de00ab6e1ee3741bb6",
    ],
    "solve-fixed": [
        "d456aa118937f5e168cc3d8e0d526fdcd1fe49b9de2c4fe0fc48deca0fc5572d",
        "346433e8c92c4fd02bb4d1c06af930b8f10e0a2cd1e214eeed04615a4f2bde46",
    ],
}


@pytest.mark.parametrize("task", ATOMIC)
def test_golden_digests(task):
    got = [sample_digest(longsynth.sample(task, i, seed=2023, split="train", **SMALL[task])).hex() for i in (0, 9)]
    assert got == GOLDEN[task]


@pytest.mark.parametrize("task", ATOMIC)
def test_show_writes_png(task, tmp_path):
    t = registry.get(task)
    cfg = t.make_config(**SMALL[task])
    samples = [longsynth.sample(task, i, **SMALL[task]) for i in range(2)]
    path = tmp_path / f"{task}.png"
    t.show(samples, cfg, str(path))
    with Image.open(path) as img:
        assert img.size[0] > 100 and img.size[1] > 100
        assert len(img.getcolors(1 << 16) or []) > 3  # more than a blank canvas


@njit(cache=True)
def _one_by_one(s, out):
    for i in range(out.shape[0]):
        out[i] = rng.normal(s)


def test_bulk_draws_equal_one_draw_at_a_time():
    for n in (1, 2, 5, 1000, 20000):  # 20000 draws pass through every slow path (tail, wedges)
        for index in range(5):
            s1, s2 = rng.stream(9, 1, index), rng.stream(9, 1, index)
            a, b = np.empty(n), np.empty(n)
            rng.normal_fill(s1, a)
            _one_by_one(s2, b)
            assert np.array_equal(a, b) and np.array_equal(s1, s2)
