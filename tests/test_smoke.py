"""The smoke subset: one quick end-to-end check per task family and per command, for everyday
work (`pytest -m smoke -n auto`, about a minute once Numba's cache is warm; README). Each test
here asserts what the command is for, on the smallest data that shows it; the full suite has
the depth."""
import json

import pytest
import torch
from click.testing import CliRunner

import longsynth
from longsynth.cli.main import cli

pytestmark = pytest.mark.smoke
torch.set_num_threads(1)

FAMILIES = {  # one task of each family, at a size that generates in well under a second
    "atomic": ["cumsum", "--L", "64"],
    "listops": ["listops", "--min-length", "20", "--max-length", "60", "--max-depth", "4"],
    "pathfinder": ["pathfinder", "--size", "32", "--difficulty", "easy"],
    "mqar": ["mqar", "--input-seq-len", "32", "--num-kv-pairs", "2", "--vocab-size", "64"],
    "mad": ["mad-recall", "--vocab-size", "16", "--seq-len", "32"],
    "safari": ["induction-head", "--input-seq-len", "32"],
    "state": ["word-problem", "--group", "S3", "--k", "8"],
    "copying": ["selective-copying", "--L", "64"],
}


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_gen_info_verify_and_load(tmp_path, family):
    out = tmp_path / family
    run("gen", *FAMILIES[family], "--splits", "train=12,val=4,test=4", "--out", out)
    assert "train" in run("info", out)
    assert "OK" in run("verify", "--deep", out)
    ds = longsynth.open(out)
    assert len(ds["train"]) == 12 and set(ds["test"][0]) >= {"inputs"}
    m = json.loads((out / "manifest.json").read_text())
    assert m["complete"] and m["counts"] == {"train": 12, "val": 4, "test": 4}


def test_show_draws_a_picture(tmp_path):
    run("show", "cumsum", "--L", "64", "--count", "2", "--out", tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_export_writes_the_authors_layout(tmp_path):
    run("gen", "listops", "--min-length", "20", "--max-length", "60", "--max-depth", "4",
        "--splits", "train=6,val=2,test=2", "--out", tmp_path / "d")
    run("export", tmp_path / "d", "--format", "lra-tsv", "-o", tmp_path / "x")
    assert any(p.suffix == ".tsv" for p in (tmp_path / "x").rglob("*"))


def test_authors_stream_and_torch_loader(tmp_path):
    rows = longsynth.authors_dataset("mad-recall", {"train": 4, "test": 2}, seed=1, vocab_size=16, seq_len=32)
    assert rows["train"]["inputs"].shape == (4, 31) and rows["test"]["inputs"].shape == (2, 31)
    from longsynth.torch import OnTheFlyDataset

    ds = OnTheFlyDataset("mqar", steps=1, batch_size=3, input_seq_len=32, num_kv_pairs=2, vocab_size=64)
    x, y = next(iter(ds))
    assert tuple(x.shape) == (3, 32) and tuple(y.shape) == (3, 32)


def test_list_names_every_task():
    text = run("list")
    assert all(name in text for name in ("cumsum", "listops-subtrees", "pathfinder-seg", "mqar", "mad-recall"))


def test_evaluate_a_builtin_for_three_steps_writes_a_report(tmp_path):
    out = tmp_path / "r"
    run("evaluate", "dlr", "--suite", "cumsum", "--scale", "tiny", "--steps", "3", "--out", out)
    assert (out / "report.md").exists() and (out / "report.json").exists()
