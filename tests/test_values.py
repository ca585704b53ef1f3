"""Forged but checksum-valid data (written by a modified generator, so `verify` passes):
exporters and the loaders that feed a model check the values they use - labels within
their classes, token ids within the vocabulary, floats finite - and stop in one line
(longsynth/values.py)."""
import copy
import os

import numpy as np
import pytest
from click.testing import CliRunner

from longsynth import registry, store
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.task import Ragged


def one_error_line(result):
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.output
    return lines[0]


def forge(monkeypatch, root, task, params, change, **kw):
    """A dataset of ``task`` whose samples ``change(block)`` edited before they were
    hashed: every checksum and digest matches, as a modified generator would write it."""
    real = registry.get(task)
    forged = copy.copy(real)

    def generate(*args, **kwargs):
        block = real.generate(*args, **kwargs)
        change(block)
        return block

    forged.generate = generate
    get = registry.get
    monkeypatch.setattr(registry, "get", lambda name: forged if name == task else get(name))
    store.generate(str(root), task, params, workers=1, **kw)
    monkeypatch.setattr(registry, "get", get)
    assert store.verify(str(root)) == []  # checksum-valid: only the values are wrong
    return root


def _token(block):
    col = block["inputs"]
    col.values[3] = 20  # past the 15 tokens of ListOps' vocabulary


def _label(block):
    block["targets"][1] = 200


def _nan(block):
    if len(block["inputs"]) > 2:  # train's block; val and test hold 2 samples
        block["inputs"][2, 5] = np.nan


@pytest.fixture
def listops(monkeypatch, tmp_path):
    return forge(monkeypatch, tmp_path / "lo", "listops", {"min_length": 20, "max_length": 60, "max_depth": 4},
                 _token, splits={"train": 8, "val": 2, "test": 2}, seed=2)


@pytest.fixture
def pathfinder(monkeypatch, tmp_path):
    return forge(monkeypatch, tmp_path / "pf", "pathfinder", {"size": 32}, _label,
                 splits={"train": 6, "val": 2, "test": 2}, seed=2)


@pytest.fixture
def cumsum(monkeypatch, tmp_path):
    return forge(monkeypatch, tmp_path / "cs", "cumsum", {"L": 32}, _nan, splits={"train": 8, "val": 2, "test": 2},
                 seed=2)


@pytest.mark.parametrize("fmt", ["hf", "lra-tsv"])
def test_an_export_refuses_a_token_outside_the_vocabulary(listops, tmp_path, fmt):
    if fmt == "hf":
        pytest.importorskip("datasets")
    out = tmp_path / "out"
    line = one_error_line(CliRunner().invoke(cli, ["export", str(listops), "--format", fmt, "--out", str(out)]))
    assert "[0" in line and ("token id 20, outside 0..14" in line or "outside the vocabulary" in line), line
    assert not out.exists()


@pytest.mark.parametrize("fmt", ["hf", "lra-pathfinder"])
def test_an_export_refuses_a_label_outside_the_classes(pathfinder, tmp_path, fmt):
    if fmt == "hf":
        pytest.importorskip("datasets")
    out = tmp_path / "out"
    line = one_error_line(CliRunner().invoke(cli, ["export", str(pathfinder), "--format", fmt, "--out", str(out)]))
    assert line.split(": ", 2)[2].split("[0..]: ")[0] in ("train", "val", "test"), line  # hf writes splits at once
    assert line.endswith(f"[0..]: targets holds the value 200, outside 0..1 (1 when both markers lie on the same "
                         f"path, else 0); not a sample of the task (run `longsynth verify --deep {pathfinder}`)"), line
    assert not out.exists()


def test_a_loader_refuses_values_its_model_would_index_with(listops, pathfinder, cumsum):
    pytest.importorskip("torch")
    from longsynth.torch import ShardDataset

    with pytest.raises(LongsynthError, match=r"train\[0\]: inputs holds the token id 20, outside 0..14"):
        ShardDataset(str(listops), "train")[0]
    ShardDataset(str(pathfinder), "train")[0]  # sample 0 is a real one
    with pytest.raises(LongsynthError, match=r"train\[1\]: targets holds the value 200, outside 0..1"):
        ShardDataset(str(pathfinder), "train")[1]
    with pytest.raises(LongsynthError, match=r"train\[2\]: inputs holds 1 NaN or infinite value\(s\)"):
        ShardDataset(str(cumsum), "train")[2]


def test_training_on_forged_data_is_one_line(pathfinder, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "rep"
    r = CliRunner().invoke(cli, ["validate", str(pathfinder), "--steps", "1", "--batch-size", "2", "--report-dir",
                                 str(out)])
    line = one_error_line(r)
    assert "targets holds the value 200, outside 0..1" in line and "out of bounds" not in r.output
    assert not out.exists() or os.listdir(out) == []


def test_ragged_and_fixed_blocks_are_checked_alike():
    from longsynth import values
    from longsynth.task import KeySpec

    specs = {"t": KeySpec("int8", (), ragged=True, bounds=(-1, 9)), "f": KeySpec("float32", (4,))}
    assert values.problem(specs, {"t": Ragged(np.array([-1, 9], np.int8), np.array([0, 2])),
                                  "f": np.zeros((1, 4), np.float32)}) is None
    assert "t holds the value 10" in values.problem(specs, {"t": Ragged(np.array([10], np.int8), np.array([0, 1]))})
    assert "f holds 2 NaN" in values.problem(specs, {"f": np.array([[np.inf, 0, np.nan, 1]], np.float32)})


def test_token_tasks_bound_inputs_to_the_vocabulary_and_targets_to_it_or_minus_100(monkeypatch, tmp_path):
    from longsynth.torch import ShardDataset

    specs = registry.get("parity").keys(registry.get("parity").make_config())
    assert specs["inputs"].bounds == (0, 2) and specs["targets"].bounds == (0, 2) and specs["targets"].ignore == -100
    from longsynth import values

    ok = {"inputs": np.array([[0, 1, 2]]), "targets": np.array([[-100, 2, -100]])}
    assert values.problem(specs, ok) is None
    assert "token id 3" in values.problem(specs, {"targets": np.array([[-100, 3]])})
    assert "-99" in values.problem(specs, {"targets": np.array([[-99, 1]])})  # only -100 is "not scored"

    def bad(block):
        if len(block["targets"]) > 2:
            block["targets"][1, 4] = 7  # past parity's three tokens, on a position the loss would read

    params = {"context_length": 32, "max_sequence_length": 8, "test_min_sequence_length": 8,
              "test_max_sequence_length": 16}
    root = forge(monkeypatch, tmp_path / "par", "parity", params, bad, num_samples=200)
    ShardDataset(str(root), "train")[0]  # sample 0 is a real one
    with pytest.raises(LongsynthError, match=r"train\[1\]: targets holds the token id 7, outside 0..2"):
        ShardDataset(str(root), "train")[1]
    out = tmp_path / "hf"
    line = one_error_line(CliRunner().invoke(cli, ["export", str(root), "--format", "hf", "--out", str(out)]))
    assert "token id 7" in line and not out.exists()
