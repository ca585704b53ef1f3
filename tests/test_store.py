"""Sharded HDF5 storage: round trips, invariance to workers/shards, resume, corruption."""
import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np
import pytest

import longsynth
from registered import registered
from longsynth import registry, store
from longsynth.files import file_sha256
from longsynth.store import shards
from longsynth.task import KeySpec, Ragged, Task, param

P = {"L": 32}


def tree_bytes(root):
    """{file name: sha256} of a directory (the dataset's full byte content)."""
    return {f: hashlib.sha256(open(os.path.join(root, f), "rb").read()).hexdigest() for f in sorted(os.listdir(root))}


def gen(root, **kw):
    kw.setdefault("num_samples", 300)
    kw.setdefault("shard_size", 40)
    kw.setdefault("workers", 1)
    return store.generate(str(root), "cumsum", P, seed=11, **kw)


def test_open_round_trips_sample(tmp_path):
    m = gen(tmp_path / "d")
    assert m["counts"] == {"train": 288, "val": 6, "test": 6}
    ds = longsynth.open(tmp_path / "d")
    assert ds.manifest["task"] == "cumsum" and list(ds.splits) == ["train", "val", "test"]
    for split, idx in [("train", 0), ("train", 41), ("train", 287), ("val", 5), ("test", 0)]:
        want = longsynth.sample("cumsum", idx, seed=11, split=split, **P)
        got = ds[split][idx]
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)
    assert len(ds["train"]) == 288 and np.array_equal(ds["train"][-1]["inputs"], ds["train"][287]["inputs"])
    with pytest.raises(IndexError):
        ds["train"][288]


def test_same_bytes_for_any_workers_and_digests_for_any_shard_size(tmp_path):
    a = gen(tmp_path / "a", workers=1)
    b = gen(tmp_path / "b", workers=2)
    c = gen(tmp_path / "c", workers=2, shard_size=97)
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
    for s in a["splits"]:
        assert a["splits"][s]["digest"] == b["splits"][s]["digest"] == c["splits"][s]["digest"]
    assert len(c["splits"]["train"]["shards"]) == 3 and len(a["splits"]["train"]["shards"]) == 8


def test_without_workers_a_small_job_is_written_here_and_the_asked_workers_are_a_pool(tmp_path, monkeypatch):
    """Without --workers, a job one process writes faster than a pool starts stays in this process; a
    given --workers is kept; the bytes are the same either way. A sample timed at 0.1 s is a large job."""
    from longsynth.store import pool

    pools = []
    run_pool = pool._run_pool
    monkeypatch.setattr(pool, "_run_pool", lambda *a, **k: pools.append(1) or run_pool(*a, **k))
    splits = {"train": 40, "val": 8, "test": 8}
    here = store.generate(str(tmp_path / "here"), "cumsum", {"L": 8}, splits=splits, shard_size=8)
    assert pools == []
    two = store.generate(str(tmp_path / "two"), "cumsum", {"L": 8}, splits=splits, shard_size=8, workers=2)
    assert pools == ([1] if (os.cpu_count() or 1) > 1 else [])
    assert tree_bytes(tmp_path / "here") == tree_bytes(tmp_path / "two")
    assert {s: i["digest"] for s, i in here["splits"].items()} == {s: i["digest"] for s, i in two["splits"].items()}
    job = store.ShardJob(str(tmp_path / "x"), "cumsum", {"L": 8}, 0, "train", 0, 0, 1, "none")
    default, asked = pool.LocalPool(4), pool.LocalPool(4, asked=4)
    for p in (default, asked):
        p.estimate(job, 56)
    assert default.small and not asked.small
    monkeypatch.setattr(pool.shards, "warm", lambda job: time.sleep(0.1))
    slow = pool.LocalPool(4)
    slow.estimate(job, 56)
    assert not slow.small


def test_split_digest_changes_with_content(tmp_path):
    a = gen(tmp_path / "a")
    b = store.generate(str(tmp_path / "b"), "cumsum", P, seed=12, num_samples=300, shard_size=40, workers=1)
    assert all(a["splits"][s]["digest"] != b["splits"][s]["digest"] for s in a["splits"])


def test_resume_after_injected_crash_is_byte_identical(tmp_path, monkeypatch):
    gen(tmp_path / "ref")
    real = shards.write_shard
    calls = []

    def crashing(job, progress=None):
        calls.append(job.name)
        if len(calls) == 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(job, progress)

    monkeypatch.setattr(shards, "write_shard", crashing)
    with pytest.raises(store.LongsynthError,
                       match=r"the disk is full; 120 of 300 samples are written and kept, .* rerun the same command "
                             r"to resume"):
        gen(tmp_path / "d")
    m = json.load(open(tmp_path / "d" / "manifest.json"))
    assert not m["complete"] and len(m["splits"]["train"]["shards"]) == 3
    assert not [f for f in os.listdir(tmp_path / "d") if f.endswith(".tmp")]
    with pytest.raises(store.LongsynthError, match="incomplete"):
        longsynth.open(tmp_path / "d")
    monkeypatch.setattr(shards, "write_shard", real)
    gen(tmp_path / "d")
    assert tree_bytes(tmp_path / "d") == tree_bytes(tmp_path / "ref")


def test_write_error_mid_shard_leaves_no_valid_looking_shard(tmp_path, monkeypatch):
    def full(block, count):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shards, "block_digests", full)
    with pytest.raises(store.LongsynthError):
        gen(tmp_path / "d")
    assert sorted(os.listdir(tmp_path / "d")) == ["manifest.json"]


GEN_SCRIPT = """
import sys
from longsynth import store
store.generate(sys.argv[1], "cumsum", {"L": 2048}, seed=3, num_samples=3000, shard_size=100, workers=1)
"""


@pytest.mark.parametrize("when", ["tmp", "shards"])
def test_resume_after_kill_minus_9(tmp_path, when):
    ref, d = tmp_path / "ref", tmp_path / "d"
    store.generate(str(ref), "cumsum", {"L": 2048}, seed=3, num_samples=3000, shard_size=100, workers=1)
    proc = subprocess.Popen([sys.executable, "-c", GEN_SCRIPT, str(d)])
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        names = os.listdir(d) if d.exists() else []
        done = [n for n in names if store.SHARD_RE.match(n)]
        if ((when == "tmp" and any(n.endswith(".h5.tmp") for n in names) and done)
                or (when == "shards" and len(done) >= 5)):
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    m = json.load(open(d / "manifest.json"))
    assert not m["complete"], "the run finished before it was killed; the test proves nothing"
    store.generate(str(d), "cumsum", {"L": 2048}, seed=3, num_samples=3000, shard_size=100, workers=1)
    assert tree_bytes(d) == tree_bytes(ref)
    assert store.verify(str(d)) == []


def test_verify_finds_flipped_byte_and_missing_shard(tmp_path):
    gen(tmp_path / "d")
    assert store.verify(str(tmp_path / "d"), deep=True) == []
    shard = tmp_path / "d" / "train-00002.h5"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    problems = store.verify(str(tmp_path / "d"))
    assert any("train-00002.h5: SHA-256 mismatch" in p for p in problems)
    os.remove(tmp_path / "d" / "val-00000.h5")
    assert any("val-00000.h5: missing" in p for p in store.verify(str(tmp_path / "d")))


def test_deep_verify_finds_valid_file_with_wrong_content(tmp_path):
    """A shard rewritten consistently (hashes updated) but with wrong samples: only --deep sees it."""
    import h5py

    gen(tmp_path / "d")
    path = tmp_path / "d" / "train-00001.h5"
    from longsynth import checksum

    with h5py.File(path, "r+") as f:
        f["inputs"][3] = f["inputs"][3] * 0.5
        check = f[store.CHECK_KEY][3]  # keep the read checksum consistent too: only --deep may see it
        keys = sorted(json.load(open(tmp_path / "d" / "manifest.json"))["keys"])
        check[keys.index("inputs")] = checksum.sum64(f["inputs"][3])
        f[store.CHECK_KEY][3] = check
    m = json.load(open(tmp_path / "d" / "manifest.json"))
    rec = m["splits"]["train"]["shards"][1]
    rec["bytes"], rec["sha256"] = os.path.getsize(path), file_sha256(path)
    json.dump(m, open(tmp_path / "d" / "manifest.json", "w"))
    assert store.verify(str(tmp_path / "d")) == []
    assert store.verify(str(tmp_path / "d"), deep=True, samples=300) == [
        "train[43]: stored sample differs from the regenerated one"]


def test_refuses_other_dataset_unless_overwrite(tmp_path):
    gen(tmp_path / "d")
    with pytest.raises(store.LongsynthError, match="holds a different dataset \\(seed differ\\)"):
        store.generate(str(tmp_path / "d"), "cumsum", P, seed=99, num_samples=300, shard_size=40, workers=1)
    store.generate(str(tmp_path / "d"), "cumsum", P, seed=99, num_samples=300, shard_size=40, workers=1, overwrite=True)
    assert longsynth.open(tmp_path / "d").seed == 99
    other = tmp_path / "notes"
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    with pytest.raises(store.LongsynthError, match="not empty and holds no longsynth dataset"):
        gen(other, overwrite=True)
    assert (other / "thesis.tex").read_text() == "keep me"


def test_other_task_revision_is_another_dataset(tmp_path):
    """A dataset drawn by another revision of the task's draws is neither resumed nor deep-checked."""
    gen(tmp_path / "d")
    path = tmp_path / "d" / "manifest.json"
    m = json.load(open(path))
    assert m["task_revision"] == registry.get("cumsum").revision == 1
    del m["task_revision"]  # manifests written before revisions existed read as revision 1
    json.dump(m, open(path, "w"))
    gen(tmp_path / "d")
    m = json.load(open(path))
    m["task_revision"] = 7  # a dataset drawn by revision 7: its shards say so too
    import h5py

    for rec in (r for s in m["splits"].values() for r in s["shards"]):
        with h5py.File(tmp_path / "d" / rec["file"], "r+") as f:
            f.attrs["task_revision"] = 7
        shard = tmp_path / "d" / rec["file"]
        rec["bytes"], rec["sha256"] = os.path.getsize(shard), file_sha256(shard)
    json.dump(m, open(path, "w"))
    assert store.verify(str(tmp_path / "d"), deep=True)[0].startswith("manifest: generated by revision 7")
    with pytest.raises(store.LongsynthError, match="holds a different dataset \\(task_revision differ\\)"):
        gen(tmp_path / "d")


def test_rerun_of_complete_dataset_rewrites_nothing(tmp_path):
    gen(tmp_path / "d")
    before = {f: os.stat(tmp_path / "d" / f).st_mtime_ns for f in os.listdir(tmp_path / "d") if f.endswith(".h5")}
    gen(tmp_path / "d")
    after = {f: os.stat(tmp_path / "d" / f).st_mtime_ns for f in os.listdir(tmp_path / "d") if f.endswith(".h5")}
    assert before == after


# ---------------------------------------------------------------- variable-length samples


@dataclass(frozen=True)
class RaggedConfig:
    max_len: int = param(9, "longest sample", lo=1, hi=100)


def _ragged_block(cfg, seed, split, start, count, fixed):
    lengths = [(seed + split + start + i) % cfg.max_len + 1 for i in range(count)]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = np.concatenate([np.arange(n, dtype=np.int16) + start + i for i, n in enumerate(lengths)])
    pairs = np.repeat(values, 2).reshape(-1, 2).astype(np.float32)
    return {
        "inputs": Ragged(values, offsets),
        "targets": Ragged(pairs, offsets),
        "length": np.asarray(lengths, dtype=np.int32),
    }


RAGGED = Task(
    name="ragged-test",
    config=RaggedConfig,
    summary="test-only variable-length task",
    keys=lambda cfg: {
        "inputs": KeySpec("int16", (), ragged=True),
        "targets": KeySpec("float32", (2,), ragged=True),
        "length": KeySpec("int32", ()),
    },
    block=_ragged_block,
    family="listops",
)


@pytest.fixture
def ragged_task():
    with registered(RAGGED):
        yield RAGGED


def test_ragged_round_trip(tmp_path, ragged_task):
    m = store.generate(str(tmp_path / "r"), "ragged-test", {}, seed=2, num_samples=200, shard_size=64, workers=1)
    ds = longsynth.open(tmp_path / "r")
    for split in ds.splits:
        for i in range(len(ds[split])):
            want = longsynth.sample("ragged-test", i, seed=2, split=split)
            got = ds[split][i]
            assert all(np.array_equal(got[k], want[k]) and got[k].dtype == want[k].dtype for k in want)
            assert got["inputs"].shape == (int(want["length"]),) and got["targets"].shape == (int(want["length"]), 2)
    assert store.verify(str(tmp_path / "r"), deep=True) == []
    with pytest.raises(ValueError, match="variable-length"):
        longsynth.batch("ragged-test", 0, 2)
    assert m["keys"]["inputs"]["ragged"] is True


def test_block_digests_equal_sample_digests(ragged_task):
    from longsynth.task import unpack

    for name, params in [("cumsum", {"L": 5}), ("ragged-test", {})]:
        t = registry.get(name)
        cfg = t.make_config(**params)
        block = t.generate(cfg, 1, 1, 3, 7, {})
        got = store.block_digests(block, 7)
        for i in range(7):
            assert got[i].tobytes() == store.sample_digest(unpack(block, i))


@pytest.mark.parametrize("legacy", [False, True])
def test_iter_blocks_are_the_samples_in_order(tmp_path, ragged_task, monkeypatch, legacy):
    """Blocks (what exports read) hold exactly the samples, with or without `_check`."""
    if legacy:  # shards written before checksums: blocks assembled from digest-checked reads
        monkeypatch.setattr(shards, "CHECK_KEY", "_not_check")
    store.generate(str(tmp_path / "r"), "ragged-test", {}, seed=2, num_samples=200, shard_size=64, workers=1)
    gen(tmp_path / "c")
    monkeypatch.undo()
    for root, keys in ((tmp_path / "r", None), (tmp_path / "c", ["targets"])):
        sp = longsynth.open(root)["train"]
        seen = 0
        for start, block in sp.iter_blocks(keys, chunk=25):
            assert start == seen and set(block) == set(keys or sp.specs)
            sizes = {len(c.offsets) - 1 if isinstance(c, Ragged) else len(c) for c in block.values()}
            assert len(sizes) == 1
            n = sizes.pop()
            assert 0 < n <= 25
            for i in range(n):
                want = sp.read(start + i, keys)
                for k, col in block.items():
                    got = col.values[col.offsets[i]:col.offsets[i + 1]] if isinstance(col, Ragged) else col[i]
                    assert got.dtype == want[k].dtype and np.array_equal(got, want[k])
            seen += n
        assert seen == len(sp)


def test_iter_blocks_of_a_range(tmp_path):
    gen(tmp_path / "c")  # train: shards of 40
    sp = longsynth.open(tmp_path / "c")["train"]
    got = [(start, len(block["targets"])) for start, block in sp.iter_blocks(["targets"], chunk=25, start=11, stop=97)]
    assert got == [(11, 25), (36, 4), (40, 25), (65, 15), (80, 17)]  # blocks end at shard ends and at stop
    for start, block in sp.iter_blocks(["targets"], chunk=25, start=11, stop=97):
        for i, row in enumerate(block["targets"]):
            assert np.array_equal(row, sp[start + i]["targets"])
    assert list(sp.iter_blocks(chunk=25, start=50, stop=50)) == []


FILL_TASKS = sorted(n for n, t in registry.all_tasks().items() if t.fill is not None)


@pytest.mark.parametrize("name", FILL_TASKS)
def test_reused_block_buffers_give_the_same_samples(name):
    """write_shard fills one set of block buffers again and again: dirty buffers (a previous,
    larger block's leftovers, here all bytes 0xA5) must not leak into a new block: every
    fill kernel writes every element of its block."""
    t = registry.get(name)
    cfg = t.make_config()
    fixed = t.fixed_draws(cfg, 7)
    buffers = t.allocate(cfg, 3)
    for v in buffers.values():
        v.view(np.uint8)[...] = 0xA5
    for start, n in ((0, 3), (3, 2)):
        fresh = t.generate(cfg, 7, 1, start, n, fixed)
        reused = t.generate(cfg, 7, 1, start, n, fixed, buffers)
        assert sorted(fresh) == sorted(reused)
        for k in fresh:
            assert reused[k].shape == fresh[k].shape and np.array_equal(reused[k], fresh[k]), (name, k, start)


def test_many_small_shards_do_not_rewrite_the_manifest_per_shard(tmp_path, monkeypatch):
    """The manifest is rewritten at most once a second while shards finish (a rewrite per shard made
    6,000 shards of one sample cost 181 s), and a stop mid-run still records the finished shards."""
    from longsynth.store import build

    writes = []
    real = build._write_manifest
    monkeypatch.setattr(build, "_write_manifest", lambda root, m: (writes.append(1), real(root, m)))
    monkeypatch.setattr(build, "MANIFEST_EVERY_S", 3600.0)
    store.generate(str(tmp_path / "d"), "cumsum", {"L": 8}, seed=0, splits={"train": 300}, shard_size=1, workers=1)
    assert len(writes) <= 3, len(writes)  # the plan, the end, the card: never one per shard
    assert store.verify(str(tmp_path / "d")) == []

    calls = []
    real_done = {}

    class Stop(Exception):
        pass

    def stopping(job, record, timing):  # the 40th finished shard raises, as a Ctrl-C would
        calls.append(1)
        real_done["f"](job, record, timing)
        if len(calls) == 40:
            raise Stop

    orig_run = build.LocalPool.run

    def run(self, jobs, n, progress, done):
        real_done["f"] = done
        return orig_run(self, jobs, n, progress, stopping)

    monkeypatch.setattr(build.LocalPool, "run", run)
    with pytest.raises(Stop):
        store.generate(str(tmp_path / "e"), "cumsum", {"L": 8}, seed=0, splits={"train": 300}, shard_size=1,
                       workers=1)
    m = json.load(open(tmp_path / "e" / "manifest.json"))
    assert len(m["splits"]["train"]["shards"]) == 40 and not m["complete"]
