"""A stranger's folder, retested (docs/format.md, "Trust"): a shard stored as one compressed
chunk, manifest `fixed` and `vocab` entries that are not the task's, a shard count that
outgrows the manifest, terminal escapes in stored text, a link planted where `show` writes,
a long token row drawn whole, and generator parameters that mean no task. Each ends in one
line or correct output."""
import json
import os
import shutil
import time

import numpy as np
import pytest

import longsynth
from longsynth import registry, store
from longsynth.files import file_sha256

from untrusted_fixtures import edit_manifest, invoke, one_error_line  # noqa: E402

GEN = ["gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11, "-j", 1]


def relist(root, name):
    """Update a shard's size and SHA-256 in the manifest, as a forger would."""
    path = os.path.join(root, name)

    def change(m):
        for s in m["splits"].values():
            for rec in s["shards"]:
                if rec["file"] == name:
                    rec["bytes"], rec["sha256"] = os.path.getsize(path), file_sha256(path)

    edit_manifest(root, change)


@pytest.fixture(scope="module")
def gzipped(tmp_path_factory):
    """A small gzip-compressed dataset, written by the command line; tests copy it."""
    root = tmp_path_factory.mktemp("gz") / "d"
    r = invoke(*GEN, "--compression", "gzip", "--out", root)
    assert r.exit_code == 0, r.output
    return root


@pytest.fixture
def ds(gzipped, tmp_path):
    root = tmp_path / "d"
    shutil.copytree(gzipped, root)
    return root


# ---------------------------------------------------------------- 1. one chunk per key: a decompression bomb


@pytest.mark.parametrize("key", ["inputs", "_check"])
def test_a_shard_stored_in_one_chunk_is_refused_at_open(ds, key):
    """The same values and checksums, rewritten as one gzip chunk covering the whole key (a
    read of one sample would decompress the shard): refused when the shard is opened, by
    readers and by `verify` (not only --deep), in one line naming the file and key."""
    import h5py

    assert store.verify(str(ds)) == []  # longsynth's own chunks (one per sample) pass
    path = ds / "train-00000.h5"
    with h5py.File(path, "r+") as f:
        data = f[key][()]
        del f[key]
        f.create_dataset(key, data=data, chunks=data.shape, compression="gzip", shuffle=True)
    relist(ds, "train-00000.h5")  # the SHA-256 alone does not catch it
    t0 = time.monotonic()
    with pytest.raises(store.DamagedDataError, match=rf"train-00000.h5: {key} is stored in chunks of "
                                                     rf"\({data.shape[0]}, .*not in .* as longsynth writes it"):
        longsynth.open(ds)["train"][0]
    assert np.array_equal(longsynth.open(ds)["train"][40]["inputs"],  # the other shards still read
                          longsynth.sample("cumsum", 40, seed=11, L=32)["inputs"])
    problems = store.verify(str(ds))
    assert problems[0].startswith(f"train-00000.h5: {key} is stored in chunks of"), problems
    r = invoke("verify", ds)
    assert "problem(s) found" in one_error_line(r) and f"train-00000.h5: {key} is stored in chunks" in r.output
    assert "\n" not in problems[0] and time.monotonic() - t0 < 10


def test_ragged_values_in_other_chunks_are_refused(tmp_path):
    import h5py

    root = tmp_path / "ls"
    store.generate(str(root), "listops-subtrees", {"min_length": 20, "max_length": 60, "max_depth": 4}, seed=2,
                   splits={"train": 8}, workers=1, compression="gzip")
    with h5py.File(root / "train-00000.h5", "r+") as f:
        values = f["inputs"]["values"][()]
        del f["inputs"]["values"]
        f["inputs"].create_dataset("values", data=values, maxshape=(None,) + values.shape[1:],
                                   chunks=(10**6,) + values.shape[1:], compression="gzip")
    relist(root, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match=r"train-00000.h5: inputs/values is stored in chunks of "
                                                     r"\(1000000,\)"):
        longsynth.open(root)["train"][0]
    assert any("inputs/values is stored in chunks" in p for p in store.verify(str(root)))


# ---------------------------------------------------------------- 2. `fixed` entries the task does not draw


@pytest.fixture(scope="module")
def select_fixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("sf") / "d"
    store.generate(str(root), "select-fixed", {"L": 32, "M": 4}, seed=3, splits={"train": 8}, workers=1)
    return root


@pytest.mark.parametrize("edit,says", [
    (lambda m: m["fixed"].update(bogus=[1, 2]), "manifest: fixed: lists 'bogus', which select-fixed does not draw"),
    (lambda m: m["fixed"].pop("positions"), "manifest: fixed: lacks 'positions', which select-fixed draws"),
])
def test_a_fixed_entry_the_task_lacks_is_a_problem_not_a_keyerror(select_fixed, tmp_path, edit, says):
    root = tmp_path / "d"
    shutil.copytree(select_fixed, root)
    assert store.verify(str(root), deep=True) == []
    edit_manifest(root, edit)
    assert store.verify(str(root)) == [says]
    assert store.verify(str(root), deep=True) == [says]
    for deep in ([], ["--deep"]):
        r = invoke("verify", root, *deep)
        assert "problem(s) found" in one_error_line(r) and says in r.output and "KeyError" not in r.output


def test_a_fixed_entry_of_a_task_without_draws_is_one_line(ds, tmp_path):
    edit_manifest(ds, lambda m: m["fixed"].update(A=[[1.0]]))
    for cmd in (["verify", ds], ["verify", ds, "--deep"], ["info", ds]):
        assert "fixed: cumsum has no dataset-level draws, the manifest lists 1" in one_error_line(invoke(*cmd))


def test_the_hf_export_refuses_fixed_entries_the_task_lacks(select_fixed, tmp_path):
    pytest.importorskip("datasets")
    root = tmp_path / "d"
    shutil.copytree(select_fixed, root)
    edit_manifest(root, lambda m: m["fixed"].update({"<b>x</b>": 1}))
    line = one_error_line(invoke("export", root, "--format", "hf", "--out", tmp_path / "hf"))
    assert "which select-fixed does not draw" in line and not (tmp_path / "hf").exists()


# ---------------------------------------------------------------- 3. a rewritten vocabulary


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    root = tmp_path_factory.mktemp("par") / "d"
    store.generate(str(root), "parity", {}, seed=1, splits={"train": 8, "test": 8}, workers=1)
    return root


def test_a_rewritten_vocab_is_refused_in_one_line(parity, tmp_path):
    root = tmp_path / "d"
    shutil.copytree(parity, root)
    own = longsynth.vocab("parity")
    assert longsynth.open(root).manifest["vocab"] == own
    edit_manifest(root, lambda m: m["vocab"].__setitem__(1, "<img src=x onerror=alert(1)>"))
    says = "vocab: is not the vocabulary of parity with these params (3 tokens, parity has 3; first difference at id 1)"
    with pytest.raises(store.LongsynthError, match=r"manifest.json: vocab: is not the vocabulary of parity"):
        longsynth.open(root)
    for cmd in (["verify", root, "--deep"], ["info", root], ["show", root, "--out", tmp_path / "p.png"],
                ["export", root, "--format", "hf", "--out", tmp_path / "hf"]):
        r = invoke(*cmd)
        assert says in one_error_line(r) and "onerror" not in r.output
    assert not (tmp_path / "hf").exists() and not (tmp_path / "p.png").exists()
    edit_manifest(root, lambda m: m.update(vocab=own + ["extra"]))
    assert "(4 tokens, parity has 3; first difference at id 3)" in one_error_line(invoke("verify", root))
    edit_manifest(tmp_path / "d", lambda m: m.update(vocab=None))  # not recorded: the task's own
    assert longsynth.open(root).manifest["vocab"] == own


def test_a_vocab_for_a_task_without_one_is_refused(ds):
    edit_manifest(ds, lambda m: m.update(vocab=["\x1b]52;c;ZXZpbA==\x07"]))
    line = one_error_line(invoke("verify", ds))
    assert "vocab: cumsum has no vocabulary, the manifest lists 1 tokens" in line and "\x1b" not in line


def test_the_hf_card_prints_the_tasks_vocab(parity, tmp_path):
    pytest.importorskip("datasets")
    root = tmp_path / "d"
    shutil.copytree(parity, root)
    edit_manifest(root, lambda m: m.pop("vocab"))
    r = invoke("export", root, "--format", "hf", "--out", tmp_path / "hf")
    assert r.exit_code == 0, r.output
    card = (tmp_path / "hf" / "README.md").read_text()
    own = longsynth.vocab("parity")
    assert "Token id -> token: " + ", ".join(f"{i} `{t}`" for i, t in enumerate(own)) + "." in card


# ---------------------------------------------------------------- 4. shards the manifest cannot list


@pytest.mark.parametrize("dry", [False, True])
def test_more_shards_than_the_manifest_can_list_is_refused_before_writing(tmp_path, monkeypatch, dry):
    from longsynth.store import build
    from longsynth.store.layout import MAX_SHARDS

    monkeypatch.setattr(build, "_free_bytes", lambda root: 10**15)  # a dataset that does not fit is refused first

    out = tmp_path / "d"
    t0 = time.monotonic()
    line = one_error_line(invoke("gen", "cumsum", "--L", 8, "--splits", f"train={MAX_SHARDS},val=1,test=1",
                                 "--shard-size", 1, "-j", 1, "--out", out, *(["--dry-run"] if dry else [])))
    assert (f"shard_size: {MAX_SHARDS + 2:,} shards of 1 sample: at most {MAX_SHARDS:,} (the manifest lists every "
            f"shard); raise --shard-size to at least 2") in line
    assert not out.exists() and time.monotonic() - t0 < 10
    with pytest.raises(store.LongsynthError, match=r"raise --shard-size to at least 1,000"):
        store.dry_run(str(out), "cumsum", {"L": 8}, splits={"train": 10**8}, shard_size=999)
    p = store.dry_run(str(out), "cumsum", {"L": 8}, splits={"train": 10**8}, shard_size=1000)
    assert sum(p.shards.values()) == MAX_SHARDS and not out.exists()


def test_the_shard_bound_keeps_the_manifest_far_below_the_read_limit():
    """A manifest of MAX_SHARDS records, as _write_manifest writes it, is under a third of
    the 64 MB every reader accepts."""
    from longsynth.safe import MAX_JSON_BYTES
    from longsynth.store.layout import MAX_SHARDS

    rec = {"bytes": 10**12, "count": 10**12, "file": "train-99999.h5", "sha256": "f" * 64, "start": 10**17}
    m = {"splits": {"train": {"count": 10**17, "digest": "f" * 64, "shards": [rec] * MAX_SHARDS}}}
    size = len(json.dumps(m, indent=1, sort_keys=True))
    assert MAX_JSON_BYTES == 64 << 20 and size < MAX_JSON_BYTES / 3, size


# ---------------------------------------------------------------- 5. validate on a dataset it has no target for


def test_validate_on_a_token_dataset_names_its_target(tmp_path):
    pytest.importorskip("torch")
    root = tmp_path / "mq"
    store.generate(str(root), "mqar", {}, seed=0, splits={"train": 4}, workers=1)
    line = one_error_line(invoke("validate", root))
    assert f"{root}: a mqar dataset; validate trains from a dataset folder only on atomic, ListOps and " \
           "Pathfinder tasks; its target is the task itself, on fresh batches: `longsynth validate mqar` " \
           "(protocol mqar-64)" in line
    assert "pathfinder-seg" not in line and not (root / "validation").exists()


def test_validate_on_a_dataset_of_a_task_without_a_target_says_so(tmp_path):
    pytest.importorskip("torch")
    from longsynth.models_ref.evaluation.validate import _no_stored_target

    line = _no_stored_target("DIR", "mad-compression")
    assert line.endswith("mad-compression has no validation target (the best published MAD score is Mamba's 52.7%)")


# ---------------------------------------------------------------- 6. stored text never reaches the terminal raw


OSC = "\x1b]52;c;ZXZpbA==\x07"  # sets the clipboard
TITLE = "\x1b]0;pwned\x07"  # sets the window title


def _clean(output):
    assert "\x1b" not in output and "\x07" not in output, repr(output)
    return output


def test_info_escapes_a_manifests_versions(ds):
    edit_manifest(ds, lambda m: m["versions"].update(longsynth="1.0" + OSC))
    r = invoke("info", ds)
    assert r.exit_code == 0, r.output
    assert "longsynth 1.0\\x1b]52;c;ZXZpbA==\\x07" in _clean(r.output)


def test_info_escapes_a_validation_folder_name(ds):
    cert = {"task": "cumsum", "protocol": "atomic", "scale": "tiny", "model": "dlr", "lr": 1e-3, "seed": 0,
            "primary_metric": "r2", "test": {"r2": 0.5}, "best": {"r2": 0.5}, "final": {"r2": 0.5},
            "wall_time_s": 1.0, "train_tokens_per_s": 2.0}
    run = ds / "validation" / ("dlr" + TITLE)
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps(cert))
    r = invoke("info", ds)
    assert r.exit_code == 0 and "validation/dlr\\x1b]0;pwned\\x07)" in _clean(r.output), r.output
    (run / "metrics.json").write_text(json.dumps({**cert, "lr": "abc"}))  # the error line names the path
    line = one_error_line(invoke("info", ds))
    assert "dlr\\x1b]0;pwned\\x07/metrics.json: lr:" in _clean(line)


def test_verify_escapes_what_a_shard_holds(ds):
    import h5py

    with h5py.File(ds / "train-00000.h5", "r+") as f:
        f["x" + TITLE] = h5py.SoftLink("/inputs")
    relist(ds, "train-00000.h5")
    r = invoke("verify", ds)
    one_error_line(r)
    assert "train-00000.h5: x\\x1b]0;pwned\\x07 is a link to another file or path" in _clean(r.output)


# ---------------------------------------------------------------- 7. `show` never writes through a link


@pytest.mark.parametrize("how", ["--out", "cd"])
def test_show_never_writes_through_a_link_in_the_dataset(ds, tmp_path, monkeypatch, how):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    os.symlink(victim, ds / "preview.png")
    if how == "cd":  # `cd DIR && longsynth show .`: the default --out is DIR/preview.png
        monkeypatch.chdir(ds)
        r = invoke("show", ".")
    else:
        r = invoke("show", ds, "--out", ds / "preview.png")
    line = one_error_line(r)
    assert "preview.png: is a link inside the output folder, not a file longsynth wrote; not replaced" in line
    assert victim.read_text() == "mine" and os.path.islink(ds / "preview.png")
    assert not [e for e in os.listdir(ds) if e.endswith(".tmp")]
    os.remove(ds / "preview.png")
    r = invoke("show", ds, "--out", ds / "preview.png")
    assert r.exit_code == 0 and (ds / "preview.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", r.output


@pytest.mark.parametrize("task", [["cumsum", "--L", 32], ["pathfinder", "--size", 32],
                                  ["listops", "--max-length", 60, "--min-length", 20]])
@pytest.mark.parametrize("suffix", [".png", ".txt"])
def test_show_of_a_task_never_writes_through_a_link(tmp_path, task, suffix):
    if suffix == ".txt" and task[0] != "listops":
        return
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    os.symlink(victim, tmp_path / f"fig{suffix}")
    line = one_error_line(invoke("show", *task, "--out", tmp_path / f"fig{suffix}"))
    assert "is a link inside the output folder" in line and victim.read_text() == "mine"
    r = invoke("show", *task, "--out", tmp_path / f"new{suffix}")
    assert r.exit_code == 0 and (tmp_path / f"new{suffix}").stat().st_size > 0, r.output


# ---------------------------------------------------------------- 8. a long token row is drawn in bounded memory


def test_the_token_picture_is_sized_before_its_colours(monkeypatch):
    import tracemalloc

    from longsynth import plot
    from longsynth.generators import _tokens

    cfg = registry.get("selective-copying").make_config(L=(1 << 22) - 32, M=16)
    titles = []
    finish = plot._finish
    monkeypatch.setattr(plot, "_finish", lambda fig, path, title, **kw: titles.append(title) or finish(fig, path,
                                                                                                      title, **kw))
    rng = np.random.default_rng(0)

    def row(L):
        x = rng.integers(0, 16, L).astype(np.int8)
        y = np.full(L, -100, dtype=np.int8)
        y[-16:] = x[:16]
        y[5] = 3
        return {"inputs": x, "targets": y}

    _tokens.preview([row(4096)], cfg, None, 16)  # matplotlib imported and warm
    samples = [row(1 << 22) for _ in range(2)]  # 8 MB of tokens; their int64 colours would be 256 MB
    tracemalloc.start()
    try:
        summary = _tokens.preview(samples, cfg, None, 16)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak
    assert summary == "2 samples, 34 scored positions (17.0 per sample), vocabulary 16"
    assert titles[-1].endswith("; 4,194,304 positions: 1 in 1,024 drawn")
    assert "drawn" not in titles[0]
    ids, scored, marked = _tokens._columns(samples[0]["targets"], 1024)
    assert ids.shape == (4096,) and scored == 17 and marked.tolist() == [0, 4095]
    assert ids[0] == 3 and ids[4095] == samples[0]["inputs"][15] and ids[1] == -100


@pytest.mark.parametrize("stored", [False, True])
def test_show_holds_one_row_at_a_time(tmp_path, stored):
    """`show selective-copying --L 2^24 --count 64` held all 64 rows at once (2 GB; peak 2.3 GiB): the figure
    draws 4,096 columns a row, so it reads one row at a time, fresh (show TASK) or stored (show DIR)."""
    import tracemalloc

    L, count = 1 << 20, 64  # 64 rows of 2 MB (inputs and targets): 128 MB together
    args = ["show", "selective-copying", "--L", L - 32, "--M", 16, "--seed", 3]
    if stored:
        root = tmp_path / "d"
        r = invoke("gen", "selective-copying", "--L", L - 32, "--M", 16, "--splits", f"train={count}", "-j", 1,
                   "--shard-size", 16, "--out", root)
        assert r.exit_code == 0, r.output
        args = ["show", root]
    invoke(*args, "--count", 1, "--out", tmp_path / "warm.png")  # Numba and matplotlib warm
    peaks = {}
    for n in (1, count):  # what a figure of one row costs (opening a stored shard included), and of 64
        tracemalloc.start()
        try:
            r = invoke(*args, "--count", n, "--out", tmp_path / "p.png")
            peaks[n] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert r.exit_code == 0, r.output
    assert f"{count} samples, {16 * count} scored positions" in r.output and (tmp_path / "p.png").exists()
    assert peaks[count] < peaks[1] + (16 << 20), peaks  # all 64 rows at once: 126 MB more


# ---------------------------------------------------------------- 9, 10. parameters that mean no task


@pytest.mark.parametrize("group", ["A4\nxZ5", "A5\n", "A5\r", "\nA5"])
def test_a_group_name_with_a_newline_is_refused(tmp_path, group):
    with pytest.raises(store.LongsynthError, match=r"group: .* is not Sn, An or Zn"):
        longsynth.sample("word-problem", 0, group=group)
    line = one_error_line(invoke("gen", "word-problem", "--group", group, "-n", 4, "--out", tmp_path / "d"))
    assert "is not Sn, An or Zn" in line and not (tmp_path / "d").exists()
    assert longsynth.sample("word-problem", 0, group="A4_x_Z5")["inputs"].shape == (11,)


def test_selective_copying_without_noise_is_refused(tmp_path):
    line = one_error_line(invoke("gen", "selective-copying", "--L", 0, "-n", 4, "--out", tmp_path / "d"))
    assert "L: must be in [1, " in line and ", got 0" in line and not (tmp_path / "d").exists()
    with pytest.raises(store.LongsynthError, match="L: must be in"):
        longsynth.sample("selective-copying", 0, L=0)
    assert longsynth.sample("selective-copying", 0, L=1, M=1, A=3)["inputs"].shape == (3,)
