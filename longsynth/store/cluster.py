"""The Dask executor: every shard one task on a ``distributed`` cluster, the manifest kept
here, by the process that holds the directory's lock.

It is a peer of ``LocalPool`` (longsynth.store.pool): the same ShardJob goes in, the same
record comes back from ``write_shard``, and ``generate`` records it in the manifest. Only
where the shard is written changes, so resume, ``verify``, the lock and byte identity are
the local pool's. Workers write straight into ``job.root``: it must be a path every worker
sees (a shared filesystem), under the same name.

``distributed`` is imported only when an executor or a connection is made: ``import
longsynth`` never needs it.
"""
from __future__ import annotations

import os
import threading
import uuid

from longsynth.errors import LongsynthError
from longsynth.store import shards
from longsynth.store.layout import TMP_RE

INSTALL = 'the Dask executor needs the distributed package: pip install "longsynth[dask]"'
CONNECT_TIMEOUT = 20  # seconds: an unreachable scheduler is reported well inside 30 s
POLL_S = 0.25  # progress refresh while waiting for shards

# Numba's workqueue threading layer (the default here without TBB) aborts the process when
# two Python threads run parallel kernels at once; a worker with several threads writes one
# shard at a time (start workers with --nthreads 1 --nworkers N to use every core).
_KERNEL_LOCK = threading.Lock()


def _distributed():
    try:
        import distributed
    except ImportError:
        raise LongsynthError(INSTALL) from None
    return distributed


def connect(address, timeout=None):
    """A ``distributed.Client`` for ``address``: ``tcp://host:port`` (any scheme Dask knows)
    or the path of a scheduler file (what ``dask scheduler --scheduler-file``, dask-mpi
    and dask-jobqueue setups write). LongsynthError, one line, when ``distributed`` is
    missing or the scheduler does not answer within ``timeout`` seconds."""
    distributed = _distributed()
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    is_file = "://" not in address and (os.path.isfile(address) or address.endswith(".json"))
    if is_file and not os.path.isfile(address):
        raise LongsynthError(f"{address}: no such scheduler file")
    # checked before a Client exists: one that fails on a malformed address still closes
    # itself at exit, 40 s later, with a traceback
    _check_address(_scheduler_file_address(address) if is_file else address, address)
    try:
        if is_file:
            return distributed.Client(scheduler_file=address, timeout=timeout, set_as_default=False)
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        why = " ".join(str(e).split()) or type(e).__name__
        if len(why) > 160:
            why = why[:157] + "..."
        raise LongsynthError(f"Dask scheduler {address} is unreachable ({why})") from None


def _scheduler_file_address(path):
    """The ``address`` a scheduler file names; LongsynthError for anything else."""
    from longsynth import safe

    data = safe.read_json(path, f"{path} (scheduler file)", limit=1 << 20)
    if not isinstance(data, dict) or not isinstance(data.get("address"), str):
        raise LongsynthError(f"{path}: not a Dask scheduler file (no \"address\")")
    return data["address"]


def _check_address(address, given):
    """LongsynthError (one line) unless ``address`` parses as a Dask scheduler address."""
    from distributed.comm import get_address_host_port, parse_address
    from distributed.comm.registry import backends

    try:
        scheme, _ = parse_address(address)
        if scheme not in backends or scheme == "inproc":  # inproc: this process only, no cluster
            raise ValueError(f"scheme {scheme!r} is none of a cluster's: "
                             f"{', '.join(sorted(b for b in backends if b != 'inproc'))}")
        get_address_host_port(address)
    except (ValueError, TypeError) as e:
        raise LongsynthError(f"--dask: {given} is not a scheduler address or file ({e}); expected "
                             f"tcp://host:port or the path of a scheduler file") from None


def dashboard(client):
    """The scheduler's dashboard address, or None when it runs without one."""
    try:
        if "dashboard" not in client.scheduler_info().get("services", {}):
            return None
        return client.dashboard_link
    except (KeyError, AttributeError, TypeError):
        return None


def _dask_write(job, topic):
    """One shard on a Dask worker: ``write_shard`` under a temporary name of its own
    attempt, reporting samples written to the client through the scheduler's event log."""
    from distributed import get_worker
    from numba import set_num_threads

    if not os.path.isdir(job.root):
        import socket

        raise LongsynthError(f"Dask worker on {socket.gethostname()} cannot see {job.root}; "
                             f"--out must be on a filesystem every worker shares")
    worker = get_worker()
    attempt = uuid.uuid4().hex[:12]
    written = 0
    worker.log_event(topic, (job.name, attempt, 0))

    def report(n):
        nonlocal written
        written += n
        worker.log_event(topic, (job.name, attempt, written))

    with _KERNEL_LOCK:
        set_num_threads(1)  # parallelism comes from the cluster's workers, one shard each
        record, _, timing = shards.write_shard(job, report, attempt)
    return record, timing


class DaskExecutor:
    """Runs shard jobs as Dask tasks through ``client`` (a ``distributed.Client``).

    At most two tasks per worker thread are submitted at a time, so a plan of a million
    shards never sits in the scheduler at once. A worker lost mid-shard makes Dask rerun
    the task elsewhere; the rerun writes under a new temporary name and produces the same
    bytes, and the lost attempt's temporary file is removed here.
    """

    compiles_here = False  # each Dask worker compiles (or loads) the kernels on its own machine

    def __init__(self, client, note=None):
        self.client, self.note = client, note or (lambda line: None)

    def run(self, jobs, n_jobs, progress, done):
        distributed = _distributed()
        client = self.client
        try:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
        except (OSError, TimeoutError) as e:
            raise LongsynthError(f"Dask scheduler lost ({e})") from None
        link = dashboard(client)
        self.note(f"Dask: {client.scheduler.address}, {threads} worker thread(s), "
                  f"dashboard {link or '(none)'}")
        root = None
        topic = f"longsynth-progress-{uuid.uuid4().hex}"
        lock = threading.Lock()
        partial = {}  # shard name -> samples its latest attempt has written
        attempts = {}  # shard name -> attempt ids seen (their temporary files)
        recorded = set()  # shards in the manifest: late events of theirs count for nothing

        def on_event(event):
            _, (name, attempt, n) = event
            with lock:
                if name not in recorded:
                    attempts.setdefault(name, set()).add(attempt)
                    partial[name] = n  # a rerun starts again from 0

        client.subscribe_topic(topic, on_event)
        futures = {}
        reported = finished = 0
        window = max(4, 2 * threads)

        def submit(job):
            fut = client.submit(_dask_write, job, topic, key=f"longsynth-{job.name}-{uuid.uuid4().hex[:8]}",
                                pure=False)
            futures[fut] = job
            return fut

        try:
            jobs = iter(jobs)
            for job in jobs:
                root = job.root
                submit(job)
                if len(futures) >= window:
                    break
            pending = set(futures)
            while pending:
                try:
                    with client.as_current():  # wait() asks for the current client; ours is no default
                        result = distributed.wait(pending, timeout=POLL_S, return_when="FIRST_COMPLETED")
                    finished_now, pending = set(result.done), set(result.not_done)
                except TimeoutError:
                    finished_now = set()
                for fut in finished_now:
                    job = futures.pop(fut)
                    try:
                        record, timing = fut.result()
                    except distributed.client.FutureCancelledError:
                        raise LongsynthError(f"{job.name}: the Dask task was cancelled; rerun the same command "
                                             f"to resume") from None
                    except distributed.KilledWorker as e:
                        raise LongsynthError(f"{job.name}: Dask workers died writing it ({e}); rerun the same "
                                             f"command to resume") from None
                    done(job, record, timing)
                    with lock:
                        recorded.add(job.name)
                        partial.pop(job.name, None)
                        stale = attempts.pop(job.name, ())
                    _remove_tmp(job.root, job.name, stale)
                    finished += job.count
                    for nxt in jobs:
                        pending.add(submit(nxt))
                        break
                if progress is not None:
                    with lock:
                        now = finished + sum(partial.values())
                    if now > reported:
                        progress(now - reported)
                        reported = now
        finally:
            for fut in futures:
                fut.cancel()
            client.unsubscribe_topic(topic)
            if root is not None:
                _sweep_tmp(root)


def _remove_tmp(root, name, attempts):
    """Temporary files of a finished shard's other attempts (a lost worker's, say)."""
    for attempt in attempts:
        try:
            os.remove(os.path.join(root, f".{name}.{attempt}.tmp"))
        except FileNotFoundError:
            pass


def _sweep_tmp(root):
    """Every shard temporary file left in ``root`` once the run is over: the attempts whose
    start never reached this process (a worker killed at once). The lock is still held, so
    nothing of a later run can be among them."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if TMP_RE.match(name):
            try:
                os.remove(os.path.join(root, name))
            except FileNotFoundError:
                pass
