"""Shared by the test_untrusted_*.py files (a dataset from a stranger): the clean datasets
that tests copy before they attack them, and the helpers that edit a manifest or check
that a command ended in one line."""
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from longsynth import store
from longsynth.files import file_sha256
from longsynth.cli.main import cli

__all__ = ["clean", "ds", "listops_subtrees"]  # the fixtures; the test files import the helpers by name

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


@pytest.fixture(scope="module")
def listops_subtrees(tmp_path_factory):
    root = tmp_path_factory.mktemp("lo") / "ls"
    store.generate(str(root), "listops-subtrees", {"min_length": 20, "max_length": 60, "max_depth": 4}, seed=2,
                   splits={"train": 8, "val": 2, "test": 2}, workers=1)
    return root


def relist(root, name):
    """Update a shard's size and SHA-256 in the manifest, as a forger would."""
    path = os.path.join(root, name)

    def change(m):
        for s in m["splits"].values():
            for rec in s["shards"]:
                if rec["file"] == name:
                    rec["bytes"], rec["sha256"] = os.path.getsize(path), file_sha256(path)

    edit_manifest(root, change)


GEN = ["gen", "cumsum", "--L", 32, "-n", 120, "--shard-size", 40, "--seed", 11, "-j", 1]
