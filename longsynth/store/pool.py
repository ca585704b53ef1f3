"""The local executor: shard jobs run in this process or in a pool of spawned processes.

An executor takes shard jobs and hands back, for each, the record ``write_shard`` made;
``LocalPool`` here and ``DaskExecutor`` (longsynth.store.cluster) are interchangeable for
``generate``, which keeps the manifest. Pool workers die with their parent, so a killed
`gen` leaves no process writing into a directory it no longer locks.
"""
from __future__ import annotations

import errno
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from longsynth.errors import DiskFullError, LongsynthError, os_reason

from longsynth.store import shards


# A spawned worker needs one to two seconds to start (a fresh interpreter importing longsynth, h5py and Numba and
# loading the task's kernels): without --workers, a dataset that one process writes in less than this is written
# here, not by a pool (20 CumSum samples: 0.02 s, against 3.7 s for a pool of two)
SMALL_JOB_S = 1.0


class LocalPool:
    """Runs shard jobs on ``workers`` processes of this machine (in-process for one).

    ``asked`` is the --workers the user gave (None: all cores); it is capped by the cores
    and the shards left, and ``note`` says so when the cap bites. Without it, a job that
    ``estimate`` finds shorter than SMALL_JOB_S in this process is written here.
    """

    compiles_here = True  # the shards' kernels run on this machine: generate compiles them first, once

    def __init__(self, workers, asked=None, note=None):
        self.workers, self.asked, self.note = workers, asked, note or (lambda line: None)
        self.small = False

    def estimate(self, job, samples):
        """Time one sample of ``job`` (its kernels already compiled or loaded: generate warmed them) and
        decide whether ``samples`` of them are a small job for this process; only without --workers."""
        if self.asked is not None or self.workers == 1:
            return
        t0 = time.perf_counter()
        try:
            shards.warm(job)
        except Exception:  # noqa: BLE001 - the same failure comes again where the shards are written, in context
            return
        self.small = (time.perf_counter() - t0) * samples < SMALL_JOB_S  # one sample alone costs more than one of many

    def run(self, jobs, n_jobs, progress, done):
        """Write every job of the iterator ``jobs`` (``n_jobs`` of them); ``done(job, record,
        timing)`` is called here, in the caller's thread, as each shard is renamed into place,
        and ``progress(n)`` with samples finished."""
        cores = os.cpu_count() or 1
        workers = 1 if self.small else max(1, min(self.workers, cores, n_jobs))
        if self.asked is not None and workers < self.workers:
            self.note(f"--workers {self.workers} capped to {workers} ({cores} cores, {n_jobs} shards to write)")
        if workers > 1 and n_jobs > 1:
            return _run_pool(jobs, workers, progress, done)
        from numba import get_num_threads, set_num_threads

        threads = get_num_threads()
        set_num_threads(1 if workers == 1 else min(workers, threads))
        try:
            for job in jobs:
                record, _, timing = shards.write_shard(job, progress)
                done(job, record, timing)
        finally:
            set_num_threads(threads)


_PROGRESS = None  # shared counter of generated samples, set in pool workers


def _count(n):
    with _PROGRESS.get_lock():
        _PROGRESS.value += n


def _pool_write(job):
    """write_shard in a pool worker, counting samples into the parent's shared counter. An
    OSError goes back as one LongsynthError line at once: HDF5 may crash the worker as its
    objects are freed after a failed write (disk full under compression), and the parent
    should learn the reason before it learns of the crash."""
    try:
        return shards.write_shard(job, _count)
    except OSError as e:
        if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            raise DiskFullError(f"{job.root}: the disk is full (writing {job.name})") from None
        raise LongsynthError(f"{job.root}: write failed ({os_reason(e)}); rerun the same command to resume") from None


def _worker_init(counter, parent):
    global _PROGRESS
    _PROGRESS = counter
    die_with_parent(parent)
    # a worker's failure reaches the parent as an exception; the "Exception ignored"
    # tracebacks h5py's finalisers print after a failed write (disk full) would only
    # bury the parent's one-line message
    sys.unraisablehook = lambda unraisable: None
    if not os.environ.get("LONGSYNTH_DEBUG"):  # nor h5py's, which it writes on stderr as a worker dies
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    from numba import set_num_threads

    set_num_threads(1)


def die_with_parent(parent):
    """Exit when the process ``parent`` dies (a kill -9 of `gen` must not leave workers).

    Linux: the kernel sends SIGKILL on the parent's death (PR_SET_PDEATHSIG). Everywhere,
    and for a parent that died before that was set: a thread polls the parent PID.
    """
    import signal
    import threading

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="longsynth-parent-watch", daemon=True).start()


class SpawnableMain:
    """Hide ``__main__.__file__`` while workers spawn when it names no real file (stdin).

    Spawned workers re-import the parent's main script by path; ``python - <<EOF`` has
    none, and the workers would die. Workers never need the parent's main module.
    """

    def __enter__(self):
        main = sys.modules.get("__main__")
        path = getattr(main, "__file__", None)
        self.hidden = path is not None and not os.path.isfile(path)
        if self.hidden:
            self.main, self.path = main, path
            del main.__file__

    def __exit__(self, *exc):
        if self.hidden:
            self.main.__file__ = self.path


def _died(jobs):
    """LongsynthError for a pool worker that died (HDF5 can crash, rather than fail, as a
    write that filled the disk is cleaned up), after removing the temporary files of the
    shards that were being written."""
    import shutil

    jobs = list(jobs)
    root = jobs[0].root if jobs else "."
    full = shutil.disk_usage(root).free < (1 << 20)  # before its temporary files free their space
    _remove_tmp(jobs)
    why = "No space left on device" if full else f"a worker process died; {shutil.disk_usage(root).free:,} bytes free"
    return LongsynthError(f"{root}: write failed ({why}); rerun the same command to resume")


def _run_pool(jobs, workers, progress, done):
    """Write ``jobs`` (an iterator) on ``workers`` processes, at most 2 per worker in flight."""
    import itertools
    import multiprocessing as mp

    # spawn, not fork: numba's OpenMP threading layer is not fork-safe once the parent
    # has run a parallel kernel (as tests and notebooks do).
    ctx = mp.get_context("spawn")
    counter = ctx.Value("q", 0)
    seen = 0
    jobs = iter(jobs)
    futures = {}
    try:
        with SpawnableMain(), ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                                                   initargs=(counter, os.getpid())) as pool:
            futures.update({pool.submit(_pool_write, job): job for job in itertools.islice(jobs, 2 * workers)})
            pending = set(futures)
            try:
                while pending:
                    finished, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        try:
                            record, _, timing = fut.result()
                        except BrokenProcessPool:
                            raise _died(futures.values()) from None
                        done(futures.pop(fut), record, timing)
                        for job in itertools.islice(jobs, 1):
                            nxt = pool.submit(_pool_write, job)
                            futures[nxt] = job
                            pending.add(nxt)
                    if progress is not None:
                        now = counter.value
                        progress(now - seen)
                        seen = now
            except BaseException as e:
                for fut in pending:
                    fut.cancel()
                if isinstance(e, KeyboardInterrupt):  # Ctrl-C reaches the workers too; SIGTERM only us
                    stop_workers(pool)
                raise
    except BaseException:
        # the pool is down: temporary files of the shards it did not finish (a worker that
        # crashed, or was stopped, before it could remove its own) go too
        _remove_tmp(futures.values())
        raise


def stop_workers(pool):
    """Terminate the pool's workers now rather than let them finish their shards (what
    Ctrl-C does to them; SIGTERM, handled as Ctrl-C, reaches only this process)."""
    stop = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if stop is not None:
        stop()
        return
    for p in list((getattr(pool, "_processes", None) or {}).values()):
        p.terminate()


def _remove_tmp(jobs):
    for job in jobs:
        tmp = os.path.join(job.root, f".{job.name}.tmp")
        if os.path.lexists(tmp):
            os.remove(tmp)
