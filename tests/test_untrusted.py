"""A dataset from a stranger: never run code, never touch a file outside it, never serve a
swapped shard (docs/format.md, "Trust"). One section per finding of the hostile test, in
its order; each attack ends in one line or correct data."""
import copy
import json
import os
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import exports, store
from longsynth.files import file_sha256
from longsynth.cli.main import cli

P = {"L": 32}


def gen(root, **kw):
    kw.setdefault("num_samples", 120)
    kw.setdefault("shard_size", 40)
    kw.setdefault("workers", 1)
    kw.setdefault("seed", 11)
    return store.generate(str(root), "cumsum", P, **kw)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_error_line(result):
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.output
    return lines[0]


def edit_manifest(root, change):
    path = os.path.join(root, "manifest.json")
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    change(m)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(m, f)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A small finished dataset; tests copy it before they attack it."""
    root = tmp_path_factory.mktemp("clean") / "d"
    gen(root)
    return root


@pytest.fixture
def ds(clean, tmp_path):
    root = tmp_path / "d"
    shutil.copytree(clean, root)
    return root


# ---------------------------------------------------------------- 1. hf export deletes listed files


@pytest.mark.parametrize("listed", ["/ABS/victim.txt", "../x/victim.txt", "data/../../x/victim.txt", "victim.txt"])
def test_hf_export_never_deletes_a_file_its_record_lists(ds, tmp_path, listed):
    pytest.importorskip("datasets")
    (tmp_path / "x").mkdir()
    victims = [tmp_path / "victim.txt", tmp_path / "x" / "victim.txt", tmp_path / "o" / "victim.txt"]
    out = tmp_path / "o"
    out.mkdir()
    for v in victims:
        v.write_text("mine")
    listed = listed.replace("/ABS", str(tmp_path))
    (out / "longsynth.json").write_text(json.dumps({"export": {"format": "hf", "files": [listed, "README.md"]}}))
    line = one_error_line(invoke("export", ds, "--format", "hf", "--out", out))
    assert "export.files[0]" in line and "is not a file an hf export writes" in line
    assert all(v.read_text() == "mine" for v in victims)


def test_export_never_writes_through_a_link_planted_in_out(listops_subtrees, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    out = tmp_path / "tsv"
    out.mkdir()
    os.symlink(victim, out / ".subtrees_train.tsv.tmp")
    r = invoke("export", listops_subtrees, "--format", "lra-tsv", "--out", out)
    assert r.exit_code == 0, r.output
    assert victim.read_text() == "mine" and not (out / "subtrees_train.tsv").is_symlink()
    assert (out / "subtrees_train.tsv").read_text().startswith("Source\tTarget")


# ---------------------------------------------------------------- 2. a .lock that is a link


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "hard link"])
def test_lock_that_is_a_link_is_refused_and_its_target_untouched(ds, tmp_path, kind):
    victim = tmp_path / "victim.txt"
    if kind != "dangling symlink":
        victim.write_text("mine")
    if kind == "hard link":
        os.link(victim, ds / ".lock")
    else:
        os.symlink(victim, ds / ".lock")
    line = one_error_line(invoke("gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11, "-j", 1,
                                 "--out", ds))
    assert ".lock" in line and ("symbolic link" in line or "hard links" in line)
    if kind == "dangling symlink":
        assert not victim.exists()
    else:
        assert victim.read_text() == "mine"


# ---------------------------------------------------------------- 3. checkpoints and pickles run no code


class _Payload:
    """Pickles as a call of os.system: loading it with a plain unpickler runs a command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_checkpoints_load_without_running_code(tmp_path):
    torch = pytest.importorskip("torch")
    from longsynth.errors import LongsynthError
    from longsynth.models_ref.model import ModelConfig
    from longsynth.models_ref.trainer import TrainConfig, load_model, train

    marker = tmp_path / "ran"
    cfg = ModelConfig(d_input=1, d_output=2, H=4, N=4, n_layers=1)
    tc = TrainConfig(steps=2, lr=1e-3, eval_every=1, seed=0)
    data = lambda s: (torch.randn(2, 8, 1), torch.randn(2, 8, 2))  # noqa: E731
    val = lambda: [data(0)]  # noqa: E731
    train(cfg, tc, data, val, checkpoint_dir=str(tmp_path / "c"), stop_at_step=1)
    ck = torch.load(tmp_path / "c" / "last.pt", weights_only=True)  # what longsynth writes is plain data
    evil = dict(ck, history=_Payload(marker))
    torch.save(evil, tmp_path / "c" / "last.pt")
    with pytest.raises(LongsynthError, match=r"last.pt: not loaded: it holds posix.system, and loading it could run"):
        load_model(str(tmp_path / "c" / "last.pt"))
    with pytest.raises(LongsynthError, match="could run code"):
        train(cfg, tc, data, val, resume=str(tmp_path / "c" / "last.pt"))
    torch.save(ck, tmp_path / "c" / "last.pt")  # a clean last.pt beside a poisoned best.pt
    best = torch.load(tmp_path / "c" / "best.pt", weights_only=True)
    torch.save(dict(best, model=_Payload(marker)), tmp_path / "c" / "best.pt")
    with pytest.raises(LongsynthError, match=r"best.pt: not loaded"):
        train(cfg, tc, data, val, resume=str(tmp_path / "c" / "last.pt"))
    assert not marker.exists()


def test_authors_pickles_are_read_with_their_types_only(tmp_path):
    import pickle

    from longsynth.generators.pathfinder import fidelity
    from longsynth.errors import LongsynthError

    root = tmp_path / "ds"
    store.generate(str(root), "pathfinder-seg", {"size": 128}, seed=4, splits={"train": 2}, shard_size=2, workers=1)
    out = tmp_path / "dlr"
    exports.export(str(root), "dlr-pathfinder", str(out))
    assert len(fidelity.read_authors(str(out))) == 2  # what the exporter (and the authors) write still reads
    marker = tmp_path / "ran"
    with open(out / "paths" / "0" / "sample_1.pkl", "wb") as f:
        pickle.dump({"segs": _Payload(marker)}, f)
    with pytest.raises(LongsynthError, match=r"path pickle holds posix.system, not one of the authors' types"):
        fidelity.read_authors(str(out))
    assert not marker.exists()
    np.save(out / "metadata" / "0.npy", np.array([["imgs/../../x", "sample_0.png", "0", "1"]]))
    with pytest.raises(LongsynthError, match=r"does not name imgs/<b> and sample_<k>.png"):
        fidelity.read_authors(str(out))


# ------------------------------------------------------- 4. an edited manifest never drives a kernel out of bounds


@pytest.fixture(scope="module")
def listops_subtrees(tmp_path_factory):
    root = tmp_path_factory.mktemp("lo") / "ls"
    store.generate(str(root), "listops-subtrees", {"min_length": 20, "max_length": 60, "max_depth": 4}, seed=2,
                   splits={"train": 8, "val": 2, "test": 2}, workers=1)
    return root


def test_lowered_max_length_in_the_manifest_is_one_line(listops_subtrees, tmp_path):
    root = tmp_path / "ls"
    shutil.copytree(listops_subtrees, root)
    edit_manifest(root, lambda m: m["params"].update(max_length=25))
    assert invoke("export", listops_subtrees, "--format", "lra-tsv", "--out", tmp_path / "ok").exit_code == 0
    line = one_error_line(invoke("export", root, "--format", "lra-tsv", "--out", tmp_path / "tsv"))
    assert "shard holds other task parameters than the manifest" in line
    assert not (tmp_path / "tsv").exists()
    r = invoke("verify", root)
    assert "problem(s) found" in one_error_line(r) and "train-00000.h5: shard holds other task parameters" in r.output


@pytest.mark.parametrize("crafted", ["token outside the vocabulary", "unbalanced brackets", "negative target",
                                     "longer than max_length"])
def test_tsv_kernel_checks_bounds_on_crafted_samples(listops_subtrees, crafted):
    from longsynth.exports import lra_tsv

    s = dict(longsynth.open(listops_subtrees)["train"][0])
    tokens = s["inputs"].astype(np.int64)
    if crafted == "token outside the vocabulary":
        tokens[3] = 10**6
    elif crafted == "unbalanced brackets":
        tokens = np.concatenate([tokens, np.full(5, lra_tsv.CLOSE, dtype=np.int64)])
    elif crafted == "negative target":
        s["root"] = np.int64(-3)
    else:  # a row far longer than any buffer sized from a parameter
        tokens = np.tile(tokens, 50)
        s["targets"], s["heights"], s["operators"] = np.tile(s["targets"], 50), s["heights"], s["operators"]
    buf = np.empty(13 * tokens.shape[0] + 128, dtype=np.uint8)
    if crafted == "longer than max_length":
        n = lra_tsv._row(s, tokens, True, 0, buf)  # sized from the row: it fits
        assert buf[n - 2 : n].tolist() == [13, 10]
        return
    with pytest.raises((IndexError, ValueError)):
        lra_tsv._row(s, tokens, True, 0, buf)


def test_shard_declaring_more_data_than_it_stores_is_refused(ds):
    """A shard (and manifest) claiming 10**12 samples in datasets that store nothing: a
    reader must not allocate what the shape claims."""
    import h5py

    n = 10**12
    path = ds / "train-00000.h5"
    with h5py.File(path, "r+") as f:
        for name in list(f):
            dtype, inner = f[name].dtype, f[name].shape[1:]
            del f[name]
            f.create_dataset(name, shape=(n,) + inner, dtype=dtype)  # contiguous, never written
        f.attrs["count"] = n

    def change(m):
        m["counts"]["train"] = m["splits"]["train"]["count"] = n
        m["shard_size"] = n
        m["splits"]["train"]["shards"] = m["splits"]["train"]["shards"][:1]
        m["splits"]["train"]["shards"][0]["count"] = n

    edit_manifest(ds, change)
    relist(ds, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match=r"stores 0 bytes, its shape needs"):
        longsynth.open(ds)["train"][0]


def test_ragged_offsets_claiming_terabytes_are_one_line(listops_subtrees, tmp_path):
    """Offsets pointing 10**12 rows into a chunked values dataset that stores nothing: the
    reader fails with one line instead of a MemoryError traceback."""
    import h5py

    root = tmp_path / "ls"
    shutil.copytree(listops_subtrees, root)
    with h5py.File(root / "train-00000.h5", "r+") as f:
        g = f["inputs"]
        dtype, inner, chunks = g["values"].dtype, g["values"].shape[1:], g["values"].chunks
        del g["values"]
        g.create_dataset("values", shape=(10**12,) + inner, maxshape=(None,) + inner, dtype=dtype, chunks=chunks)
        offsets = g["offsets"][()]
        offsets[1:] = 10**12
        g["offsets"][...] = offsets
    relist(root, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match="train-00000.h5: unreadable"):
        longsynth.open(root)["train"][0]
    with pytest.raises(store.DamagedDataError, match="train-00000.h5: "):
        for _ in longsynth.open(root)["train"].iter_samples():
            pass


# ---------------------------------------------------------------- 5. shard paths escape the folder


def relist(root, name):
    """Update a shard's size and SHA-256 in the manifest, as a forger would."""
    path = os.path.join(root, name)

    def change(m):
        for s in m["splits"].values():
            for rec in s["shards"]:
                if rec["file"] == name:
                    rec["bytes"], rec["sha256"] = os.path.getsize(path), file_sha256(path)

    edit_manifest(root, change)


@pytest.mark.parametrize("file,size", [("/etc/passwd", None), ("/dev/zero", 0), ("../d2/train-00000.h5", None),
                                       ("train-00001.h5", None)])
def test_shard_file_must_be_its_plain_name(ds, file, size):
    def change(m):
        rec = m["splits"]["train"]["shards"][0]
        rec["file"] = file
        if size is not None:
            rec["bytes"] = size

    edit_manifest(ds, change)
    for cmd in (["verify", ds], ["info", ds], ["gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11,
                                               "-j", 1, "--out", ds]):
        line = one_error_line(invoke(*cmd))
        assert "splits.train.shards[0].file" in line and "passwd" not in line.replace(file, "")
    with pytest.raises(store.LongsynthError, match=r"splits.train.shards\[0\].file"):
        longsynth.open(ds)


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_shard_that_is_a_link_or_a_fifo_is_never_read(ds, tmp_path, kind):
    shard = ds / "train-00000.h5"
    shutil.move(shard, tmp_path / "outside.h5")
    if kind == "symlink":
        os.symlink(tmp_path / "outside.h5", shard)
    else:
        os.mkfifo(shard)
    with pytest.raises(store.DamagedDataError, match="symbolic link|not a regular file"):
        longsynth.open(ds)["train"][0]
    r = invoke("verify", ds)
    assert "train-00000.h5" in r.output and ("symbolic link" in r.output or "not a regular file" in r.output)
    one_error_line(r)


def _copy_attrs(src, dst):
    for k, v in src.attrs.items():
        dst.attrs[k] = v


@pytest.mark.parametrize("how", ["external link", "virtual dataset", "external storage"])
def test_shard_reading_from_outside_is_refused(ds, tmp_path, how):
    import h5py

    outside = tmp_path / "outside.h5"
    shutil.move(ds / "train-00000.h5", outside)
    with h5py.File(outside, "r") as src, h5py.File(ds / "train-00000.h5", "w") as f:
        _copy_attrs(src, f)
        for name in src:
            if how == "external link":
                f[name] = h5py.ExternalLink(str(outside), name)
            elif how == "virtual dataset":
                layout = h5py.VirtualLayout(shape=src[name].shape, dtype=src[name].dtype)
                layout[...] = h5py.VirtualSource(str(outside), name, shape=src[name].shape)
                f.create_virtual_dataset(name, layout)
            else:
                raw = tmp_path / f"{name}.raw"
                raw.write_bytes(src[name][()].tobytes())
                f.create_dataset(name, shape=src[name].shape, dtype=src[name].dtype,
                                 external=[(str(raw), 0, h5py.h5f.UNLIMITED)])
    relist(ds, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match="link to another file|reads its data from other files"):
        longsynth.open(ds)["train"][0]
    problems = store.verify(str(ds))
    assert any("train-00000.h5" in p and ("link to another" in p or "other files" in p) for p in problems), problems


# ---------------------------------------------------------------- 6. swapped shards are never served


def test_same_size_shard_of_another_range_is_refused(ds):
    a, b = ds / "train-00000.h5", ds / "train-00001.h5"
    os.rename(a, ds / "tmp.h5")
    os.rename(b, a)
    os.rename(ds / "tmp.h5", b)
    relist(ds, "train-00000.h5")
    relist(ds, "train-00001.h5")
    with pytest.raises(store.DamagedDataError, match=r"train-00000.h5: shard holds start 40, the manifest says 0"):
        longsynth.open(ds)["train"][0]
    pytest.importorskip("torch")
    from longsynth.torch import ShardDataset

    with pytest.raises(store.DamagedDataError, match="shard holds start 40"):
        ShardDataset(ds, "train")[1]


def test_same_size_shard_of_another_seed_is_refused(ds, tmp_path):
    gen(tmp_path / "other", seed=12)
    shutil.copy(tmp_path / "other" / "train-00001.h5", ds / "train-00001.h5")
    relist(ds, "train-00001.h5")
    with pytest.raises(store.DamagedDataError, match=r"train-00001.h5: shard of generation \w+, the manifest"):
        longsynth.open(ds)["train"][41]


def test_shard_with_another_dtype_is_refused(ds):
    import h5py

    path = ds / "train-00000.h5"
    with h5py.File(path, "r+") as f:
        data = f["inputs"][()]
        del f["inputs"]
        f.create_dataset("inputs", data=data.view(np.int32))
    relist(ds, "train-00000.h5")
    with pytest.raises(store.DamagedDataError, match=r"inputs is int32 \(40, 32, 1\), expected float32"):
        longsynth.open(ds)["train"][0]
    assert any("inputs is int32" in p for p in store.verify(str(ds)))


def test_reader_notices_a_dataset_regenerated_under_it(ds):
    reader = longsynth.open(ds)["train"]
    first = reader[0]["inputs"].copy()
    gen(ds, seed=12, overwrite=True)
    assert np.array_equal(reader[0]["inputs"], first)  # an open shard keeps its (seed-11) file
    assert np.array_equal(first, longsynth.sample("cumsum", 0, seed=11, **P)["inputs"])
    with pytest.raises(store.DamagedDataError, match="the dataset was regenerated or replaced; open it again"):
        reader[41]
    assert np.array_equal(longsynth.open(ds)["train"][41]["inputs"],
                          longsynth.sample("cumsum", 41, seed=12, **P)["inputs"])


def _as_legacy(root, keep_generation=False):
    """Shards and manifest as longsynth wrote them before identity attributes: strings as
    variable-length attributes, no generation id or task revision."""
    import h5py

    for name in sorted(e for e in os.listdir(root) if e.endswith(".h5")):
        with h5py.File(os.path.join(root, name), "r+") as f:
            for k in ("format", "task", "params", "split"):
                value = f.attrs[k].decode()
                del f.attrs[k]
                f.attrs[k] = value  # h5py writes a str as a variable-length string
            del f.attrs["generation"], f.attrs["task_revision"]
        relist(root, name)
    if not keep_generation:
        edit_manifest(root, lambda m: m.pop("generation"))


def test_dataset_of_before_identity_reads_with_the_weaker_check(ds, tmp_path):
    _as_legacy(ds)
    assert np.array_equal(longsynth.open(ds)["train"][41]["inputs"],
                          longsynth.sample("cumsum", 41, seed=11, **P)["inputs"])
    assert store.verify(str(ds), deep=True) == []
    gen(tmp_path / "other", seed=12)
    _as_legacy(tmp_path / "other")
    shutil.copy(tmp_path / "other" / "train-00001.h5", ds / "train-00001.h5")
    relist(ds, "train-00001.h5")
    with pytest.raises(store.DamagedDataError, match=r"shard holds seed 12, the manifest says 11"):
        longsynth.open(ds)["train"][41]


def test_rerunning_gen_gives_a_dataset_of_before_identity_its_identity(ds):
    import h5py

    _as_legacy(ds)
    gen(ds)
    assert "generation" in json.loads((ds / "manifest.json").read_text())
    with h5py.File(ds / "train-00000.h5", "r") as f:
        assert f.attrs.get_id("task").dtype.kind == "S" and "generation" in f.attrs
    assert store.verify(str(ds)) == []


def test_old_shard_under_a_new_manifest_is_refused(ds):
    _as_legacy(ds, keep_generation=True)
    with pytest.raises(store.DamagedDataError, match="written before generation ids, under a manifest that has one"):
        longsynth.open(ds)["train"][0]


def test_negative_start_is_refused_by_readers_and_resume(ds):
    edit_manifest(ds, lambda m: m["splits"]["train"]["shards"][0].update(start=-5))
    with pytest.raises(store.LongsynthError, match=r"splits.train.shards\[0\].start: must be in 0..115, got -5"):
        longsynth.open(ds)
    line = one_error_line(invoke("gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11, "-j", 1,
                                 "--out", ds))
    assert "splits.train.shards[0].start" in line


# ---------------------------------------------------------------- 7. user files are never ours to delete

GEN = ["gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11, "-j", 1]


@pytest.mark.parametrize("overwrite", [False, True])
def test_gen_never_replaces_files_in_a_folder_that_is_no_dataset(tmp_path, overwrite):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "README.md").write_text("my notes")
    (out / "train-00000.h5").write_text("my file")
    line = one_error_line(invoke(*GEN, "--out", out, *(["--overwrite"] if overwrite else [])))
    assert "holds no longsynth dataset" in line
    assert sorted(os.listdir(out)) == ["README.md", "train-00000.h5"]
    assert (out / "README.md").read_text() == "my notes" and (out / "train-00000.h5").read_text() == "my file"


def test_overwrite_of_a_foreign_manifest_deletes_nothing(tmp_path):
    out = tmp_path / "mine"
    (out / "validation" / "run").mkdir(parents=True)
    (out / "validation" / "run" / "results.txt").write_text("mine")
    (out / "manifest.json").write_text('{"name": "my package"}')
    line = one_error_line(invoke(*GEN, "--out", out, "--overwrite"))
    assert "not a longsynth manifest" in line and "not replaced, even with --overwrite" in line
    assert (out / "validation" / "run" / "results.txt").read_text() == "mine"
    assert (out / "manifest.json").read_text() == '{"name": "my package"}'


def test_overwrite_of_a_dataset_keeps_what_longsynth_did_not_write(ds):
    (ds / "notes.txt").write_text("mine")
    (ds / "notes.tmp").write_text("mine too")
    r = invoke(*GEN[:-4], "--seed", 12, "-j", 1, "--out", ds, "--overwrite")
    assert r.exit_code == 0, r.output
    assert (ds / "notes.txt").read_text() == "mine" and (ds / "notes.tmp").read_text() == "mine too"
    assert longsynth.open(ds).seed == 12


# ---------------------------------------------------------------- 8. malformed manifests: one line naming the field


MALFORMED = {
    "a list": (lambda m: [1, 2], "manifest: expected an object"),
    "no splits": (lambda m: m.pop("splits"), "splits: missing"),
    "no params": (lambda m: m.pop("params"), "params: missing"),
    "no versions": (lambda m: m.pop("versions"), "versions: missing"),
    "seed a string": (lambda m: m.update(seed="x"), "seed: expected an integer, got a string"),
    "params a list": (lambda m: m.update(params=[1]), "params: expected an object, got a list"),
    "param of wrong type": (lambda m: m["params"].update(L=[4]), "params.L: expected a number"),
    "count 1e30": (lambda m: m["counts"].update(train=1e30), "counts.train: expected an integer, got a number"),
    "huge count": (lambda m: (m["counts"].update(train=10**30), m["splits"]["train"].update(count=10**30)),
                   "counts.train: must be in 0.."),
    "count over shards": (lambda m: (m["counts"].update(train=300), m["splits"]["train"].update(count=300)),
                          "splits.train.shards: 3 shards cover 300 samples"),
    "shard count": (lambda m: m["splits"]["train"]["shards"][1].update(count=39), "splits.train.shards[1].count"),
    "sha not hex": (lambda m: m["splits"]["train"]["shards"][1].update(sha256="zz"), "splits.train.shards[1].sha256"),
    "unknown task": (lambda m: m.update(task="nope"), "task: unknown task 'nope'"),
    "keys edited": (lambda m: m["keys"]["inputs"].update(dtype="int32"), "keys.inputs"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED) + ["nested 100,000 deep"])
def test_malformed_manifest_is_one_line_naming_the_field(ds, case):
    path = ds / "manifest.json"
    if case == "nested 100,000 deep":
        path.write_text('{"format": "longsynth-shards", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
        field = "JSON nested more than"
    else:
        change, field = MALFORMED[case]
        m = json.loads(path.read_text())
        got = change(m)
        path.write_text(json.dumps(got if isinstance(got, list) else m))
    for cmd in ("verify", "info", "show"):
        line = one_error_line(invoke(cmd, ds) if cmd != "show" else invoke("show", ds, "--out", ds / "p.png"))
        assert field in line, line
    r = invoke("export", ds, "--format", "hf", "--out", ds.parent / "hf")
    assert field in one_error_line(r) and not (ds.parent / "hf").exists()


@pytest.mark.parametrize("bad", ["[1, 2]", '{"final": 3}', "{", "link"])
def test_invalid_or_linked_certificate_is_one_line_or_skipped(ds, tmp_path, bad):
    run = ds / "validation" / "dlr-1"
    run.mkdir(parents=True)
    if bad == "link":
        (tmp_path / "secret.json").write_text('{"final": {"secret": 1}}')
        os.symlink(tmp_path / "secret.json", run / "metrics.json")
    else:
        (run / "metrics.json").write_text(bad)
    r = invoke("info", ds)
    line = one_error_line(r)
    assert "metrics.json" in line and "secret" not in r.output


# ---------------------------------------------------------------- 9. clean ends


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_during_gen_cleans_up_as_ctrl_c(tmp_path, workers):
    """With -j 2 the pool's workers are stopped too (Ctrl-C reaches them, SIGTERM only gen):
    none finishes its shard into the folder after gen was told to stop."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "d"
    cmd = [sys.executable, "-m", "longsynth", "gen", "cumsum", "--L", "4096", "-n", "3000", "--shard-size",
           "100" if workers == "1" else "1500", "-j", workers, "--out", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out.exists() and any(e.startswith(".train-") for e in os.listdir(out))):
        time.sleep(0.005)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and "Traceback" not in err, err
    left = os.listdir(out)
    assert not [e for e in left if e.endswith(".tmp")] and ".lock" not in left, left
    if workers == "2":
        assert left == ["manifest.json"], left


def test_sigterm_during_hf_export_leaves_nothing(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("datasets")
    store.generate(str(tmp_path / "d"), "cumsum", {"L": 4096}, seed=0, splits={"train": 1500}, shard_size=500,
                   workers=1)
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "longsynth", "export", str(tmp_path / "d"), "--format", "hf", "--out",
                          str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out.is_dir() and (out / "data").is_dir()
                                          and any(e.endswith(".tmp") for e in os.listdir(out / "data"))):
        time.sleep(0.005)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and "Traceback" not in err, err
    assert not out.exists()


def test_compressed_dataset_that_cannot_fit_is_refused_before_writing(tmp_path, monkeypatch):
    from longsynth.store import build

    monkeypatch.setattr(build, "_free_bytes", lambda root: 100_000)
    line = one_error_line(invoke(*GEN, "--compression", "gzip", "--out", tmp_path / "d"))
    assert "before compression but only 100.0 kB is free" in line and not (tmp_path / "d").exists()


def test_out_path_too_long_is_refused_before_any_folder_is_made(ds, tmp_path):
    deep = tmp_path.joinpath(*(["x" * 250] * 20))
    assert "path too long" in one_error_line(invoke(*GEN, "--out", deep))
    assert "path too long" in one_error_line(invoke("export", ds, "--format", "hf", "--out", deep))
    assert not (tmp_path / ("x" * 250)).exists()


def test_lra_pathfinder_conflict_is_named_and_nothing_moved(tmp_path):
    root = tmp_path / "ds"
    store.generate(str(root), "pathfinder", {"size": 32, "difficulty": "easy"}, seed=2, splits={"train": 6}, workers=1)
    out = tmp_path / "lra"
    (out / "curv_baseline" / "imgs" / "0").mkdir(parents=True)
    (out / "curv_baseline" / "imgs" / "0" / "theirs.png").write_bytes(b"x")
    line = one_error_line(invoke("export", root, "--format", "lra-pathfinder", "--out", out))
    assert f"{out}/curv_baseline/imgs/0: already exists" in line
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "curv_baseline", "curv_baseline/imgs", "curv_baseline/imgs/0", "curv_baseline/imgs/0/theirs.png"]


@pytest.mark.parametrize("n", ["0", "-5"])
def test_verify_samples_must_be_positive(ds, n):
    assert "--samples" in one_error_line(invoke("verify", ds, "--deep", "--samples", n))
    with pytest.raises(store.LongsynthError, match="samples: must be an integer >= 1"):
        store.verify(str(ds), deep=True, samples=int(n))


def test_executor_attempts_rename_only_under_a_live_lock(tmp_path):
    """A Dask worker whose `gen --dask` client was killed (the kernel dropped its lock)
    must not rename its shard into the folder; under a held lock it does."""
    from longsynth.store import shards

    root = tmp_path / "d"
    root.mkdir()
    job = store.ShardJob(str(root), "cumsum", {"L": 8}, 0, "train", 0, 0, 4, "none", "0" * 16)
    with pytest.raises(store.LongsynthError, match="no gen holds the folder's lock any more"):
        shards.write_shard(job, attempt="a1")
    (root / ".lock").write_text("12345\n")  # left by a killed gen: nobody holds it
    with pytest.raises(store.LongsynthError, match="no gen holds the folder's lock any more"):
        shards.write_shard(job, attempt="a2")
    assert sorted(os.listdir(root)) == [".lock"]
    os.remove(root / ".lock")
    with store.DirLock(str(root)):
        record, _, _ = shards.write_shard(job, attempt="a3")
    assert record["file"] == "train-00000.h5" and (root / "train-00000.h5").exists()


@pytest.mark.parametrize("address,says", [("bogus-string", "is not a scheduler address or file"),
                                          ("foo://host:1", "scheme 'foo' is none of a cluster's"),
                                          ("inproc://x", "scheme 'inproc' is none of a cluster's"),
                                          ("sched.json", "not a Dask scheduler file")])
def test_bad_dask_address_is_one_line_at_once(tmp_path, address, says):
    import subprocess
    import sys
    import time

    pytest.importorskip("distributed")
    (tmp_path / "sched.json").write_text('{"no": "address"}')
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "longsynth", "gen", "cumsum", "--L", "8", "-n", "4", "--dask", address,
                        "--out", str(tmp_path / "d")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and p.stderr.count("Error:") == 1 and says in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and time.monotonic() - t0 < 20


@pytest.mark.parametrize("task", ["pathfinder", "pathfinder-seg"])
def test_impossible_seed_distance_is_refused_at_once(tmp_path, task):
    import time

    t0 = time.monotonic()
    line = one_error_line(invoke("gen", task, "--seed-distance", 4096, "-n", 10, "-j", 1, "--out", tmp_path / "d"))
    assert "seed_distance: 4096 px between the main paths' start tips can never fit" in line
    assert time.monotonic() - t0 < 2 and not (tmp_path / "d").exists()


def test_dead_pool_worker_is_one_line_and_its_temp_file_removed(tmp_path):
    from longsynth.store import pool

    job = store.ShardJob(str(tmp_path), "cumsum", {"L": 8}, 0, "train", 0, 0, 4, "gzip")
    (tmp_path / ".train-00000.h5.tmp").write_bytes(b"partial")
    e = pool._died([job])
    assert isinstance(e, store.LongsynthError) and str(e).startswith(f"{tmp_path}: write failed (")
    assert not (tmp_path / ".train-00000.h5.tmp").exists()


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("compression", ["gzip", "lzf", "none"])
def test_full_disk_with_compression_is_one_line(tmp_path, compression, workers):
    """A disk that fills mid-shard, in a pool worker or in gen's own process (-j 1, where
    HDF5's filters ended the process with SIGSEGV): one line saying what is needed. Needs
    a tiny tmpfs (root in a container that allows mounts), else skipped; the same is
    tested everywhere with a simulated full disk in tests/test_reliability.py."""
    import subprocess
    import sys

    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        code = ("import sys; from longsynth.store import build; from longsynth.cli.main import cli; "
                "build._free_bytes = lambda root: 10**12; "  # past the free-space check, to fill the disk
                f"sys.argv = ['longsynth', 'gen', 'cumsum', '--L', '4096', '-n', '800', '--shard-size', '100', '-j', "
                f"'{workers}', '--compression', '{compression}', '--out', '{small}/d']; cli(prog_name='longsynth')")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]
        assert re.fullmatch(rf"Error: {small}/d: the disk is full; \d+ of 800 samples are written and kept, the rest "
                            rf"needs about [\d.]+ MB more \(uncompressed; .* free now\): free space and rerun the "
                            rf"same command to resume", p.stderr.strip().splitlines()[-1]), p.stderr[-2000:]
        assert not [e for e in os.listdir(small / "d") if e.endswith(".tmp") or e == ".lock"]
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_sigterm_during_validate_leaves_no_empty_folder(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("torch")
    ds = tmp_path / "d"
    gen(ds, num_samples=2000, shard_size=1000)
    p = subprocess.Popen([sys.executable, "-m", "longsynth", "validate", str(ds), "--steps", "5000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not (ds / "validation").exists():
        time.sleep(0.01)
    assert (ds / "validation").exists(), p.communicate(timeout=60)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and "Traceback" not in err, err[-2000:]
    empty = [d for d, dirs, files in os.walk(ds / "validation") if not dirs and not files]
    assert not empty, empty


# ---------------------------------------------------------------- fuzz: random manifests and shard bytes

FUZZ_SECONDS = 12
ODD_VALUES = [None, -1, 0, 1, 7, 2**70, 1e30, -5.5, "", "x", "../x", "/etc/passwd", "/dev/zero", [], {}, True,
              [[[[1]]]], {"a": [1, {"b": None}]}]


def _json_paths(value, path=()):
    """Every (path, value) in a JSON tree, the root excluded."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield path + (k,), v
        yield from _json_paths(v, path + (k,))


def _mutate_manifest(root, rng, outside):
    def change(m):
        paths = list(_json_paths(m))
        path, _ = rng.choice(paths)
        parent = m
        for k in path[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and rng.random() < 0.2:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES + [v for _, v in rng.sample(paths, 2)]))

    edit_manifest(root, change)


def _mutate_shard(root, rng, outside):
    shards = sorted(e for e in os.listdir(root) if e.endswith(".h5") and not os.path.islink(os.path.join(root, e)))
    if len(shards) < 2:
        return
    name = rng.choice(shards)
    path = os.path.join(root, name)
    kind = rng.choice(["flip", "flip", "flip metadata", "truncate", "swap", "link"])
    if kind.startswith("flip"):
        data = bytearray(open(path, "rb").read())
        span = min(len(data), 4096) if kind == "flip metadata" else len(data)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(span)] ^= 1 << rng.randrange(8)
        open(path, "wb").write(bytes(data))
    elif kind == "truncate":
        os.truncate(path, rng.randrange(os.path.getsize(path)))
    elif kind == "swap":
        other = os.path.join(root, rng.choice([e for e in shards if e != name]))
        tmp = os.path.join(root, "swap")
        os.rename(path, tmp)
        os.rename(other, path)
        os.rename(tmp, other)
    else:
        os.remove(path)
        os.symlink(outside, path)
    if rng.random() < 0.5 and kind != "link":  # a forger updates the manifest to match
        try:
            relist(root, name)
        except (KeyError, TypeError, AttributeError):  # an earlier mutation broke the records
            pass


def test_fuzz_one_line_or_correct_data_and_nothing_outside_touched(clean, tmp_path):
    """For FUZZ_SECONDS, a copy of a dataset gets a random manifest field or shard byte
    changed; opening it, reading every sample and verifying it give the clean dataset's
    samples or one LongsynthError line, never another exception, and the file outside it
    (the target of planted links) is never changed."""
    import random
    import time

    rng = random.Random(2024)
    outside = tmp_path / "outside.h5"
    shutil.copy(clean / "train-00000.h5", outside)
    before = (outside.read_bytes(), os.stat(outside).st_mtime_ns)
    truth = {s: [sp[i] for i in range(len(sp))] for s, sp in longsynth.open(clean).splits.items()}
    rounds = errors = 0
    deadline = time.monotonic() + FUZZ_SECONDS
    while time.monotonic() < deadline:
        root = tmp_path / "d"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(clean, root)
        for _ in range(rng.randint(1, 3)):
            (_mutate_manifest if rng.random() < 0.5 else _mutate_shard)(root, rng, outside)
        try:
            ds = longsynth.open(root)
            for split, sp in ds.splits.items():
                for i in range(len(sp)):
                    got = sp[i]
                    assert sorted(got) == sorted(truth[split][i])
                    for k in got:
                        assert np.array_equal(got[k], truth[split][i][k]), (split, i, k)
            ds.close()
            store.verify(str(root))
        except store.LongsynthError as e:
            assert "\n" not in str(e)
            errors += 1
        if rounds % 10 == 0:  # the command line: an OK line or one Error: line
            r = invoke("verify", root)
            assert "Traceback" not in r.output
            assert r.exit_code == 0 or (isinstance(r.exception, SystemExit)
                                        and sum(x.startswith("Error:") for x in r.output.splitlines()) == 1), r.output
        rounds += 1
    assert rounds >= 20 and errors >= rounds // 4, (rounds, errors)
    assert (outside.read_bytes(), os.stat(outside).st_mtime_ns) == before
    assert sorted(os.listdir(tmp_path)) == ["d", "outside.h5"]
