"""A dataset from a stranger: never run code, never touch a file outside it, never serve a
swapped shard (docs/format.md, "Trust"). One section per finding of the hostile test, in
its order; each attack ends in one line or correct data."""
import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import store
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
