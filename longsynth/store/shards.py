"""Writing one shard: a ShardJob in, the shard's manifest record out.

This is the unit every executor runs (the local pool in its processes, Dask on its
workers); it depends only on the job, so any process that sees ``job.root`` can run it.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import time

import numpy as np

from longsynth import checksum, registry, safe
from longsynth.api import authors_block
from longsynth.errors import DiskFullError, LongsynthError
from longsynth.files import file_sha256
from longsynth.rng import split_code
from longsynth.store.layout import (LOCK, BLOCK_BYTES, CHECK_KEY, DIGEST_KEY, FORMAT, FORMAT_VERSION,
                                    block_digests, ragged_chunks, sample_bytes, sample_chunks)
from longsynth.task import Ragged

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _h5_options(compression):
    if compression == "gzip":
        return {"compression": "gzip", "compression_opts": 4, "shuffle": True}
    if compression == "lzf":
        return {"compression": "lzf", "shuffle": True}
    return {}


def _chunks(spec, job):
    """HDF5 layout of a fixed-shape key: sample i must be readable without its neighbours.

    Uncompressed: contiguous storage, where reading sample i reads exactly its bytes and
    writing runs about 2.5x faster than with one small chunk per sample. Compressed
    (filters need chunks): one chunk per sample, scalars in chunks of up to 64K samples.
    """
    if job.compression == "none":
        return None
    return sample_chunks(spec.shape, job.count)


def _under_live_lock(root):
    """Whether a process holds the gen lock of ``root`` (an flock on its .lock). An executor
    whose workers may outlive the process that planned their jobs (Dask workers, when a
    `gen --dask` is killed) renames a shard into the folder only then."""
    import fcntl

    try:
        fd = safe.open_regular(os.path.join(root, LOCK))
    except (OSError, LongsynthError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True  # held, exclusively, by the writer
    finally:
        os.close(fd)  # releases the shared lock if it was granted
    return False


class _Timers:
    """Seconds per step of writing a shard, the timing ``write_shard`` returns: generating
    samples, writing them (HDF5, file close included), hashing (per-sample digests and
    checksums, the file's SHA-256) and fsync."""

    def __init__(self):
        self.seconds = {"generate_s": 0.0, "write_s": 0.0, "hash_s": 0.0, "sync_s": 0.0}

    @contextlib.contextmanager
    def __call__(self, step):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[step] += time.perf_counter() - t


def _write_header(f, job, task):
    """The shard's identity as attributes (docs/format.md, "Shards").

    Strings as fixed-length bytes: stored in the attribute itself, so a reader checks them
    without touching HDF5's global heap, which a damaged file can send into an endless loop.
    """
    f.attrs["format"] = np.bytes_(FORMAT)
    f.attrs["format_version"] = FORMAT_VERSION
    f.attrs["task"] = np.bytes_(job.task)
    f.attrs["task_revision"] = task.revision
    if job.generation is not None:
        f.attrs["generation"] = np.bytes_(job.generation)
    f.attrs["params"] = np.bytes_(json.dumps(job.params, sort_keys=True))
    f.attrs["seed"] = job.seed
    f.attrs["split"] = np.bytes_(job.split)
    f.attrs["start"] = job.start
    f.attrs["count"] = job.count


def _create_keys(f, specs, job):
    """One HDF5 dataset per fixed-shape key, a group of ``values`` and ``offsets`` per ragged
    key; returns {key: dataset or (values, offsets)}."""
    opts = _h5_options(job.compression)
    dsets = {}
    for k, spec in specs.items():
        shape = tuple(spec.shape)
        if spec.ragged:
            g = f.create_group(k, track_order=False)
            dsets[k] = (
                g.create_dataset("values", shape=(0,) + shape, maxshape=(None,) + shape, dtype=spec.dtype,
                                 chunks=ragged_chunks(shape), track_times=False, **opts),
                g.create_dataset("offsets", shape=(job.count + 1,), dtype="int64", track_times=False),
            )
            dsets[k][1][0] = 0
        else:
            dsets[k] = f.create_dataset(k, shape=(job.count,) + shape, dtype=spec.dtype, chunks=_chunks(spec, job),
                                        track_times=False, **opts)
    return dsets


def _block_checks(data, n, order, digests, checks):
    """Per-sample SHA-256 digests and per-key checksums of a generated block of n samples."""
    digests[:] = block_digests(data, n)
    for c, k in enumerate(order):
        col = data[k]
        if isinstance(col, Ragged):
            checksum.fill_ragged(col.values, col.offsets, n, checks, c)
        else:
            checksum.fill_rows(col, n, checks, c)


def _write_block(dsets, data, lo, n):
    """A generated block of n samples into the shard's datasets at sample lo."""
    for k, col in data.items():
        if isinstance(col, Ragged):
            values, offsets = dsets[k]
            base = offsets[lo]
            values.resize(base + col.values.shape[0], axis=0)
            values[base:] = col.values
            offsets[lo + 1 : lo + n + 1] = base + col.offsets[1:]
        else:
            dsets[k][lo : lo + n] = col


def _write_samples(dsets, job, task, cfg, timers, progress, rows=None):
    """Generate the job's samples block by block into ``dsets`` (or take them from ``rows``, {key:
    array [count, ...]}: an imported dataset's); returns (digests uint8 [count, 32], checks uint64
    [count, keys in sorted order, 2])."""
    code = split_code(job.split)
    fixed = task.fixed_draws(cfg, job.seed)
    order = sorted(task.keys(cfg))
    block = max(1, min(job.count, BLOCK_BYTES // sample_bytes(task, cfg)))
    digests = np.empty((job.count, 32), dtype=np.uint8)
    checks = np.zeros((job.count, len(order), 2), dtype=np.uint64)
    buffers = task.allocate(cfg, block) if task.fill is not None and rows is None else None  # one per shard
    for lo in range(0, job.count, block):
        n = min(block, job.count - lo)
        with timers("generate_s"):
            if rows is not None:
                data = {k: v[lo : lo + n] for k, v in rows.items()}
            elif job.authors_counts is None:
                data = task.generate(cfg, job.seed, code, job.start + lo, n, fixed, buffers)
            else:
                data = authors_block(task, cfg, job.seed, job.split, dict(job.authors_counts), job.start + lo, n,
                                     job.stream)
        with timers("hash_s"):
            _block_checks(data, n, order, digests[lo : lo + n], checks[lo : lo + n])
        with timers("write_s"):
            _write_block(dsets, data, lo, n)
        if progress is not None:
            progress(n)
    return digests, checks


def _build_image(job, task, cfg, timers, progress, rows=None):
    """The shard's HDF5 file built in memory (the core driver, no backing file); returns
    (its bytes, digests). HDF5 never writes to the disk here: a disk that fills up is met
    by our own write of these bytes (``_write_image``) as an OSError, never inside HDF5's
    filters, where it ends the process with a native crash."""
    import h5py

    with h5py.File(f"{job.name}.image", "w", driver="core", backing_store=False, libver="earliest",
                   track_order=False) as f:
        _write_header(f, job, task)
        dsets = _create_keys(f, task.keys(cfg), job)
        digests, checks = _write_samples(dsets, job, task, cfg, timers, progress, rows)
        t = time.perf_counter()  # the index, then the file's image (HDF5 flushes its caches into it)
        f.create_dataset(DIGEST_KEY, data=digests, track_times=False)
        f.create_dataset(CHECK_KEY, data=checks, track_times=False)
        f.flush()
        image = f.id.get_file_image()
    timers.seconds["write_s"] += time.perf_counter() - t
    return image, digests


def _write_image(fd, image):
    """All of ``image`` to ``fd``; an OSError (ENOSPC, EDQUOT, EIO) passes through."""
    view = memoryview(image)
    while view:
        n = os.write(fd, view[: 64 << 20])
        view = view[n:]


def warm(job):
    """Build ``job``'s shard in memory and drop it: every kernel a shard needs (the task's, the
    checksums') is compiled, or loaded from Numba's cache, in this process; nothing is written."""
    task = registry.get(job.task)
    _build_image(job, task, task.make_config(**job.params), _Timers(), None)


def write_shard(job, progress=None, attempt=None, rows=None):
    """Generate and write one shard atomically; returns its manifest record and timings. ``rows``:
    the shard's samples as {key: array [count, ...]} (an imported dataset's), not generated.

    ``progress(n)`` is called after each block of n samples. The shard is built in memory
    (``_build_image``) and written to a temporary file and renamed: ``.{name}.tmp``, or
    ``.{name}.{attempt}.tmp`` when an executor may run two attempts of one shard at once
    (Dask reruns a task whose worker it lost, and that worker may still be writing); both
    attempts then write whole files of the same bytes and the later rename replaces the
    earlier with an identical file. A full disk is a DiskFullError naming the shard's size.
    """
    task = registry.get(job.task)
    cfg = task.make_config(**job.params)
    final = os.path.join(job.root, job.name)
    tmp = os.path.join(job.root, f".{job.name}.tmp" if attempt is None else f".{job.name}.{attempt}.tmp")
    timers = _Timers()
    image, digests = _build_image(job, task, cfg, timers, progress, rows)
    try:
        if os.path.lexists(tmp):  # left by a killed attempt; O_EXCL below never follows a link
            os.remove(tmp)
        fd = os.open(tmp, _CREATE, 0o644)
        try:
            with timers("write_s"):
                _write_image(fd, image)
            with timers("sync_s"):
                os.fsync(fd)
        except OSError as e:
            if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
                raise DiskFullError(f"{job.root}: the disk is full (writing {job.name}, {len(image):,} bytes)") \
                    from None
            raise
        finally:
            os.close(fd)
        with timers("hash_s"):
            sha = file_sha256(tmp)
        if attempt is not None and not _under_live_lock(job.root):
            raise LongsynthError(f"{job.root}: no gen holds the folder's lock any more (its process died); "
                                 f"{job.name} not written")
        os.replace(tmp, final)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
    record = {"file": job.name, "start": job.start, "count": job.count, "bytes": len(image), "sha256": sha}
    return record, digests, timers.seconds
