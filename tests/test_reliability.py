"""Never serve damaged data, never leave a mess: damaged shards, killed and interrupted runs,
full disks and stale locks, each answered in one line with nothing lost."""
import json
import os
import re
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import store
from longsynth.store import build, pool, shards
from longsynth.cli.main import cli
from longsynth.errors import os_reason

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
    monkeypatch.setattr(shards, "CHECK_KEY", "_not_check")
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


# ---------------------------------------------------------------- 2, 3. sizes and absurd counts


def test_gen_prints_expected_size_and_refuses_what_does_not_fit(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "_free_bytes", lambda root: 5_000_000)
    r = CliRunner().invoke(cli, ["gen", "cumsum", "--L", "4096", "-n", "1000", "-j", "1", "-o", str(tmp_path / "d")])
    assert re.search(r"cumsum: 1,000 samples \(train 960, val 20, test 20\), about 3[23]\.\d MB on disk; 5\.0 MB free",
                     r.output), r.output
    line = one_error_line(r)
    assert re.fullmatch(rf"Error: {re.escape(str(tmp_path / 'd'))}: the dataset needs about 3[23]\.\d MB but only "
                        r"5\.0 MB is free there; lower --num-samples or choose another --out", line)
    assert not (tmp_path / "d").exists()


def test_size_estimate_is_close_to_the_real_size(tmp_path):
    from longsynth import registry

    for task, params, n in (("cumsum", {"L": 512}, 600), ("listops-subtrees", {}, 200)):
        t = registry.get(task)
        cfg = t.make_config(**params)
        splits = store.default_splits(n)
        est = store.estimate_bytes(t, cfg, splits, 0, store.default_shard_size(t, cfg))
        m = store.generate(str(tmp_path / task), task, params, num_samples=n, workers=1)
        real = sum(r["bytes"] for s in m["splits"].values() for r in s["shards"])
        assert 0.8 * real <= est <= 1.25 * real, (task, est, real)


@pytest.mark.parametrize("n", ["100000000000000000000", "10000000000"])
def test_absurd_counts_are_refused_at_once(tmp_path, n):
    import time

    t0 = time.perf_counter()
    r = CliRunner().invoke(cli, ["gen", "cumsum", "-n", n, "-o", str(tmp_path / "d")])
    assert time.perf_counter() - t0 < 1.0
    assert re.search(r"the dataset needs about [\d.]+ [TPE]B but only|at most 4,611,686,018,427,387,904 samples",
                     one_error_line(r))
    assert not (tmp_path / "d").exists()


def test_planning_allocates_nothing_per_shard():
    jobs = store.plan("/x", "cumsum", {}, 0, {"train": 10**15}, 1, "none")
    assert next(jobs).count == 1  # a generator: 10**15 shards are not listed up front


# ---------------------------------------------------------------- 4. workers


def test_workers_are_capped_by_cores_and_shards(tmp_path, monkeypatch):
    used = []
    real = pool._run_pool
    monkeypatch.setattr(pool, "_run_pool", lambda jobs, workers, *a: (used.append(workers), real(jobs, workers, *a)))
    r = CliRunner().invoke(cli, ["gen", "cumsum", "--L", "16", "-n", "100", "--shard-size", "40", "--workers", "1000",
                                 "-o", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    cap = min(os.cpu_count(), 5)  # 3 train shards + val + test
    if cap > 1:
        assert used == [cap]
    assert f"--workers 1000 capped to {cap} ({os.cpu_count()} cores, 5 shards to write)" in r.output


# ---------------------------------------------------------------- 5. one writer per directory

HOLD = """
import sys, time
import os
from longsynth.store.manifest import DirLock
os.makedirs(sys.argv[1], exist_ok=True)
DirLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(60)
"""


def test_second_writer_is_refused_and_a_dead_writers_lock_taken_over(tmp_path):
    import subprocess
    import sys

    d = tmp_path / "d"
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(d)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        r = CliRunner().invoke(cli, ["gen", "cumsum", "--L", "16", "-n", "50", "-j", "1", "-o", str(d)])
        assert one_error_line(r) == f"Error: {d} is being written by process {p.pid}"
        assert not (d / "manifest.json").exists()
        r = CliRunner().invoke(cli, ["gen", "cumsum", "--L", "16", "-n", "50", "-j", "1", "-o", str(d), "--overwrite"])
        assert one_error_line(r) == f"Error: {d} is being written by process {p.pid}"
    finally:
        p.kill()
        p.wait()
    assert (d / ".lock").read_text().strip() == str(p.pid)  # left by a killed process
    r = CliRunner().invoke(cli, ["gen", "cumsum", "--L", "16", "-n", "50", "-j", "1", "-o", str(d)])
    assert r.exit_code == 0, r.output
    assert not (d / ".lock").exists() and store.verify(str(d)) == []


# ---------------------------------------------------------------- 6. no orphans

GEN = """
import sys
from longsynth import store
store.generate(sys.argv[1], "cumsum", {"L": 4096}, num_samples=400000, shard_size=500, workers=2)
"""


def _children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find the workers")
def test_workers_exit_when_gen_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    p = subprocess.Popen([sys.executable, "-c", GEN, str(tmp_path / "d")], stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        workers = []
        while time.time() < deadline and not (tmp_path / "d" / "train-00000.h5").exists():
            time.sleep(0.1)
        workers = [c for c in _children(p.pid) if "spawn_main" in open(f"/proc/{c}/cmdline").read()]
        assert len(workers) == 2, "no workers seen; the test proves nothing"
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers), "workers outlived their parent"


# ---------------------------------------------------------------- 10. splits


def test_duplicate_split_is_refused_and_empty_splits_explained(tmp_path):
    r = CliRunner().invoke(cli, ["gen", "cumsum", "--splits", "train=5,train=7", "-o", str(tmp_path / "a")])
    assert one_error_line(r) == "Error: splits: train is given twice (train=5,train=7)"
    r = CliRunner().invoke(cli, ["gen", "cumsum", "--L", "8", "-n", "10", "-j", "1", "-o", str(tmp_path / "b")])
    assert r.exit_code == 0
    assert "val and test get 0 samples (2% of 10 rounds down); give --splits to choose the counts" in r.output


# ---------------------------------------------------------------- 7. exports


@pytest.fixture(scope="module")
def listops_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("lo") / "listops"
    store.generate(str(d), "listops", {}, num_samples=600, shard_size=200, workers=1)
    return d


@pytest.mark.parametrize("existing", [False, True])
def test_failed_export_leaves_no_partial_file(tmp_path, listops_dir, monkeypatch, existing):
    import errno

    from longsynth.exports import lra_tsv

    real = lra_tsv._iter_split

    def failing(dataset, split, keys, chunk=256):
        for n, s in enumerate(real(dataset, split, keys, chunk)):
            if n == 200:
                raise OSError(errno.ENOSPC, "No space left on device")
            yield s

    monkeypatch.setattr(lra_tsv, "_iter_split", failing)
    out = tmp_path / "tsv"
    if existing:
        out.mkdir()
    r = CliRunner().invoke(cli, ["export", str(listops_dir), "--format", "lra-tsv", "--out", str(out)])
    assert one_error_line(r) == "Error: No space left on device"
    assert (sorted(os.listdir(out)) == []) if existing else not out.exists()
    monkeypatch.undo()
    r = CliRunner().invoke(cli, ["export", str(listops_dir), "--format", "lra-tsv", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert sorted(os.listdir(out)) == ["basic_test.tsv", "basic_train.tsv", "basic_val.tsv"]
    assert len((out / "basic_train.tsv").read_bytes().splitlines()) == 577


def test_export_of_damaged_shard_stops_with_one_line(tmp_path, listops_dir):
    import h5py

    d = tmp_path / "lo"
    shutil.copytree(listops_dir, d)
    flip_sample_byte(d / "train-00001.h5", "targets", 17, byte=0)  # classic ListOps: scalar target
    with h5py.File(d / "train-00001.h5", "r") as f:
        assert f["targets"].chunks is None
    r = CliRunner().invoke(cli, ["export", str(d), "--format", "lra-tsv", "--out", str(tmp_path / "t")])
    assert re.fullmatch(r"Error: .*train-00001.h5: sample 217 of train fails its checksum \(damaged data\); "
                        r"run `longsynth verify .*`", one_error_line(r))
    assert not (tmp_path / "t").exists()


# ---------------------------------------------------------------- 12. stale certificates


def test_overwrite_with_another_dataset_drops_its_certificates(tmp_path):
    gen(tmp_path / "d")
    cert = tmp_path / "d" / "validation" / "dlr-20261122"
    cert.mkdir(parents=True)
    (cert / "metrics.json").write_text(json.dumps({
        "task": "cumsum", "protocol": "atomic", "scale": "tiny", "model": "dlr", "lr": 1e-3, "seed": 0,
        "primary_metric": "r2", "test": {"r2": 0.99}, "best": {"r2": 0.99}, "final": {"r2": 0.99},
        "wall_time_s": 1.0, "train_tokens_per_s": 1.0}))
    assert store.info(str(tmp_path / "d"))["validation"]["final"] == {"r2": 0.99}
    gen(tmp_path / "d")  # the same dataset: resumed, the certificate still holds
    assert "validation" in store.info(str(tmp_path / "d"))
    store.generate(str(tmp_path / "d"), "cummax", P, num_samples=50, workers=1, overwrite=True)
    assert "validation" not in store.info(str(tmp_path / "d"))
    assert not (tmp_path / "d" / "validation").exists()


# ---------------------------------------------------------------- 11. own errors one line, bugs keep their traceback


def test_own_errors_are_one_line_and_bugs_keep_their_traceback(tmp_path, monkeypatch):
    runner = CliRunner()
    # user errors from deep in the library: one line each
    assert one_error_line(runner.invoke(cli, ["info", str(tmp_path)])).endswith("not a longsynth dataset directory")
    gen(tmp_path / "d")
    r = runner.invoke(cli, ["show", str(tmp_path / "d"), "--split", "nope", "--out", str(tmp_path / "p.png")])
    assert "nope" in one_error_line(r)

    def bug(*args, **kwargs):
        raise ValueError("an internal invariant broke")

    monkeypatch.setattr(store, "info", bug)
    r = runner.invoke(cli, ["info", str(tmp_path / "d")])
    assert r.exit_code != 0 and isinstance(r.exception, ValueError)  # not turned into "Error: ..."
    assert not isinstance(r.exception, store.LongsynthError) and "Error:" not in r.output
    monkeypatch.setattr(store, "info", lambda *a, **k: {}["missing"])
    r = runner.invoke(cli, ["info", str(tmp_path / "d")])
    assert isinstance(r.exception, KeyError) and "Error:" not in r.output
    # the library's own errors stay catchable as the built-in types
    with pytest.raises(ValueError):
        longsynth.sample("cumsum", 0, L=0)
    with pytest.raises(KeyError):
        longsynth.open(str(tmp_path / "d"))["nope"]


# ---------------------------------------------------------------- 13. ListOps padding


def test_listops_padding_id_is_outside_the_vocabulary():
    import torch

    from longsynth.torch import PAD_ID, encoder, pad_collate

    vocab = longsynth.vocab("listops-subtrees")
    assert not 0 <= PAD_ID < len(vocab) and vocab[0] == "[MIN"
    enc = encoder("listops")
    a = enc(np.array([0, 5, 4], np.uint8), np.array([-1, -1, 5], np.int8))
    b = enc(np.array([0], np.uint8), np.array([-1], np.int8))
    x, _, lengths = pad_collate([a, b])
    assert x[1].tolist() == [0, PAD_ID, PAD_ID] and (x[1, 1:] != 0).all()
    emb = torch.nn.Embedding(PAD_ID + 1, 4)
    assert emb(x).shape == (2, 3, 4)


# ---------------------------------------------------------------- 14. pictures and listings


def _dark_runs(column_block):
    """Number of separate row bands holding dark pixels (text) in an [H, W, 3] block."""
    rows = (column_block.min(axis=2) < 120).any(axis=1)
    return int(np.sum(rows[1:] & ~rows[:-1]) + rows[0])


def test_show_count_is_bounded_and_listops_text_goes_to_the_file(tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["show", "cumsum", "--count", "100000", "--out", str(tmp_path / "c.png")])
    assert r.exit_code == 2 and "100000 is not in the range 1<=x<=64" in r.output
    assert not (tmp_path / "c.png").exists()
    root = tmp_path / "lo"
    store.generate(str(root), "listops-subtrees", {"min_length": 200, "max_length": 400}, num_samples=20, workers=1)
    r = runner.invoke(cli, ["show", str(root), "--count", "3", "--out", str(tmp_path / "lo.png")])
    lines = r.output.splitlines()
    assert r.exit_code == 0 and len(lines) == 4 and all(line.startswith("sample ") for line in lines[:3]), r.output
    assert lines[3] == f"wrote {tmp_path / 'lo.png'}" and len(r.output) < 500
    r = runner.invoke(cli, ["show", "cumsum", "--out", str(tmp_path / "c.txt")])
    assert r.exit_code == 2 and "ending in .png" in r.output and not (tmp_path / "c.txt").exists()
    r = runner.invoke(cli, ["show", str(root), "--count", "3", "--out", str(tmp_path / "lo.txt")])
    text = (tmp_path / "lo.txt").read_text()
    s = longsynth.open(str(root))["train"][2]
    assert r.exit_code == 0 and text.count("sample ") == 3 and len(text) > 3 * int(s["length"])
    vocab = longsynth.vocab("listops-subtrees")
    assert text.split("sample 2:")[1].splitlines()[1].split()[:2] == [vocab[s["inputs"][0]], vocab[s["inputs"][1]]]


def test_show_dir_usage_names_the_directory_once(tmp_path):
    gen(tmp_path / "d")
    r = CliRunner().invoke(cli, ["show", str(tmp_path / "d"), "--help"], prog_name="longsynth")
    assert r.exit_code == 0 and r.output.splitlines()[0] == "Usage: longsynth show DIR [OPTIONS]"


def test_captions_grow_with_the_tiles():
    from longsynth import plot

    tile = np.zeros((512, 512), np.uint8)
    img = np.asarray(plot.grid([tile] * 4, cols=4, labels=["#0 image"] * 4))
    band = img[: img.shape[0] - 512 - 4, 4 : 4 + 512]  # the caption band above the first tile
    rows = np.nonzero((band.min(axis=(1, 2)) < 120))[0]
    assert rows.size and rows[-1] - rows[0] + 1 >= 18, rows  # cap height of the text, in px (was 9)


def test_hdf5_disk_full_message_becomes_one_line():
    """HDF5 reports a full disk as a multi-line message with the errno inside (seen on a
    3 MB tmpfs); gen must print one line."""
    msg = ("Can't close file (file write failed: time = Mon Nov 23 16:24:40 2026\n, "
           "filename = '/x/.train-00000.h5.tmp', file descriptor = 8, errno = 28, "
           "error message = 'No space left on device', buf = 0x55, total write size = 2048)")
    assert os_reason(OSError(msg)) == "No space left on device"
    assert os_reason(OSError(13, "Permission denied")) == "Permission denied"
    assert "\n" not in os_reason(OSError("two\nlines"))


# ---------------------------------------------------------------- a disk that fills up mid-shard


@pytest.mark.parametrize("compression", ["none", "lzf", "gzip"])
def test_a_disk_that_fills_mid_shard_is_one_line_and_resume_loses_nothing(tmp_path, monkeypatch, compression):
    """The disk fills while the fourth shard is written (as another process filling it
    after the free-space check would): HDF5 builds each shard in memory and never meets
    the full disk, so there is no native crash; one line says how much room the rest
    needs, the three finished shards are kept, and the same command finishes the dataset
    byte for byte. (Measured for real on a 24 MB tmpfs filled by dd: the same line, rc 1.)"""
    import errno

    whole = tmp_path / "whole"
    gen(whole, compression=compression)
    real, calls = shards._write_image, []

    def fills_up(fd, image):
        calls.append(len(image))
        if len(calls) == 4:
            os.write(fd, bytes(image[:100]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, image)

    monkeypatch.setattr(shards, "_write_image", fills_up)
    out = tmp_path / "d"
    args = ["gen", "cumsum", "--L", "32", "-n", "300", "--shard-size", "40", "--seed", "11", "-j", "1",
            "--compression", compression, "--out", str(out)]
    line = one_error_line(CliRunner().invoke(cli, args))
    assert re.fullmatch(rf"Error: {re.escape(str(out))}: the disk is full; 120 of 300 samples are written and kept, "
                        r"the rest needs about \d+\.\d kB more \(uncompressed; .* free now\): free space and rerun "
                        r"the same command to resume", line), line
    assert sorted(e for e in os.listdir(out) if e.endswith(".h5")) == ["train-00000.h5", "train-00001.h5",
                                                                       "train-00002.h5"]
    assert not [e for e in os.listdir(out) if e.endswith(".tmp")]
    monkeypatch.setattr(shards, "_write_image", real)
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0 and "resuming: 120 of 300 samples already written" in r.output, r.output
    for name in os.listdir(whole):
        if name.endswith(".h5") and compression != "lzf":
            assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    for split in ("train", "val", "test"):  # lzf's bytes may differ (docs/format.md, "Crash safety"); samples may not
        a, b = store.open(str(out))[split], store.open(str(whole))[split]
        assert len(a) == len(b) > 0
        for i in range(len(b)):
            got, want = a.read(i), b.read(i)
            assert all(np.array_equal(got[k], want[k]) for k in want), (split, i)
    assert store.verify(str(out)) == []  # no problem found
