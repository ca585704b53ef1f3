"""MAD's six token tasks: kernels vs the NumPy twins, the authors' stream vs fixtures made by running
MAD's code, our default law vs MAD's within sampling error, the definitions' properties."""
import json
import os

import numpy as np
import pytest

import longsynth
import naive
from click.testing import CliRunner
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.generators import mad
from longsynth.generators.mad import authors as mad_authors
from longsynth.rng import SPLITS

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "data", "mad_authors.npz")
TASKS = {t.name: t for t in mad.TASKS}

TWIN = {
    "mad-recall": naive.mad_recall, "mad-noisy-recall": naive.mad_recall,
    "mad-fuzzy-recall": naive.mad_fuzzy_recall, "mad-selective-copying": naive.mad_selective_copying,
    "mad-compression": naive.mad_compression, "mad-memorization": naive.mad_memorization,
}

# (task, params): defaults, the smallest sizes, every option, noise
CASES = [
    ("mad-recall", {}), ("mad-recall", dict(vocab_size=3, seq_len=4)),
    ("mad-recall", dict(multi_query=False, seq_len=36)),
    ("mad-recall", dict(vocab_size=40, noise_vocab_size=8, frac_noise=0.9, seq_len=20)),
    ("mad-noisy-recall", {}), ("mad-noisy-recall", dict(frac_noise=0.8, seq_len=512, vocab_size=144)),
    ("mad-fuzzy-recall", {}), ("mad-fuzzy-recall", dict(vocab_size=64, seq_len=256)),
    ("mad-fuzzy-recall", dict(vocab_size=9, k_motif_size=3, v_motif_size=4, seq_len=15)),
    ("mad-fuzzy-recall", dict(multi_query=False, k_motif_size=1, v_motif_size=2, seq_len=31)),
    ("mad-fuzzy-recall", dict(vocab_size=30, noise_vocab_size=6, frac_noise=0.5, seq_len=64)),
    ("mad-selective-copying", {}), ("mad-selective-copying", dict(vocab_size=3, seq_len=4, num_tokens_to_copy=1)),
    ("mad-selective-copying", dict(seq_len=97, num_tokens_to_copy=9, blank_after_last=True)),
    ("mad-compression", {}), ("mad-compression", dict(vocab_size=3, seq_len=2)),
    ("mad-compression", dict(vocab_size=20, noise_vocab_size=4, frac_noise=0.4, seq_len=33)),
    ("mad-compression", dict(vocab_size=20, noise_vocab_size=4, frac_noise=0.4, ignore_noise_targets=True)),
    ("mad-memorization", {}), ("mad-memorization", dict(vocab_size=5, seq_len=2)),
    ("mad-memorization", dict(vocab_size=40000, seq_len=30, kv_map_seed=5)),
    ("mad-memorization", dict(vocab_size=64, noise_vocab_size=8, frac_noise=0.99, seq_len=16)),
]
KEYS = [(0, "train", 0), (7, "val", 3), (2**40 + 1, "test", 12345)]


def _id(case):
    task, params = case
    return task + "-" + "-".join(f"{k}{v}" for k, v in params.items())


def _full(task, params):
    """Every parameter, defaults filled in (the twins take them all)."""
    cfg = TASKS[task].make_config(**params)
    return {f: getattr(cfg, f) for f in cfg.__dataclass_fields__}


@pytest.mark.parametrize("case", CASES, ids=_id)
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{k[2]}")
def test_kernel_matches_twin(case, key):
    task, params = case
    seed, split, index = key
    got = longsynth.sample(task, index, seed=seed, split=split, **params)
    want = TWIN[task](seed, split, index, **_full(task, params))
    assert sorted(got) == ["inputs", "targets"]
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_six_tasks_registered_with_mad_defaults():
    assert {"mad-recall", "mad-noisy-recall", "mad-fuzzy-recall", "mad-selective-copying", "mad-compression",
            "mad-memorization"} <= set(longsynth.tasks())
    c = TASKS["mad-recall"].make_config()  # MAD's config: multi_query True, no noise (its function: False, 16)
    assert (c.vocab_size, c.seq_len, c.multi_query, c.noise_vocab_size, c.frac_noise) == (16, 128, True, 0, 0.0)
    c = TASKS["mad-noisy-recall"].make_config()
    assert (c.vocab_size, c.seq_len, c.noise_vocab_size, c.frac_noise, c.multi_query) == (32, 128, 16, 0.2, True)
    c = TASKS["mad-fuzzy-recall"].make_config()
    assert (c.vocab_size, c.seq_len, c.k_motif_size, c.v_motif_size, c.multi_query) == (16, 128, 3, 3, True)
    c = TASKS["mad-selective-copying"].make_config()
    assert (c.vocab_size, c.seq_len, c.num_tokens_to_copy) == (16, 256, 16)
    assert (TASKS["mad-compression"].make_config().vocab_size, TASKS["mad-compression"].make_config().seq_len) == (
        16, 32)
    c = TASKS["mad-memorization"].make_config()
    assert (c.vocab_size, c.seq_len, c.kv_map_seed) == (256, 32, 12345)


# ---------------------------------------------------------------- the authors' stream


def _fixture_cases():
    with np.load(FIXTURES) as z:
        return list(enumerate(json.loads(str(z["cases"]))))


@pytest.mark.parametrize("i,case", _fixture_cases(), ids=lambda c: str(c) if isinstance(c, int) else c["task"])
def test_authors_stream_equals_mads_own_output(i, case):
    cfg = TASKS[case["task"]].make_config(**case["params"])
    if case["kind"] == "stream":  # through the public API, as a user asks for it
        got = {s: longsynth.authors_stream(case["task"], case["count"], seed=case["seed"], split=s, **case["params"])
               for s in ("train", "test")}
    else:
        got = mad_authors.mad_dataset(case["task"], cfg, seed=case["seed"],
                                      num_train_examples=case["num_train_examples"],
                                      num_test_examples=case["num_test_examples"])
    with np.load(FIXTURES) as z:
        for s in ("train", "test"):
            for k in ("inputs", "targets"):
                want = z[f"{i}/{s}/{k}"]
                assert got[s][k].dtype == np.int64 and got[s][k].shape == want.shape, (s, k)
                np.testing.assert_array_equal(got[s][k], want, err_msg=f"{s} {k}")


def test_fixtures_cover_every_task_and_the_continuation():
    cases = [c for _, c in _fixture_cases()]
    assert {c["task"] for c in cases if c["kind"] == "stream"} == set(TASKS)
    assert any(c["kind"] == "dataset" for c in cases)


def test_mads_test_set_continues_the_training_stream():
    cfg = TASKS["mad-recall"].make_config()
    both = mad_authors.mad_dataset("mad-recall", cfg, seed=3, num_train_examples=4, num_test_examples=2)
    fresh = mad_authors.stream_of("mad-recall")(cfg, 2, 3, "test")
    assert not np.array_equal(both["test"]["inputs"], fresh["inputs"])
    train = mad_authors.stream_of("mad-recall")(cfg, 6, 3, "train")  # recall's draws do not depend on the split
    assert np.array_equal(both["test"]["inputs"], train["inputs"][4:])


def test_authors_stream_refuses_our_corrected_variants():
    cfg = TASKS["mad-selective-copying"].make_config(blank_after_last=True)
    with pytest.raises(LongsynthError, match="blank_after_last: MAD's generator has no such option"):
        mad_authors.stream_of("mad-selective-copying")(cfg, 2, 0, "train")
    cfg = TASKS["mad-compression"].make_config(ignore_noise_targets=True)
    with pytest.raises(LongsynthError, match="ignore_noise_targets"):
        mad_authors.stream_of("mad-compression")(cfg, 2, 0, "train")


def test_gen_authors_stream_writes_mads_pipeline_and_verifies(tmp_path):
    """gen --authors-stream writes MAD's generate_data: the test rows continue the training stream."""
    out = tmp_path / "sc"
    args = ["--seq-len", "40", "--num-tokens-to-copy", "8", "--splits", "train=12,test=5", "--seed", "3"]
    r = CliRunner().invoke(cli, ["gen", "mad-selective-copying", *args, "--authors-stream", "--out", str(out)])
    assert r.exit_code == 0, r.output
    ds = longsynth.open(out)
    cfg = TASKS["mad-selective-copying"].make_config(seq_len=40, num_tokens_to_copy=8)
    want = mad_authors.mad_dataset("mad-selective-copying", cfg, seed=3, num_train_examples=12, num_test_examples=5)
    api = longsynth.authors_dataset("mad-selective-copying", {"train": 12, "test": 5}, seed=3, seq_len=40,
                                    num_tokens_to_copy=8)
    for split, n in (("train", 12), ("test", 5)):
        for k in ("inputs", "targets"):
            stored = np.stack([ds[split][i][k] for i in range(n)])
            assert np.array_equal(stored, want[split][k]) and np.array_equal(stored, api[split][k]), (split, k)
    r = CliRunner().invoke(cli, ["verify", "--deep", str(out)])
    assert r.exit_code == 0 and "OK" in r.output, r.output
    r = CliRunner().invoke(cli, ["gen", "mad-selective-copying", *args, "--blank-after-last", "--authors-stream",
                                 "--out", str(tmp_path / "no")])
    assert r.exit_code != 0 and "blank_after_last: MAD's generator has no such option" in r.output


def _rows(split):
    return {split[i]["inputs"].tobytes() for i in range(len(split))}


@pytest.mark.parametrize("task,params", [
    ("mad-recall", ["--vocab-size", "24", "--seq-len", "100", "--no-multi-query"]),
    ("mad-noisy-recall", ["--vocab-size", "32", "--seq-len", "64"]),
    ("mad-fuzzy-recall", ["--vocab-size", "16", "--seq-len", "48"]),
    ("mad-selective-copying", ["--vocab-size", "16", "--seq-len", "64"]),
    ("mad-compression", ["--vocab-size", "16", "--seq-len", "32"]),
])
def test_authors_stream_splits_share_no_rows(tmp_path, task, params):
    """Each split continues the one before: no val or test input is a training input (a fresh
    generator per split made the test split the first rows of train)."""
    out = tmp_path / "d"
    r = CliRunner().invoke(cli, ["gen", task, "--authors-stream", "--seed", "7", *params,
                                 "--splits", "train=500,val=100,test=200", "--out", str(out)])
    assert r.exit_code == 0, r.output
    ds = longsynth.open(out)
    train, val, test = (_rows(ds[s]) for s in ("train", "val", "test"))
    assert len(test) == 200 and not test & train and not val & train and not test & val
    m = json.loads((out / "manifest.json").read_text())
    assert m["stream"] == "authors-pipeline" and "continuing" in (out / "README.md").read_text()


def test_authors_dataset_val_continues_train_then_test_continues_val():
    cfg = dict(vocab_size=16, seq_len=32)
    both = longsynth.authors_dataset("mad-recall", {"train": 3, "val": 2, "test": 4}, seed=5, **cfg)
    alone = longsynth.authors_stream("mad-recall", 9, seed=5, split="test", **cfg)  # the same draws, one stream
    assert np.array_equal(both["val"]["inputs"], alone["inputs"][3:5])
    assert np.array_equal(both["test"]["inputs"], alone["inputs"][5:])


def test_memorization_pipeline_map_counts_noise_tokens_as_madconfig_does():
    """MADConfig builds the map over vocab_size - 1 tokens; the instance function over the
    non-noise ones: with noise the two maps differ (the fixtures hold MAD's output of both)."""
    cfg = TASKS["mad-memorization"].make_config(vocab_size=64, seq_len=16, noise_vocab_size=8, frac_noise=0.3,
                                                kv_map_seed=6)
    piped = mad_authors.mad_dataset("mad-memorization", cfg, seed=6, num_train_examples=4, num_test_examples=3)
    alone = mad_authors.stream_of("mad-memorization")(cfg, 4, 6, "train")
    assert not np.array_equal(piped["train"]["targets"], alone["targets"])
    assert piped["train"]["targets"].max() >= 64 - 8 - 1  # values reach into the noise tokens' ids


def test_recall_where_mads_code_fails():
    """Every loop slot noise and the never-noise slot the final one: MAD's generator raises
    (rng.choice of an empty list; at seq_len 4 and frac_noise 0.99 about half the draws).
    The authors' stream says so in one line; our law redraws such a sample."""
    p = dict(vocab_size=20, seq_len=4, noise_vocab_size=4, frac_noise=0.99)
    with pytest.raises(LongsynthError, match="every slot was noise, no key to probe"):
        longsynth.authors_stream("mad-recall", 50, seed=0, split="test", **p)
    b = _ours("mad-recall", p, "test", 300)
    x, y = b["inputs"], b["targets"]
    assert (x[:, 0] < 8).all() and (x[:, 1] >= 8).all() and (x[:, 2] == x[:, 0]).all()  # the pair, then its probe
    assert (y[:, 2] == x[:, 1]).all() and (y[:, :2] == -100).all()


def test_authors_stream_leaves_numpys_global_state_alone():
    np.random.seed(99)
    before = np.random.get_state()[1].copy()
    mad_authors.stream_of("mad-selective-copying")(TASKS["mad-selective-copying"].make_config(), 3, 1, "train")
    assert np.array_equal(np.random.get_state()[1], before)


# ---------------------------------------------------------------- our law vs MAD's, within sampling error


def _ours(task, params, split, count, seed=5):
    t = TASKS[task]
    cfg = t.make_config(**params)
    return {k: v.astype(np.int64) for k, v in t.generate(cfg, seed, SPLITS[split], 0, count,
                                                         t.fixed_draws(cfg, seed)).items()}


def _theirs(task, params, split, count, seed=5):
    return mad_authors.stream_of(task)(TASKS[task].make_config(**params), count, seed, split)


def _per_sample_stats(task, cfg, x, y):
    """name -> float [count]: one value per sample (samples are independent, so means have plain SEs)."""
    v = cfg.vocab_size
    stats = {}
    hist = np.stack([np.bincount(r, minlength=v) for r in x]) / x.shape[1]
    for tok in range(v):
        stats[f"input token {tok}"] = hist[:, tok]
    scored = y != -100
    stats["scored positions"] = scored.sum(1).astype(float)
    edges = np.linspace(0, x.shape[1], 9).astype(int)
    for b in range(8):
        stats[f"scored in eighth {b}"] = scored[:, edges[b]:edges[b + 1]].mean(1)
    if task != "mad-memorization":  # a map is one draw: its image differs between two maps
        yh = np.stack([np.bincount(np.where(r < 0, v, r), minlength=v + 1) for r in y]) / y.shape[1]
        for tok in range(v + 1):
            stats[f"target token {tok if tok < v else -100}"] = yh[:, tok]
    if task in ("mad-recall", "mad-noisy-recall", "mad-fuzzy-recall"):
        ns = v - cfg.noise_vocab_size - (0 if task != "mad-fuzzy-recall" else 1)
        stats["distinct keys"] = np.array([len(set(r[r < ns // 2].tolist())) for r in x], dtype=float)
    if getattr(cfg, "noise_vocab_size", 0):
        lo = {"mad-compression": v - cfg.noise_vocab_size - 1, "mad-memorization": v - cfg.noise_vocab_size - 1}.get(
            task, v - cfg.noise_vocab_size - (1 if task == "mad-fuzzy-recall" else 0))
        stats["noise fraction"] = ((x >= lo) & (x < lo + cfg.noise_vocab_size)).mean(1)
    if task == "mad-fuzzy-recall":
        stats["front padding"] = np.argmax(x != v - 1, axis=1).astype(float)
    if task == "mad-selective-copying":
        copy_at = np.argmax(x == v - 1, axis=1)
        stats["data token before copy"] = (x[np.arange(len(x)), copy_at - 1] != v - 2).astype(float)
        stats["first data token"] = np.argmax(x < v - 2, axis=1).astype(float)
    return stats


def _z_scores(task, params, split, count, ours_params=None):
    cfg = TASKS[task].make_config(**params)
    a = _per_sample_stats(task, cfg, **dict(zip("xy", _ours(task, ours_params or params, split, count).values())))
    b = _per_sample_stats(task, cfg, **dict(zip("xy", _theirs(task, params, split, count).values())))
    out = {}
    for name in a:
        se = np.sqrt(a[name].var(ddof=1) / len(a[name]) + b[name].var(ddof=1) / len(b[name]))
        diff = a[name].mean() - b[name].mean()
        out[name] = 0.0 if se == 0 and diff == 0 else abs(diff) / se if se > 0 else np.inf
    return out


LAW_CASES = [
    ("mad-recall", {}, 1500), ("mad-recall", dict(multi_query=False, seq_len=64), 1500),
    ("mad-noisy-recall", {}, 1500), ("mad-noisy-recall", dict(frac_noise=0.8), 1500),
    ("mad-fuzzy-recall", {}, 800), ("mad-fuzzy-recall", dict(vocab_size=32, seq_len=64), 800),
    ("mad-selective-copying", {}, 1500), ("mad-compression", {}, 3000),
    ("mad-compression", dict(vocab_size=24, noise_vocab_size=4, frac_noise=0.3), 3000),
    ("mad-memorization", {}, 3000), ("mad-memorization", dict(vocab_size=64, noise_vocab_size=8, frac_noise=0.4),
                                      3000),
]


@pytest.mark.parametrize("task,params,count", LAW_CASES, ids=lambda c: c if isinstance(c, str) else None)
@pytest.mark.parametrize("split", ["train", "test"])
def test_default_law_matches_mads(task, params, count, split):
    z = _z_scores(task, params, split, count)
    worst = max(z, key=z.get)
    assert z[worst] < 5.0, f"{worst}: ours and MAD's differ by {z[worst]:.1f} standard errors"


@pytest.mark.parametrize("task,theirs,ours,stat", [
    ("mad-selective-copying", {}, dict(blank_after_last=True), "data token before copy"),
    ("mad-noisy-recall", {}, dict(frac_noise=0.25), "noise fraction"),
    ("mad-fuzzy-recall", {}, dict(k_motif_size=2), "scored positions"),
])
def test_the_law_comparison_can_fail(task, theirs, ours, stat):
    """The comparison above detects a law that is off: a variant of ours against MAD's default."""
    z = _z_scores(task, theirs, "test", 1500, ours_params=ours)
    assert z[stat] > 8.0, z[stat]


# ---------------------------------------------------------------- the definitions' properties


def _block(task, split="test", count=200, **params):
    return _ours(task, params, split, count)


def test_recall_scores_values_of_keys_shown_before():
    for mq in (True, False):
        b = _block("mad-recall", multi_query=mq)
        nk = 8 if mq else 7
        for x, y in zip(b["inputs"], b["targets"]):
            full = np.append(x, y[-1])  # the last target is the probe's value, the last input token
            for i in np.flatnonzero(y != -100):
                k, v = full[i], full[i + 1]
                assert v == y[i] and k < nk <= v
                shown = full[:i][0::2] if mq else full[:i - 1][0::2]
                assert k in shown.tolist()
            if not mq:
                assert full[-3] == 15 and (y != -100).sum() == 1


def test_train_targets_are_next_tokens():
    for task in ("mad-recall", "mad-fuzzy-recall"):
        b = _block(task, split="train")
        assert np.array_equal(b["inputs"][:, 1:], b["targets"][:, :-1])


def test_fuzzy_recall_pads_at_the_front_and_tests_full_keys():
    b = _block("mad-fuzzy-recall", count=300)
    for x in b["inputs"]:
        pad = int(np.argmax(x != 15))
        assert pad >= 1 and not (x[pad:] == 15).any()
    scored = (b["targets"] != -100).sum(1)
    assert scored.min() >= 1


def test_selective_copying_last_data_token_before_copy_unless_corrected():
    for corrected in (False, True):
        b = _block("mad-selective-copying", count=400, blank_after_last=corrected)
        x, y = b["inputs"], b["targets"]
        copy_at = np.argmax(x == 15, axis=1)
        assert (copy_at == 256 - 17).all()
        before = x[np.arange(len(x)), copy_at - 1]
        assert ((before != 14).all()) == (not corrected)
        for r, t in zip(x, y):
            assert np.array_equal(r[:239][r[:239] != 14], t[-16:]) and (t[:-16] == -100).all()


def test_compression_targets_are_the_noisy_inputs_unless_corrected():
    p = dict(vocab_size=20, noise_vocab_size=4, frac_noise=0.4)
    b = _block("mad-compression", **p)
    assert np.array_equal(b["targets"], b["inputs"]) and ((b["inputs"] >= 15) & (b["inputs"] < 19)).any()
    c = _block("mad-compression", ignore_noise_targets=True, **p)
    noise = (c["inputs"] >= 15) & (c["inputs"] < 19)
    assert np.array_equal(c["targets"] == -100, noise) and np.array_equal(c["targets"][~noise], c["inputs"][~noise])


def test_memorization_map_is_fixed_by_kv_map_seed():
    b = _block("mad-memorization", count=500)
    x, y = b["inputs"], b["targets"]
    assert (x[:, 1::2] == 255).all() and (y[:, 0::2] == -100).all()
    kv = {}
    for k, v in zip(x[:, 0::2].ravel(), y[:, 1::2].ravel()):
        assert kv.setdefault(int(k), int(v)) == v
    assert len(set(kv.values())) == len(kv) and all(127 <= v < 255 for v in kv.values())
    other = _ours("mad-memorization", dict(kv_map_seed=1), "test", 500)
    assert not np.array_equal(other["targets"], y) and np.array_equal(other["inputs"], x)


@pytest.mark.parametrize("task,params,message", [
    ("mad-recall", dict(seq_len=7), "seq_len: must be even"),
    ("mad-recall", dict(vocab_size=4, noise_vocab_size=3), "vocab_size: must leave >= 2"),
    ("mad-recall", dict(frac_noise=0.5), "noise_vocab_size: must be > 0 when frac_noise > 0"),
    ("mad-noisy-recall", dict(frac_noise=1.0), "frac_noise: must be in"),
    ("mad-fuzzy-recall", dict(vocab_size=6), "fewer than k_motif_size"),
    ("mad-fuzzy-recall", dict(seq_len=12), "seq_len: must exceed 2 (k_motif_size + v_motif_size) = 12"),
    ("mad-selective-copying", dict(seq_len=33), "seq_len: must exceed 2 num_tokens_to_copy + 1 = 33"),
    ("mad-compression", dict(vocab_size=4, noise_vocab_size=3), "vocab_size: must leave >= 1 data token"),
    ("mad-memorization", dict(seq_len=33), "seq_len: must be even"),
    ("mad-memorization", dict(vocab_size=3), "vocab_size: must leave >= 4 key/value tokens"),
    ("mad-memorization", dict(frac_noise=1.0, noise_vocab_size=4), "frac_noise: must be in"),
])
def test_bad_parameters_are_one_clear_line(task, params, message):
    with pytest.raises(LongsynthError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        TASKS[task].make_config(**params)
