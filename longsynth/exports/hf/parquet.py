"""Writing the Parquet files of an hf export: every file on a thread of this process, or on
a pool of spawned processes (``workers`` > 1), with progress and a clean stop."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from longsynth import values
from longsynth.exports.hf.arrow import _batch, _parquet_options, features, row_lengths_of, with_lengths
from longsynth.store.read import Dataset


def _write_file(dataset, f, path, feats, schema, options, group, pool, done, stop):
    """Samples f.start..f.stop-1 of one split as the Parquet file ``path``, in row groups of
    ``group`` rows (blocks end at shard boundaries; rows are regrouped). Returns the
    file's Arrow bytes. ``done(n)`` counts rows; ``stop`` (an Event) ends it early when
    another file failed."""
    sp = Dataset(dataset.root, dataset.manifest)[f.split]  # its own HDF5 handles
    lengths = row_lengths_of(dataset.task, dataset.config, sp.specs)  # the derived LENGTH column, or None
    nbytes, buffered, rows = 0, [], 0
    try:
        with pq.ParquetWriter(path, schema, **options) as writer:
            for first, block in sp.iter_blocks([k for k in feats if k in sp.specs], chunk=group, start=f.start,
                                               stop=f.stop):
                if stop.is_set():
                    return nbytes
                values.check(sp.specs, block, f"{f.split}[{first}..]", dataset.root)
                batch = _batch(feats, schema, with_lengths(block, lengths), pool)
                nbytes += batch.nbytes
                buffered.append(batch)
                rows += batch.num_rows
                if rows >= group:
                    table = pa.Table.from_batches(buffered, schema=schema)
                    whole = rows - rows % group
                    writer.write_table(table.slice(0, whole), row_group_size=group)
                    buffered = table.slice(whole).to_batches() if rows > whole else []
                    rows -= whole
                done(batch.num_rows)
            if rows:
                writer.write_table(pa.Table.from_batches(buffered, schema=schema), row_group_size=group)
    finally:
        sp.close()
    return nbytes


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait until the block ends (Unix; elsewhere a no-op): the
    KeyboardInterrupt they raise then lands between two statements of ours, not inside a
    thread pool's internal lock, which it would leave broken."""
    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _write_files(dataset, files, paths, feats, schema, options, group, progress, workers):
    """Every file on its own thread (Parquet encoding and zlib release the GIL), or, with
    ``workers`` > 1, on a pool of that many processes (reading, Arrow conversion and the
    Python between them hold the GIL). Progress is reported from this thread only, as the
    writers count rows. Which process writes a file changes nothing in it."""
    if workers > 1 and len(files) > 1:
        return _write_files_pool(dataset, files, paths, group, progress, workers)
    from concurrent.futures import FIRST_EXCEPTION, wait

    lock, counted, stop = threading.Lock(), [0], threading.Event()

    def done(n):
        with lock:
            counted[0] += n

    cores = os.cpu_count() or 1
    with ThreadPoolExecutor(cores) as pool, ThreadPoolExecutor(max(1, min(cores, len(files)))) as writers:
        with _signals_held():  # Ctrl-C / SIGTERM inside the executor's locks would break them
            futures = {writers.submit(_write_file, dataset, f, paths[f.rel], feats, schema, options, group, pool,
                                      done, stop): f for f in files}
        pending, reported = set(futures), 0
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.25, return_when=FIRST_EXCEPTION)
                for fut in finished:
                    fut.result()  # the first failure stops the others and is raised here
                if progress is not None:
                    with lock:
                        now = counted[0]
                    progress(now - reported)
                    reported = now
        except BaseException:
            stop.set()
            for fut in pending:
                fut.cancel()
            raise
    return {f.rel: fut.result() for fut, f in futures.items()}


_COUNTER = None  # in a pool worker: the parent's shared count of rows written
_STOP = None  # in a pool worker: set by the parent when a file failed


def _pool_init(counter, stop, parent):
    from longsynth.store.pool import die_with_parent

    global _COUNTER, _STOP
    _COUNTER, _STOP = counter, stop
    die_with_parent(parent)


def _pool_count(n):
    with _COUNTER.get_lock():
        _COUNTER.value += n


def _pool_write_file(root, manifest, f, path, group, threads):
    """_write_file in a pool worker, on the dataset's own handles and features."""
    ds = Dataset(root, manifest)
    try:
        feats = features(ds.task, ds.task.keys(ds.config), ds.config)
        schema = feats.arrow_schema
        with ThreadPoolExecutor(threads) as pool:
            return _write_file(ds, f, path, feats, schema, _parquet_options(schema), group, pool, _pool_count, _STOP)
    finally:
        ds.close()


def _write_files_pool(dataset, files, paths, group, progress, workers):
    """The files on ``workers`` spawned processes (as ``gen``'s pool: fork is unsafe once
    Numba or Arrow run threads in the parent), each with its share of the cores for PNGs."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

    from longsynth.store.pool import SpawnableMain, stop_workers

    ctx = mp.get_context("spawn")
    counter, stop = ctx.Value("q", 0), ctx.Event()
    threads = max(1, (os.cpu_count() or 1) // workers)
    seen = 0
    with SpawnableMain(), ProcessPoolExecutor(workers, mp_context=ctx, initializer=_pool_init,
                                              initargs=(counter, stop, os.getpid())) as writers:
        with _signals_held():
            futures = {writers.submit(_pool_write_file, dataset.root, dataset.manifest, f, paths[f.rel], group,
                                      threads): f for f in files}
        pending = set(futures)
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.25, return_when=FIRST_EXCEPTION)
                for fut in finished:
                    fut.result()
                if progress is not None:
                    now = counter.value
                    progress(now - seen)
                    seen = now
        except BaseException as e:
            stop.set()
            for fut in pending:
                fut.cancel()
            if isinstance(e, KeyboardInterrupt):
                stop_workers(writers)
            raise
    return {f.rel: fut.result() for fut, f in futures.items()}
