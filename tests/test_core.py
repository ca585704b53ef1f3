"""RNG streams, the sample/batch API and cumsum against their independent twins."""
import subprocess
import sys

import naive
import numpy as np
import pytest
from numba import njit
from scipy import stats

import longsynth
from longsynth import rng
from longsynth.store import sample_digest

KEYS = [(0, 1, 0), (1, 1, 0), (0, 2, 0), (0, 1, 1), (2**63 - 1, 3, 2**63 - 1), (12345, 0, 987654321)]


@njit
def _draws(seed, split, index, n):
    s = rng.stream(seed, split, index)
    u = np.empty(n, dtype=np.uint64)
    z = np.empty(n)
    k = np.empty(n, dtype=np.int64)
    for i in range(n):
        u[i] = rng.next_u64(s)
    for i in range(n):
        z[i] = rng.normal(s)
    for i in range(n):
        k[i] = rng.randint(s, 7 + i)
    return u, z, k


@pytest.mark.parametrize("key", KEYS)
def test_stream_matches_pure_python_twin(key):
    u, z, k = _draws(*key, 3000)
    twin = naive.Stream(*key)
    assert [int(v) for v in u] == [twin.u64() for _ in range(3000)]
    assert np.array_equal(z, twin.normals(3000))
    assert [int(v) for v in k] == [twin.randint(7 + i) for i in range(3000)]


@njit
def _below_filled(seed, split, index, sizes, bound):
    """below_fill in runs of ``sizes`` into one array, then one next_u64: the values and the state after."""
    s = np.empty(4, dtype=np.uint64)
    rng.reseed(s, seed, split, index)
    out = np.full(sizes.sum() + 2, -1, dtype=np.int64)
    at = 1
    for k in sizes:
        rng.below_fill(s, out, at, k, bound)
        at += k
    return out, rng.next_u64(s)


# 3 * 2^30 rejects a draw with probability 1/4 (2^32 mod bound = 2^30): the fill's rejection path runs
@pytest.mark.parametrize("bound", [1, 2, 3, 5, 1000, 3 * 2**30, 2**32])
def test_below_fill_matches_the_twins_below(bound):
    sizes = np.array([0, 1, 7, 64, 300], dtype=np.int64)
    out, after = _below_filled(11, 1, 5, sizes, bound)
    twin = naive.Stream(11, 1, 5)
    assert out[0] == -1 and out[-1] == -1  # nothing written outside out[start:start + n]
    assert [int(v) for v in out[1:-1]] == [twin.below(bound) for _ in range(sizes.sum())]
    assert int(after) == twin.u64()  # the state is written back


def test_streams_of_different_keys_differ():
    firsts = {tuple(_draws(*key, 4)[0]) for key in KEYS}
    assert len(firsts) == len(KEYS)
    # consecutive indices of one split must not share their first outputs
    heads = {int(_draws(0, 1, i, 1)[0][0]) for i in range(2000)}
    assert len(heads) == 2000


def test_normal_distribution():
    _, z, _ = _draws(3, 1, 0, 200_000)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    tail = np.mean(np.abs(z) > 3.6541528853610088)  # beyond the ziggurat's base strip
    assert abs(tail - 2 * stats.norm.sf(3.6541528853610088)) < 1.5e-4


def test_randint_uniform():
    s = rng.stream(9, 1, 0)
    counts = np.bincount([rng.randint(s, 10) for _ in range(50_000)], minlength=10)
    assert counts.min() > 0 and stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("L", [1, 2, 7, 64, 513])
@pytest.mark.parametrize("seed,split,index", [(0, "train", 0), (5, "val", 99), (2**40, "test", 7)])
def test_cumsum_matches_twin(L, seed, split, index):
    got = longsynth.sample("cumsum", index, seed=seed, split=split, L=L)
    want = naive.cumsum(seed, split, index, L)
    assert got.keys() == want.keys()
    np.testing.assert_array_equal(got["inputs"], want["inputs"])
    np.testing.assert_allclose(got["targets"], want["targets"], rtol=1e-6, atol=1e-7)
    assert np.abs(got["inputs"]).max() == 1.0


def test_batch_equals_samples_and_fills_out():
    b = longsynth.batch("cumsum", 10, 6, seed=3, split="val", L=33)
    for j in range(6):
        s = longsynth.sample("cumsum", 10 + j, seed=3, split="val", L=33)
        assert np.array_equal(b["inputs"][j], s["inputs"]) and np.array_equal(b["targets"][j], s["targets"])
    out = {k: np.full_like(v, np.nan) for k, v in b.items()}
    ret = longsynth.batch("cumsum", 10, 6, seed=3, split="val", L=33, out=out)
    assert ret is out and all(np.array_equal(out[k], b[k]) for k in b)


def test_splits_are_disjoint():
    a = [longsynth.sample("cumsum", i, split=s, L=16)["inputs"].tobytes()
         for s in ("train", "val", "test") for i in range(50)]
    assert len(set(a)) == len(a)


GOLDEN = [
    (0, dict(seed=0, split="train", L=4096), "fd983d2977aa2eb228d50191ce97af9f0a394b9caaa65715635ba809956e0019"),
    (123, dict(seed=7, split="test", L=100), "450753a7e9da6d09fe56b669c94e07430c7c936e05d7cdaef8a7d2549bc351ca"),
]


@pytest.mark.parametrize("index,kw,digest", GOLDEN)
def test_cumsum_golden(index, kw, digest):
    assert sample_digest(longsynth.sample("cumsum", index, **kw)).hex() == digest


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: longsynth.sample("cumsum", 0, L=0), "L: must be in"),
        (lambda: longsynth.sample("cumsum", 0, L=2.5), "L: must be"),
        (lambda: longsynth.sample("cumsum", 0, C=8), "C: not a parameter of cumsum"),
        (lambda: longsynth.sample("nope", 0), "unknown task 'nope'"),
        (lambda: longsynth.sample("cumsum", -1), "index: must be an integer >= 0"),
        (lambda: longsynth.sample("cumsum", 0, seed=-3), "seed: must be an integer"),
        (lambda: longsynth.sample("cumsum", 0, split="dev"), "split: must be one of"),
        (lambda: longsynth.batch("cumsum", 0, 2, L=4, out={"inputs": np.zeros((2, 4, 1))}), "out: 'inputs' must be"),
    ],
)
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("good,bad,message", [
    (dict(L=4), dict(L=4.0), "L: must be"),
    (dict(L=4, seed=1), dict(L=4, seed=True), "seed: must be an integer"),
])
def test_validated_arguments_are_remembered_by_type(good, bad, message):
    """batch() remembers validated arguments, but 4.0 and True equal 4 and 1 as dict keys: refused still."""
    longsynth.batch("cumsum", 0, 2, **good)
    with pytest.raises(ValueError, match=message):
        longsynth.batch("cumsum", 0, 2, **bad)


def test_generation_does_not_import_torch():
    code = (
        "import sys, tempfile, longsynth\n"
        "from longsynth import store\n"
        "longsynth.sample('cumsum', 0, L=8)\n"
        "store.generate(tempfile.mkdtemp(), 'cumsum', {'L': 8}, num_samples=10, workers=1)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
