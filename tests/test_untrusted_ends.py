"""A dataset from a stranger, clean ends: a signal, a full disk, a dead worker or a refused
option leaves nothing half-written behind (section 9 of the hostile test's findings).
Fixtures: untrusted_fixtures.py."""
import os
import re

import pytest

from longsynth import store

from untrusted_fixtures import *  # noqa: F403 (its __all__: the fixtures clean, ds and listops_subtrees)
from untrusted_fixtures import GEN, gen, invoke, one_error_line


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


def test_a_signal_swallowed_in_a_destructor_still_stops_the_command():
    """A SIGTERM whose KeyboardInterrupt lands in a ``__del__`` (torch frees tensors there) is swallowed by
    Python; the command's hook delivers the signal again, so a loop with no progress report of ours (a training
    run) stops instead of running on."""
    import subprocess
    import sys

    code = """
import signal, sys, time
import longsynth.cli.signals as S
from longsynth.cli.main import _on_signal, _unraisable
signal.signal(signal.SIGTERM, _on_signal)
sys.unraisablehook = _unraisable(sys.unraisablehook)
class Freed:
    def __del__(self):
        S._SIGNALLED.append(signal.SIGTERM)  # the signal, as if it had landed here
        raise KeyboardInterrupt
Freed()
t = time.time()
try:
    while time.time() - t < 20:
        pass
except KeyboardInterrupt:
    print("stopped after", round(time.time() - t, 1)); sys.exit(3)
print("ran on")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "stopped after" in r.stdout, (r.stdout, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and float(r.stdout.split()[-1]) < 5
