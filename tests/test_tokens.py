"""The shared pieces of the token tasks (family "tokens", docs/adding-a-task.md "Token
tasks"): the PyTorch encoding, `info` and `show` for any token task, `authors_stream`,
`gen --authors-stream` with its manifest record and `verify --deep`. Driven through the
command line (click's CliRunner) with mqar, the first token task."""
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import longsynth
from longsynth import registry, store
from longsynth.cli.main import cli
from longsynth.torch import OnTheFlyDataset, ShardDataset, encode_batch, encoder

from test_reliability import flip_sample_byte, one_error_line

PARAMS = ["--input-seq-len", "32", "--num-kv-pairs", "4", "--vocab-size", "100"]
SMALL = dict(input_seq_len=32, num_kv_pairs=4, vocab_size=100)
SPLITS = "train=30,val=5,test=7"


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("tokens")
    ours, theirs = base / "ours", base / "authors"
    run("gen", "mqar", *PARAMS, "--splits", SPLITS, "--seed", 4, "--shard-size", 8, "--out", ours)
    run("gen", "mqar", *PARAMS, "--splits", SPLITS, "--seed", 4, "--shard-size", 8, "--authors-stream",
        "--workers", 2, "--out", theirs)
    return ours, theirs


def test_every_token_task_has_what_the_shared_pieces_need():
    tokens = [t for t in registry.all_tasks().values() if t.family == "tokens"]
    assert tokens
    for t in tokens:
        cfg = t.make_config()
        specs = t.keys(cfg)
        assert {"inputs", "targets"} <= set(specs) and t.batchable and t.show is not None
        for k in ("inputs", "targets"):
            dt = np.dtype(specs[k].dtype)
            assert dt.kind == "i" and np.iinfo(dt).min <= -100 and np.iinfo(dt).max >= t.vocab_size(cfg) - 1


def test_authors_dataset_is_the_authors_stream(dirs):
    _, theirs = dirs
    m = store.read_manifest(theirs)
    assert m["stream"] == "authors" and "--authors-stream" in m["command"]
    ds = longsynth.open(theirs)
    for split, n in (("train", 30), ("val", 5), ("test", 7)):
        want = longsynth.authors_stream("mqar", n, seed=4, split=split, **SMALL)
        got = np.stack([ds[split][i]["inputs"] for i in range(n)])
        assert got.dtype == np.int8 and np.array_equal(got, want["inputs"])  # V 100: one byte a token
        assert np.array_equal(np.stack([ds[split][i]["targets"] for i in range(n)]), want["targets"])


def test_our_law_is_the_default_and_another_dataset(dirs):
    ours, theirs = dirs
    m = store.read_manifest(ours)
    assert "stream" not in m
    assert m["generation"] != store.read_manifest(theirs)["generation"]
    s = longsynth.open(ours)["val"][3]
    want = longsynth.sample("mqar", 3, seed=4, split="val", **SMALL)
    assert np.array_equal(s["inputs"], want["inputs"]) and np.array_equal(s["targets"], want["targets"])


@pytest.mark.parametrize("which", [0, 1])
def test_verify_deep_regenerates_the_right_stream(dirs, which):
    root = dirs[which]
    assert "regenerated and identical" in run("verify", root, "--deep", "--samples", 40)


def test_verify_deep_catches_a_stream_swapped_in_the_manifest(dirs, tmp_path):
    """An authors' dataset whose manifest claims our law fails the deep check (and the
    other way round): the stream is part of what verify regenerates."""
    import shutil

    _, theirs = dirs
    root = tmp_path / "swapped"
    shutil.copytree(theirs, root)
    m = json.loads((root / "manifest.json").read_text())
    del m["stream"]
    (root / "manifest.json").write_text(json.dumps(m))
    r = CliRunner().invoke(cli, ["verify", str(root), "--deep"])
    assert r.exit_code != 0


def test_authors_stream_resumes_to_the_same_bytes(dirs, tmp_path):
    _, theirs = dirs
    root = tmp_path / "again"
    run("gen", "mqar", *PARAMS, "--splits", SPLITS, "--seed", 4, "--shard-size", 8, "--authors-stream",
        "--out", root)
    (root / "train-00002.h5").unlink()
    m = json.loads((root / "manifest.json").read_text())
    m["complete"] = False
    m["splits"]["train"]["shards"] = [r for r in m["splits"]["train"]["shards"] if r["file"] != "train-00002.h5"]
    (root / "manifest.json").write_text(json.dumps(m))
    out = run("gen", "mqar", *PARAMS, "--splits", SPLITS, "--seed", 4, "--shard-size", 8, "--authors-stream",
              "--out", root)
    assert "resuming" in out
    for f in ("train-00002.h5", "test-00000.h5"):
        assert (root / f).read_bytes() == (theirs / f).read_bytes()


def test_damage_in_an_authors_dataset_is_found(dirs, tmp_path):
    import shutil

    _, theirs = dirs
    root = tmp_path / "damaged"
    shutil.copytree(theirs, root)
    flip_sample_byte(root / "train-00001.h5", "inputs", 3)
    r = CliRunner().invoke(cli, ["verify", str(root)])
    assert "damaged" in one_error_line(r)


def test_authors_stream_refusals(tmp_path):
    r = CliRunner().invoke(cli, ["gen", "cumsum", "--authors-stream", "--out", str(tmp_path / "a")])
    assert "no authors' stream" in one_error_line(r)
    r = CliRunner().invoke(cli, ["gen", "mqar", "--random-non-queries", "--authors-stream", "-n", "10",
                                 "--out", str(tmp_path / "b")])
    assert "unseeded" in one_error_line(r)
    assert not (tmp_path / "b" / "manifest.json").exists()


def test_info_reports_tokens(dirs):
    ours, _ = dirs
    text = run("info", ours)
    assert "tokens: vocabulary 100; per split: scored positions per sample (targets != -100)" in text
    assert "  train scored per sample: min 4 mean 4.00 max 4, 120 in all" in text
    assert "class balance" not in text
    s = json.loads(run("info", ours, "--json"))
    assert list(s["tokens"]) == list(s["splits"])  # per split, never pooled
    tk = s["tokens"]["train"]
    assert tk["scored_per_sample"]["total"] == 4 * 30 and tk["inputs"]["outside_vocab"] == 0
    assert tk["inputs"]["top"][0][0] == 0  # the filler is the commonest input token
    assert all(50 <= i < 100 for i, _ in tk["targets"]["top"])  # scored targets are values


def test_info_counts_ids_outside_the_vocabulary():
    from longsynth.stats import _Tokens

    t = _Tokens(10)
    t.add(np.array([[1, 2, 12, -3]]), np.array([[-100, 5, 11, -100]]))
    s = t.summary()
    assert s["inputs"]["outside_vocab"] == 2 and s["targets"]["outside_vocab"] == 1
    assert s["scored_per_sample"] == {"min": 2, "max": 2, "mean": 2.0, "total": 2}


def test_show_task_and_dir(dirs, tmp_path):
    ours, _ = dirs
    out = run("show", "mqar", *PARAMS, "--count", 3, "--out", tmp_path / "a.png")
    assert "3 samples, 12 scored positions" in out and (tmp_path / "a.png").stat().st_size > 1000
    out = run("show", ours, "--count", 2, "--split", "test", "--out", tmp_path / "b.png")
    assert "2 samples, 8 scored positions" in out
    out = run("show", "mqar", "--input-seq-len", 512, "--num-kv-pairs", 64, "--out", tmp_path / "c.png")
    assert "64 scored" in out


def test_torch_encoding(dirs):
    ours, _ = dirs
    ds = ShardDataset(str(ours), "train")
    x, y = ds[5]
    s = longsynth.open(ours)["train"][5]
    assert x.dtype == torch.int64 and y.dtype == torch.int64 and x.shape == (32,)
    assert np.array_equal(x.numpy(), s["inputs"]) and np.array_equal(y.numpy(), s["targets"])
    assert int((y != -100).sum()) == 4
    raw = ShardDataset(str(ours), "train", encode=False)[5]
    bx, by = encode_batch("tokens", raw[0][None], raw[1][None])
    assert torch.equal(bx[0], x) and torch.equal(by[0], y)
    stream = OnTheFlyDataset("mqar", seed=4, batch_size=3, steps=1, **SMALL)
    sx, sy = next(iter(stream))
    assert sx.shape == (3, 32) and sx.dtype == torch.int64 and torch.equal(sx[0], torch.from_numpy(
        longsynth.sample("mqar", 0, seed=4, **SMALL)["inputs"].astype(np.int64)))
    with pytest.raises(ValueError, match="positional"):
        encoder("tokens", positional=True)


def test_authors_stream_api_checks_its_arguments():
    with pytest.raises(ValueError, match="count"):
        longsynth.authors_stream("mqar", -1, seed=0)
    with pytest.raises(ValueError, match="seed"):
        longsynth.authors_stream("mqar", 3, seed=-1)
    with pytest.raises(ValueError, match="not a parameter"):
        longsynth.authors_stream("mqar", 3, seed=0, L=5)
    got = longsynth.authors_stream("mqar", 0, seed=0)
    assert got["inputs"].shape == (0, 64)


def test_authors_stream_of_no_rows_has_the_row_shape():
    for name, t in registry.all_tasks().items():
        if t.authors is not None and t.authors_arrays is None:  # the Chomsky tasks return the authors' arrays:
            # their shapes are tests/test_chomsky_authors_*.py's
            params = {k: 0 for k in t.authors_params}  # RegBench's hash seed: the authors' rows need one
            got = longsynth.authors_stream(name, 0, seed=0, split=t.authors.splits[0], **params)
            L = t.keys(t.make_config())["inputs"].shape[0]
            assert got["inputs"].shape == (0, L) and got["targets"].shape == (0, L), name


def test_below_is_exact_and_matches_the_twin():
    """rng.below (the token tasks' draw) against naive.Stream.below, including sizes where
    the rejection matters (n near 2^32) and n = 1."""
    from numba import njit

    import naive
    from longsynth import rng

    @njit
    def draws(seed, n, k):
        s = rng.stream(seed, 1, 0)
        out = np.empty(k, dtype=np.int64)
        for i in range(k):
            out[i] = rng.below(s, n)
        return out

    for n in (1, 2, 3, 7, 1000, 2**31 + 1, 2**32 - 1, 2**32):
        st = naive.Stream(5, 1, 0)
        assert draws(5, n, 300).tolist() == [st.below(n) for _ in range(300)], n
    counts = np.bincount(draws(9, 6, 60000), minlength=6)
    assert counts.min() > 9500 and counts.max() < 10500
