"""Issue 12: never serve damaged data, never leave a mess."""
import json
import os
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import store
from longsynth.cli.main import cli

P = {"L": 32}


def gen(root, **kw):
    kw.setdefault("num_samples", 300)
    kw.setdefault("shard_size", 40)
    kw.setdefault("workers", 1)
    return store.generate(str(root), "cumsum", P, seed=11, **kw)


def one_error_line(result):
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "Traceback" not in result.output
    return lines[0]


def flip_sample_byte(path, key, j, byte=2):
    """Flip one byte of sample j of a contiguous key, in place (the file's size is unchanged)."""
    import h5py

    with h5py.File(path, "r") as f:
        d = f[key]
        offset = d.id.get_offset() + j * d.dtype.itemsize * int(np.prod(d.shape[1:])) + byte
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0x40]))


# ---------------------------------------------------------------- 1. checked reads


def test_flipped_byte_is_never_returned(tmp_path):
    gen(tmp_path / "d")
    good = longsynth.open(tmp_path / "d")["train"][47]["inputs"].copy()
    flip_sample_byte(tmp_path / "d" / "train-00001.h5", "inputs", 7)  # train[47]
    ds = longsynth.open(tmp_path / "d")
    assert np.array_equal(ds["train"][46]["inputs"], longsynth.sample("cumsum", 46, seed=11, **P)["inputs"])
    with pytest.raises(store.DamagedDataError) as e:
        ds["train"][47]
    shard = str(tmp_path / "d" / "train-00001.h5")
    assert str(e.value) == (f"{shard}: sample 47 of train fails its checksum (damaged data); "
                            f"run `longsynth verify {tmp_path / 'd'}`")
    assert "\n" not in str(e.value) and good is not None


def test_flipped_target_byte_found_by_torch_reader(tmp_path):
    torch = pytest.importorskip("torch")  # noqa: F841
    from longsynth.torch import ShardDataset

    gen(tmp_path / "d")
    flip_sample_byte(tmp_path / "d" / "train-00000.h5", "targets", 3)
    ds = ShardDataset(tmp_path / "d", "train")
    ds[2]
    with pytest.raises(store.DamagedDataError, match=r"train-00000.h5: sample 3 of train fails its checksum"):
        ds[3]


def test_truncated_and_missing_shards_fail_naming_the_shard(tmp_path):
    gen(tmp_path / "d")
    shard = tmp_path / "d" / "train-00002.h5"
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) - 1000])
    ds = longsynth.open(tmp_path / "d")
    with pytest.raises(store.DamagedDataError, match=r"train-00002.h5: shard is \d+ bytes, the manifest says \d+ "
                                                     r"\(truncated or replaced\); run `longsynth verify"):
        ds["train"][80]
    os.remove(tmp_path / "d" / "val-00000.h5")
    with pytest.raises(store.DamagedDataError, match=r"val-00000.h5: shard is missing; run `longsynth verify"):
        ds["val"][0]


def test_shards_without_checksums_are_checked_against_their_digests(tmp_path, monkeypatch):
    """Datasets written before `_check` existed: the stored SHA-256 digests guard reads."""
    monkeypatch.setattr(store, "CHECK_KEY", "_not_check")
    gen(tmp_path / "d")
    monkeypatch.undo()
    import h5py

    with h5py.File(tmp_path / "d" / "train-00001.h5", "r") as f:
        assert store.CHECK_KEY not in f
    flip_sample_byte(tmp_path / "d" / "train-00001.h5", "targets", 5)
    ds = longsynth.open(tmp_path / "d")
    assert np.array_equal(ds["train"][44]["targets"], longsynth.sample("cumsum", 44, seed=11, **P)["targets"])
    with pytest.raises(store.DamagedDataError, match="sample 45 of train fails its checksum"):
        ds["train"].read(45, ["targets"])


def test_show_dir_on_damaged_shard_is_one_line(tmp_path):
    gen(tmp_path / "d")
    flip_sample_byte(tmp_path / "d" / "train-00000.h5", "inputs", 0)
    r = CliRunner().invoke(cli, ["show", str(tmp_path / "d"), "--out", str(tmp_path / "p.png")])
    assert re.fullmatch(r"Error: .*train-00000.h5: sample 0 of train fails its checksum \(damaged data\); "
                        r"run `longsynth verify .*`", one_error_line(r))
    assert not (tmp_path / "p.png").exists()
