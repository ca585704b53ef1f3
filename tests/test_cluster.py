"""`gen --dask`: shards written by a Dask cluster, with real scheduler and worker processes on
this machine. Everything binds to 127.0.0.1, dashboards too (127.0.0.1:0: `--no-dashboard`
still serves HTTP on 0.0.0.0:8787).

`distributed` is imported unconditionally: without it these tests fail (CI installs it
through the test extra), they do not skip.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import distributed  # fail, not skip, when the test extra is not installed
import pytest
from click.testing import CliRunner

from longsynth import store
from longsynth.cli.main import cli
from longsynth.store import cluster

P = {"L": 32}
PF = {"size": 128}  # pathfinder-seg: 8-9 ms a sample on one core (2026-11-28), 35 kB on disk: shards slow enough
# to kill mid-way. Shards of 300 take 2-3 s; at ~2 ms a sample (the kernel of the time), shards of 150 (0.3 s) let
# a warm worker finish every shard between two looks of the killer, which then killed nothing. Two shards: both
# are being made at the killer's first look, as the first two of four were (the reference is made on one core)
PF_SPLITS = dict(seed=5, splits={"train": 600}, shard_size=300)


def tree_bytes(root):
    """{file name: sha256} of a directory (the dataset's full byte content)."""
    return {f: hashlib.sha256(open(os.path.join(root, f), "rb").read()).hexdigest() for f in sorted(os.listdir(root))}


def shards_and_manifest(root):
    """The shards' bytes and the manifest without its `command` (which names --out)."""
    m = json.load(open(os.path.join(root, "manifest.json")))
    m.pop("command")
    return {f: h for f, h in tree_bytes(root).items() if f.endswith(".h5")}, m


def one_error_line(result):
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The local pool's bytes with one and with two workers (the same, as test_store shows)."""
    base = tmp_path_factory.mktemp("ref")
    for workers in (1, 2):
        store.generate(str(base / f"cumsum-{workers}"), "cumsum", P, seed=11, num_samples=300, shard_size=40,
                       workers=workers)
    store.generate(str(base / "pf"), "pathfinder-seg", PF, **PF_SPLITS, workers=1)
    return base


def _dask_cli():
    """The `dask` command of this interpreter (the console script's own entry point,
    dask.__main__): a `dask` found elsewhere on PATH may belong to another Python, whose
    workers cannot unpickle longsynth's tasks."""
    return [sys.executable, "-m", "dask"]


# ---------------------------------------------------------------- one cluster: process workers started by the dask CLI


@pytest.fixture(scope="module")
def scheduler_file(tmp_path_factory):
    """`dask scheduler` and two `dask worker` processes (behind one nanny each), the way a
    user starts them on a cluster, bound to 127.0.0.1."""
    base = tmp_path_factory.mktemp("dask")
    sfile = str(base / "scheduler.json")
    env = dict(os.environ)
    procs = [subprocess.Popen([*_dask_cli(), "scheduler", "--scheduler-file", sfile, "--host", "127.0.0.1",
                               "--port", "0", "--dashboard-address", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, start_new_session=True)]
    try:
        deadline = time.time() + 30
        while not os.path.exists(sfile) and time.time() < deadline:
            time.sleep(0.05)
        assert os.path.exists(sfile), "dask scheduler did not start"
        procs.append(subprocess.Popen([*_dask_cli(), "worker", "--scheduler-file", sfile, "--host", "127.0.0.1",
                                       "--nworkers", "2", "--nthreads", "1", "--dashboard-address", "127.0.0.1:0",
                                       "--death-timeout", "30"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                      start_new_session=True))
        with distributed.Client(scheduler_file=sfile, timeout=30) as c:
            c.wait_for_workers(2, timeout=60)
        yield sfile
    finally:
        for p in reversed(procs):  # the whole session: workers' nannies and their children
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture(scope="module")
def client(scheduler_file):
    """A client of that cluster, as a user's Python holds one (a LocalCluster of its own started and stopped two
    more worker processes, seconds, to run the same code on the same kind of workers)."""
    with distributed.Client(scheduler_file=scheduler_file, timeout=30) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


class TestClient:
    def test_same_bytes_as_the_local_pool_and_progress_across_the_cluster(self, tmp_path, client, reference):
        calls, notes = [], []

        def progress(n, total=None, done=0):
            calls.append((n, total, done))

        m = store.generate(str(tmp_path / "d"), "cumsum", P, seed=11, num_samples=300, shard_size=40, client=client,
                           progress=progress, notify=notes.append)
        ref = tree_bytes(reference / "cumsum-1")
        assert tree_bytes(tmp_path / "d") == ref == tree_bytes(reference / "cumsum-2")
        want = json.load(open(reference / "cumsum-1" / "manifest.json"))
        assert {s: i["digest"] for s, i in m["splits"].items()} == {s: i["digest"] for s, i in want["splits"].items()}
        assert store.verify(str(tmp_path / "d"), deep=True) == []
        assert calls[0] == (None, 300, 0) and sum(c[0] for c in calls[1:]) == 300 and all(c[0] >= 0 for c in calls[1:])
        assert any(re.fullmatch(r"Dask: tcp://127\.0\.0\.1:\d+, 2 worker thread\(s\), dashboard "
                                r"http://127\.0\.0\.1:\d+/status", line) for line in notes), notes

    def test_resume_and_lock_are_the_local_pools(self, tmp_path, client, reference):
        d = tmp_path / "d"
        store.generate(str(d), "cumsum", P, seed=11, num_samples=300, shard_size=40, workers=1)
        m = json.loads((d / "manifest.json").read_text())
        for name in ("train-00002.h5", "train-00005.h5", "test-00000.h5"):  # a run killed half-way
            os.remove(d / name)
        m["complete"] = False
        (d / "manifest.json").write_text(json.dumps(m))
        (d / ".train-00002.h5.0123abcd.tmp").write_bytes(b"partial")  # a lost attempt's leftover
        written, notes = [], []
        store.generate(str(d), "cumsum", P, seed=11, num_samples=300, shard_size=40, client=client,
                       progress=lambda n, total=None, done=0: written.append(n if n is not None else done),
                       notify=notes.append)
        assert tree_bytes(d) == tree_bytes(reference / "cumsum-1")
        assert written[0] == 300 - 40 - 40 - 6 and sum(written) == 300  # the kept shards, counted at once
        assert "resuming: 214 of 300 samples already written" in notes

        with store.DirLock(str(d)):
            with pytest.raises(store.LongsynthError, match=rf"{re.escape(str(d))} is being written by process"):
                store.generate(str(d), "cumsum", P, seed=11, num_samples=300, shard_size=40, client=client)

    def test_workers_and_client_together_are_refused(self, tmp_path, client):
        with pytest.raises(store.LongsynthError, match="give workers or client, not both"):
            store.generate(str(tmp_path / "d"), "cumsum", P, num_samples=10, workers=2, client=client)

    def test_a_directory_the_workers_cannot_see_is_one_line(self, tmp_path, client):
        """A worker that cannot see --out (no shared filesystem) fails the shard with a message
        that says so; simulated by removing the directory once it is locked."""
        job = store.ShardJob(str(tmp_path / "nowhere"), "cumsum", {"L": 8}, 0, "train", 0, 0, 4, "none")
        with pytest.raises(store.LongsynthError, match=r"cannot see .*nowhere; --out must be on a filesystem every "
                                                       r"worker shares"):
            client.submit(cluster._dask_write, job, "t", pure=False).result()


# ---------------------------------------------------------------- the dask CLI; a worker killed


@pytest.mark.slow  # a Dask scheduler and workers in their own processes: left out of the fast subset
class TestDaskCommandLine:
    def test_gen_with_a_scheduler_file_and_an_address(self, tmp_path, scheduler_file, reference):
        args = ["gen", "cumsum", "--L", "32", "-n", "300", "--shard-size", "40", "--seed", "11"]
        r = CliRunner().invoke(cli, args + ["--dask", scheduler_file, "-o", str(tmp_path / "a")])
        assert r.exit_code == 0, r.output
        assert re.search(r"Dask: tcp://127\.0\.0\.1:\d+, 2 worker thread\(s\), "
                         r"dashboard http://127\.0\.0\.1:\d+/status", r.output), r.output
        address = json.load(open(scheduler_file))["address"]
        r = CliRunner().invoke(cli, args + ["--dask", address, "-o", str(tmp_path / "b")])
        assert r.exit_code == 0, r.output
        ref = shards_and_manifest(reference / "cumsum-1")
        assert shards_and_manifest(tmp_path / "a") == ref and shards_and_manifest(tmp_path / "b") == ref

    def test_worker_killed_mid_shard_reruns_it_to_the_same_bytes(self, tmp_path, scheduler_file, reference):
        d = tmp_path / "d"
        with distributed.Client(scheduler_file=scheduler_file, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            pids = client.run(os.getpid)
            failure = []

            def run():
                try:
                    store.generate(str(d), "pathfinder-seg", PF, **PF_SPLITS, client=client)
                except BaseException as e:
                    failure.append(e)

            t = threading.Thread(target=run)
            t.start()
            killed = None
            deadline = time.time() + 60
            while killed is None and time.time() < deadline and t.is_alive():
                for addr, keys in client.processing().items():
                    for key in keys:
                        name = re.match(r"longsynth-(.*\.h5)-", str(key))
                        if name is None or (d / name.group(1)).exists():
                            continue
                        # shards are built in memory and written at the end (docs/format.md): a temp file
                        # exists for an instant, so the worker is killed while its shard is being made,
                        # and a temp file it left, if any, must not change the result either
                        tmp = [f for f in os.listdir(d) if f.startswith(f".{name.group(1)}.") and f.endswith(".tmp")]
                        if addr in pids:
                            os.kill(pids[addr], signal.SIGKILL)
                            killed = (name.group(1), tmp)
                            break
                    if killed:
                        break
                time.sleep(0.002)
            t.join(900)  # a guard against a hang, not a timing: the restarted worker may compile its kernels
            assert not t.is_alive() and not failure, failure
        assert killed is not None, "no worker was killed mid-shard; the test proves nothing"
        assert not [f for f in os.listdir(d) if f.endswith(".tmp")], os.listdir(d)
        assert tree_bytes(d) == tree_bytes(reference / "pf")
        assert store.verify(str(d)) == []


# ---------------------------------------------------------------- failures in one line


def test_unreachable_scheduler_is_one_line_within_30_s(tmp_path, monkeypatch):
    import socket

    assert cluster.CONNECT_TIMEOUT < 30
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 2)  # the default (20 s) is too slow for a test
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.perf_counter()
    r = CliRunner().invoke(cli, ["gen", "cumsum", "-n", "10", "--dask", f"tcp://127.0.0.1:{port}",
                                 "-o", str(tmp_path / "d")])
    assert time.perf_counter() - t0 < 30
    assert re.fullmatch(rf"Error: Dask scheduler tcp://127\.0\.0\.1:{port} is unreachable \(.+\)", one_error_line(r))
    assert not (tmp_path / "d").exists()
    r = CliRunner().invoke(cli, ["gen", "cumsum", "-n", "10", "--dask", str(tmp_path / "none.json"),
                                 "-o", str(tmp_path / "d")])
    assert one_error_line(r) == f"Error: {tmp_path / 'none.json'}: no such scheduler file"


def test_without_distributed_dask_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # what `import distributed` sees when it is missing
    r = CliRunner().invoke(cli, ["gen", "cumsum", "-n", "10", "--dask", "tcp://127.0.0.1:8786",
                                 "-o", str(tmp_path / "d")])
    assert one_error_line(r) == ('Error: the Dask executor needs the distributed package: '
                                 'pip install "longsynth[dask]"')
    r = CliRunner().invoke(cli, ["gen", "cumsum", "-n", "10", "-j", "2", "--dask", "x.json", "-o", str(tmp_path / "d")])
    assert one_error_line(r) == "Error: give --workers or --dask, not both (the Dask workers write the shards)"


def test_importing_longsynth_does_not_import_distributed():
    code = "import sys, longsynth, longsynth.store, longsynth.cli.main, longsynth.torch; " \
           "print(sorted(m for m in sys.modules if m.split('.')[0] in ('distributed', 'dask')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- training across processes (torchrun)

RANK_SCRIPT = '''
import json, sys
import torch.distributed as dist
from torch.utils.data import DataLoader
from longsynth.torch import OnTheFlyDataset, ShardDataset, seeded_sampler

stream = OnTheFlyDataset("cumsum", L=16, batch_size=3, steps=4, extras=True)  # built before the group
dist.init_process_group("gloo")
ds = ShardDataset(sys.argv[1], extras=True)
sampler = seeded_sampler(ds, seed=7)
sampler.set_epoch(1)
stored = [int(e["index"]) for _, _, e in (ds[i] for i in sampler)]
streamed = [b[2]["index"].tolist() for b in DataLoader(stream, batch_size=None, num_workers=2)]
out = {"rank": dist.get_rank(), "world": dist.get_world_size(), "stored": stored, "streamed": streamed}
with open(sys.argv[2] + f"/rank{dist.get_rank()}.json", "w") as fh:
    json.dump(out, fh)
dist.destroy_process_group()
'''


def test_torchrun_ranks_read_disjoint_samples_stored_and_on_the_fly(tmp_path):
    """Two processes under torchrun (gloo, loopback): ShardDataset with the seeded
    DistributedSampler splits the stored samples between the ranks, every sample once; an
    OnTheFlyDataset built before init_process_group still gives each rank its own steps."""
    from longsynth import store

    root = tmp_path / "d"
    store.generate(str(root), "cumsum", {"L": 16}, splits={"train": 21, "val": 0, "test": 0}, workers=1)
    script = tmp_path / "ranks.py"
    script.write_text(RANK_SCRIPT)
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(script), str(root), str(tmp_path)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert (r0["world"], r1["world"]) == (2, 2)
    assert len(r0["stored"]) == len(r1["stored"]) == 11  # 21 samples padded to 22 by the sampler
    assert set(r0["stored"]) | set(r1["stored"]) == set(range(21))
    assert len(set(r0["stored"]) & set(r1["stored"])) <= 1  # only the padding repeats
    # step s of rank r holds (2 s + r) * 3 + [0, 3)
    assert r0["streamed"] == [[6 * s, 6 * s + 1, 6 * s + 2] for s in range(4)]
    assert r1["streamed"] == [[6 * s + 3, 6 * s + 4, 6 * s + 5] for s in range(4)]
