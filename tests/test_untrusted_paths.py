"""A dataset from a stranger, its paths: never touch a file outside it (docs/format.md,
"Trust"): an export's record, a planted link or lock, shard paths that leave the folder,
user files in an output folder. Sections 1, 2, 5 and 7 of the hostile test's findings, in
its order; each attack ends in one line or correct data. Fixtures: untrusted_fixtures.py."""
import json
import os
import shutil

import pytest

import longsynth
from longsynth import store

from untrusted_fixtures import *  # noqa: F403 (its __all__: the fixtures clean, ds and listops_subtrees)
from untrusted_fixtures import GEN, edit_manifest, invoke, one_error_line, relist


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


# ---------------------------------------------------------------- 5. shard paths escape the folder


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


# ---------------------------------------------------------------- 7. user files are never ours to delete


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
