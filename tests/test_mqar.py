"""mqar (docs/tasks/mqar.md): the kernel against its twin, the definition's properties,
zoology's own bytes (tests/data/mqar_zoology.npz, made by bench/mqar_fixtures.py running
zoology's multiquery_ar) and our default law beside zoology's in distribution."""
import os

import numpy as np
import pytest
from scipy import stats

import longsynth
from click.testing import CliRunner
from longsynth.cli.main import cli
import naive
from longsynth import registry
from longsynth.errors import LongsynthError
from longsynth.store import sample_digest

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "mqar_zoology.npz")

CASES = [  # down to the smallest legal config; odd vocabularies; passes; kv above the scan limit (64)
    dict(vocab_size=5, input_seq_len=4, num_kv_pairs=1),
    dict(vocab_size=20, input_seq_len=16, num_kv_pairs=2),
    dict(vocab_size=301, input_seq_len=80, num_kv_pairs=10),
    dict(vocab_size=8192, input_seq_len=64, num_kv_pairs=4),
    dict(vocab_size=8192, input_seq_len=512, num_kv_pairs=64),
    dict(vocab_size=1000, input_seq_len=300, num_kv_pairs=70),
    dict(vocab_size=1000, input_seq_len=120, num_kv_pairs=10, num_passes=3),
    dict(vocab_size=64, input_seq_len=40, num_kv_pairs=5, random_non_queries=True),
    dict(vocab_size=8192, input_seq_len=128, num_kv_pairs=8, power_a=1.0),
    dict(vocab_size=40000, input_seq_len=64, num_kv_pairs=4, power_a=0.5),
]
KEYS = [(0, "train", 0), (7, "val", 3), (2**40 + 1, "test", 12345)]


def _id(params):
    return "-".join(f"{k}{v}" for k, v in params.items())


@pytest.mark.parametrize("params", CASES, ids=_id)
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{k[2]}")
def test_kernel_matches_twin(params, key):
    seed, split, index = key
    got = longsynth.sample("mqar", index, seed=seed, split=split, **params)
    want = naive.mqar(seed, split, index, **params)
    for k in ("inputs", "targets"):
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@pytest.mark.parametrize("params", CASES[2:6], ids=_id)
def test_batch_is_the_samples(params):
    b = longsynth.batch("mqar", 5, 40, seed=3, split="val", **params)
    for i in (0, 17, 39):
        s = longsynth.sample("mqar", 5 + i, seed=3, split="val", **params)
        assert np.array_equal(b["inputs"][i], s["inputs"]) and np.array_equal(b["targets"][i], s["targets"])


def test_definition():
    V, L, kv = 8192, 256, 16
    b = longsynth.batch("mqar", 0, 300, seed=5, vocab_size=V, input_seq_len=L, num_kv_pairs=kv)
    x, y = b["inputs"].astype(np.int64), b["targets"].astype(np.int64)
    assert b["inputs"].dtype == np.int16 and b["inputs"].shape == (300, L)
    for r in range(300):
        keys, vals = x[r, 0 : 2 * kv : 2], x[r, 1 : 2 * kv : 2]
        assert len(set(keys)) == kv and len(set(vals)) == kv
        assert keys.min() >= 1 and keys.max() < V // 2 and vals.min() >= V // 2 and vals.max() < V
        q = np.flatnonzero(y[r] != -100)
        assert q.size == kv and np.all(q >= 2 * kv) and np.all((q - 2 * kv) % 2 == 0)
        assert np.all(x[r, 2 * kv :][np.setdiff1d(np.arange(L - 2 * kv), q - 2 * kv)] == 0)
        value_of = dict(zip(keys, vals))
        assert all(value_of[x[r, t]] == y[r, t] for t in q)  # the query asks for its key's value
        assert sorted(x[r, q]) == sorted(keys)  # every key queried once


def test_passes_and_noise():
    s = longsynth.sample("mqar", 2, vocab_size=100, input_seq_len=60, num_kv_pairs=5, num_passes=2)
    assert np.array_equal(s["inputs"][:10], s["inputs"][10:20])
    plain = longsynth.sample("mqar", 2, vocab_size=100, input_seq_len=60, num_kv_pairs=5)
    noisy = longsynth.sample("mqar", 2, vocab_size=100, input_seq_len=60, num_kv_pairs=5, random_non_queries=True)
    assert np.array_equal(plain["targets"], noisy["targets"])
    keep = plain["inputs"] != 0
    assert np.array_equal(plain["inputs"][keep], noisy["inputs"][keep])
    assert np.count_nonzero(noisy["inputs"]) > 45  # the fillers became tokens of [0, V)


def test_dtypes_follow_the_vocabulary():
    t = registry.get("mqar")
    assert t.keys(t.make_config())["inputs"].dtype == "int16"
    assert t.keys(t.make_config(vocab_size=32767))["targets"].dtype == "int16"
    assert t.keys(t.make_config(vocab_size=32768))["targets"].dtype == "int32"
    assert t.family == "tokens" and t.vocab_size(t.make_config(vocab_size=300)) == 300


@pytest.mark.parametrize("params, match", [
    (dict(input_seq_len=63), "even"),
    (dict(vocab_size=64, input_seq_len=64), "exceed"),
    (dict(input_seq_len=64, num_kv_pairs=17), "num_kv_pairs"),
    (dict(num_passes=2, num_kv_pairs=11), "num_kv_pairs"),
    (dict(power_a=0.0), "power_a"),
])
def test_bad_configs_are_one_line(params, match):
    with pytest.raises(LongsynthError, match=match):
        longsynth.sample("mqar", 0, **params)


GOLDEN = [  # sample_digest of samples 0 and 9, seed 2023, train, L 64, kv 4: a change of the bytes raises the revision
    "afbf7ddb666b772616656cc0c03ce1978ebc3935cb298bef5a4a1b383d2765c2",
    "8531a224f8c559b28687af73262d20cd1b063e8dc7189dc7839f0bc1dea9301f",
]


def test_golden_digests():
    got = [sample_digest(longsynth.sample("mqar", i, seed=2023, input_seq_len=64, num_kv_pairs=4)) for i in (0, 9)]
    assert [g.hex() for g in got] == GOLDEN


# ---------------------------------------------------------------- zoology's bytes


def _fixture():
    z = np.load(FIXTURE)
    out = {}
    for name in sorted({k.split("/")[0] for k in z.files} - {"pipeline"}):
        V, L, kv, passes, count, seed = (int(v) for v in z[f"{name}/params"])
        params = dict(vocab_size=V, input_seq_len=L, num_kv_pairs=kv, num_passes=passes)
        out[name] = (params, count, seed, z[f"{name}/inputs"], z[f"{name}/labels"])
    return out


FIX = _fixture()


@pytest.mark.parametrize("name", sorted(FIX))
def test_authors_stream_is_zoologys(name):
    params, count, seed, inputs, labels = FIX[name]
    got = longsynth.authors_stream("mqar", count, seed=seed, **params)
    assert got["inputs"].dtype == np.int64 and got["inputs"].shape == inputs.shape
    np.testing.assert_array_equal(got["inputs"], inputs)
    np.testing.assert_array_equal(got["targets"], labels)


def test_authors_splits_map_to_zoology_seeds():
    params, count, seed, inputs, labels = FIX["fig2-128-seed10"]  # zoology's paper-era test seed
    got = longsynth.authors_stream("mqar", count, seed=0, split="test", **params)
    np.testing.assert_array_equal(got["inputs"], inputs)
    val = longsynth.authors_stream("mqar", count, seed=5, split="train", **params)
    same = longsynth.authors_stream("mqar", count, seed=0, split="val", **params)
    assert np.array_equal(val["inputs"], same["inputs"])
    assert not np.array_equal(val["inputs"], inputs)


def test_zoology_pipeline_segments_from_their_seeds(tmp_path):
    """zoology's current prepare_data (DataConfig seed 123): segment j of a split is
    multiquery_ar at zoology_segment_seeds' seed; gen writes it with --seed s_j - offset."""
    from longsynth.generators.recall.mqar import AUTHORS_SEED_OFFSET, zoology_segment_seeds

    z = np.load(FIXTURE)
    n = {s: len({k.split("/")[2] for k in z.files if k.startswith(f"pipeline/{s}/")}) for s in ("train", "test")}
    seeds = dict(zip(("train", "test"), zoology_segment_seeds(n["train"], n["test"])))
    assert seeds["train"][0] == 843828734 and all(s >= 2**31 for s in seeds["test"])  # zoology's ranges
    for split in ("train", "test"):
        for j, s in enumerate(seeds[split]):
            V, L, kv, count = (int(v) for v in z[f"pipeline/{split}/{j}/params"])
            got = longsynth.authors_stream("mqar", count, seed=s - AUTHORS_SEED_OFFSET[split], split=split,
                                           vocab_size=V, input_seq_len=L, num_kv_pairs=kv)
            np.testing.assert_array_equal(got["inputs"], z[f"pipeline/{split}/{j}/inputs"], err_msg=f"{split} {j}")
            np.testing.assert_array_equal(got["targets"], z[f"pipeline/{split}/{j}/labels"], err_msg=f"{split} {j}")
    V, L, kv, count = (int(v) for v in z["pipeline/test/2/params"])
    out = tmp_path / "seg"
    r = CliRunner().invoke(cli, ["gen", "mqar", "--authors-stream", "--vocab-size", str(V), "--input-seq-len", str(L),
                                 "--num-kv-pairs", str(kv), "--seed", str(seeds["test"][2] - 10),
                                 "--splits", f"test={count}", "--out", str(out)])
    assert r.exit_code == 0, r.output
    ds = longsynth.open(out)
    assert np.array_equal(np.stack([ds["test"][i]["inputs"] for i in range(count)]), z["pipeline/test/2/inputs"])


def test_authors_stream_refusals():
    with pytest.raises(LongsynthError, match="unseeded"):
        longsynth.authors_stream("mqar", 4, seed=0, random_non_queries=True)
    with pytest.raises(LongsynthError, match="num_passes"):
        longsynth.authors_stream("mqar", 4, seed=0, num_passes=2)
    with pytest.raises(LongsynthError, match="2\\*\\*32"):
        longsynth.authors_stream("mqar", 4, seed=2**32 - 5, split="test")
    with pytest.raises(LongsynthError, match="authors' stream"):
        longsynth.authors_stream("cumsum", 4, seed=0)
    with pytest.raises(LongsynthError, match="split"):
        longsynth.authors_stream("mqar", 4, seed=0, split="dev")


def test_authors_stream_leaves_the_global_rng_alone():
    np.random.seed(99)
    want = np.random.random_sample(3)
    np.random.seed(99)
    longsynth.authors_stream("mqar", 8, seed=1)
    assert np.array_equal(np.random.random_sample(3), want)


# ---------------------------------------------------------------- our law beside zoology's


def _features(x, y, kv):
    """Per query: (slot, key token, value token, key-to-query distance); per row: scored count."""
    ctx = 2 * kv
    rows, pos = np.nonzero(y != -100)
    slots = (pos - ctx) // 2
    keys = x[rows, pos]
    ctx_pos = np.array([np.flatnonzero(x[r, 0:ctx:2] == k)[0] * 2 for r, k in zip(rows, keys)])
    return {"slot": slots, "key": keys, "value": y[rows, pos], "distance": pos - ctx_pos,
            "per_row": np.bincount(rows, minlength=x.shape[0])}


def _chi2_p(a, b, edges):
    table = np.array([np.histogram(a, edges)[0], np.histogram(b, edges)[0]])
    table = table[:, table.sum(axis=0) > 0]
    return stats.chi2_contingency(table)[1]


def _law_p_values(name, power_a=0.01):
    params, count, _, inputs, labels = FIX[name]
    V, L, kv = params["vocab_size"], params["input_seq_len"], params["num_kv_pairs"]
    ours = longsynth.batch("mqar", 0, count, seed=77, power_a=power_a, **params)
    a = _features(ours["inputs"].astype(np.int64), ours["targets"].astype(np.int64), kv)
    b = _features(inputs.astype(np.int64), labels.astype(np.int64), kv)
    assert np.all(a["per_row"] == kv) and np.all(b["per_row"] == kv)  # pairs per sequence
    space = (L - 2 * kv) // 2
    slot_edges = np.unique(np.concatenate([np.arange(0, min(space, 12) + 1), np.linspace(12, space, 8)])) - 0.5
    return {
        "slot": _chi2_p(a["slot"], b["slot"], slot_edges),
        "key": _chi2_p(a["key"], b["key"], np.linspace(1, V // 2, 17)),
        "value": _chi2_p(a["value"], b["value"], np.linspace(V // 2, V, 17)),
        "distance": stats.ks_2samp(a["distance"], b["distance"]).pvalue,
        "inputs": _chi2_p(ours["inputs"].ravel(), inputs.ravel(), np.linspace(-0.5, V - 0.5, 33)),
    }


@pytest.mark.parametrize("name", ["fig2-64", "stats-256"])
def test_default_law_matches_zoologys(name):
    """Token marginals, query slots, key-to-query distances and pairs per sequence of 2,000
    of our samples against 2,000 of zoology's: no two-sample test rejects at 0.1%."""
    p = _law_p_values(name)
    assert min(p.values()) > 1e-3, p


def test_the_law_comparison_can_fail():
    """The same comparison rejects uniform query slots (power_a 1): it has the power to."""
    p = _law_p_values("stats-256", power_a=1.0)
    assert p["slot"] < 1e-6 and p["distance"] < 1e-6, p


def test_legacy_choice_p_is_numpys():
    """The rounds of NumPy's legacy choice(replace=False, p) on the same doubles, and the
    'ran out' answer when the doubles do not reach (then nothing counts as used)."""
    from longsynth.generators.recall.mqar import legacy_choice_p

    for space, size, a, seed in [(192, 64, 0.01, 0), (30, 30, 0.5, 1), (7, 1, 1.0, 2), (500, 100, 0.01, 3)]:
        p = a * np.arange(1, space + 1) ** (a - 1)
        p = p / p.sum()
        want = np.random.RandomState(seed).choice(space, size=size, replace=False, p=p)
        doubles = np.random.RandomState(seed).random_sample(50 * size)
        out = np.empty(size, dtype=np.int64)
        used = legacy_choice_p(p, size, doubles, 0, out)
        assert used > 0 and np.array_equal(out, want)
        assert legacy_choice_p(p, size, doubles[: used - 1], 0, np.empty(size, dtype=np.int64)) == -1
