"""``generate``: plan a dataset, lock its directory, hand the missing shards to an
executor and record each finished shard in the manifest.

Which executor writes the shards (the local process pool, a Dask cluster) changes where
the work runs, never what is written: the manifest is kept here, by the one process that
holds the lock, from the records the executor hands back.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import os
import time

from longsynth import api, registry
from longsynth.api import check_seed
from longsynth.errors import DiskFullError, LongsynthError, os_reason
from longsynth.files import atomic_write_text
from longsynth.outdir import Folder
from longsynth.store.layout import CARD, COMPRESSIONS, DIGEST_KEY, MAX_COUNT, MAX_SHARDS, default_shard_size
from longsynth.store import schema, shards
from longsynth.store.manifest import (ShardJob, _free_bytes, _new_manifest, _our_bytes, _prepare_dir,
                                      _write_manifest, dataset_card, default_splits, estimate_bytes, human, plan,
                                      progress_of)
from longsynth import safe
from longsynth.store.pool import LocalPool
from longsynth.store.read import Dataset

# Seconds between rewrites of the manifest while shards finish: a rewrite per shard cost O(shards^2) (6,000
# shards of one sample: 181 s); a kill loses at most this much finished work, which the rerun writes again.
MANIFEST_EVERY_S = 1.0


def _split_digest(root, records):
    import h5py

    h = hashlib.sha256()
    for rec in records:
        with h5py.File(os.path.join(root, rec["file"]), "r") as f:
            h.update(f[DIGEST_KEY][()].tobytes())
    return h.hexdigest()


@dataclasses.dataclass
class Plan:
    """What ``generate`` would write: the resolved task config, split counts, shards, the
    estimated size and the free space where it goes (``dry_run``)."""

    root: str
    task: object
    config: object
    seed: int
    splits: dict  # split -> samples
    shards: dict  # split -> shards
    shard_size: int
    bytes: int  # estimated, uncompressed
    free: int  # free bytes there, counting longsynth files a rerun replaces
    empty: list  # splits that a default split of a small count leaves empty

    @property
    def total(self):
        return sum(self.splits.values())


def dry_run(root, task, params=None, *, seed=0, splits=None, num_samples=None, shard_size=None, compression="none",
            authors_stream=False):
    """The ``Plan`` of a ``generate`` call, checked as generate checks it; writes nothing. With
    ``authors_stream``, the authors' streams of the splits are opened (nothing drawn): a parameter
    their code cannot take, or a split whose draws keep more than the memory available now
    (``api.authors_streams``), is refused here."""
    params = dict(params or {})
    t = registry.get(task)
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    if compression not in COMPRESSIONS:
        raise LongsynthError(f"compression: must be one of {', '.join(COMPRESSIONS)}, got {compression!r}")
    defaulted = splits is None
    if splits is None:
        n = t.default_num_samples if num_samples is None else num_samples
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise LongsynthError(f"num_samples: must be an integer >= 1, got {n!r}")
        splits = default_splits(n, t.split_percent)
    if any(v < 0 for v in splits.values()) or sum(splits.values()) < 1:
        raise LongsynthError("splits: counts must be >= 0 and sum to at least 1")
    if any(v > MAX_COUNT for v in splits.values()):
        raise LongsynthError(f"splits: at most {MAX_COUNT:,} samples per split (indices are 62-bit)")
    if not authors_stream and t.own_rows_problem(cfg):
        raise LongsynthError(t.own_rows_problem(cfg))
    if authors_stream:
        if t.authors is None:
            raise LongsynthError(f"authors_stream: {t.name} has no authors' stream")
        # the shards advance one stream per split (api.authors_block): what must fit in memory is
        # what its draws keep across the split (mqar's keys and values of every row), never its rows
        api.authors_streams(t, cfg, seed, splits)
    if shard_size is None:
        shard_size = default_shard_size(t, cfg)
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise LongsynthError(f"shard_size: must be an integer >= 1, got {shard_size!r}")
    root = safe.check_out_path(root)
    need = estimate_bytes(t, cfg, splits, seed, shard_size)
    free = _free_bytes(root) + _our_bytes(root)
    if need <= free:  # one that cannot fit is refused for its size (generate): no --shard-size helps it
        _check_shard_count(splits, shard_size)
    empty = [s for s, c in splits.items() if c == 0] if defaulted else []
    return Plan(root, t, cfg, seed, dict(splits), {s: -(-c // shard_size) for s, c in splits.items()}, shard_size,
                need, free, empty)


def _shards(splits, size):
    return sum(-(-c // size) for c in splits.values())


def _check_shard_count(splits, shard_size):
    """At most MAX_SHARDS shards (docs/format.md, "Writing: size, lock, workers"): the manifest
    lists every shard, so it must stay far below the 64 MB every reader accepts. The line names the
    smallest shard size that fits."""
    n = _shards(splits, shard_size)
    if n <= MAX_SHARDS:
        return
    lo, hi = shard_size + 1, -(-sum(splits.values()) // max(1, MAX_SHARDS - len(splits)))
    while lo < hi:  # the smallest size that fits: shards only get fewer as they grow
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if _shards(splits, mid) > MAX_SHARDS else (lo, mid)
    each = f"{shard_size:,} sample{'s' if shard_size != 1 else ''}"
    raise LongsynthError(f"shard_size: {n:,} shards of {each}: at most {MAX_SHARDS:,} (the manifest lists every "
                         f"shard); raise --shard-size to at least {lo:,}")


def generate(root, task, params=None, *, seed=0, splits=None, num_samples=None, shard_size=None,
             compression="none", workers=None, overwrite=False, command="", progress=None, notify=None,
             client=None, authors_stream=False):
    """Write (or resume) a dataset of ``task`` in ``root``; returns the final manifest.

    ``progress(n)`` is called with the number of samples finished since the last call,
    ``progress(None, total=N, done=K)`` once first (K samples kept by a resumed run).
    ``notify(line)`` receives one-line notes: the expected size, a resumed run's count,
    workers capped, empty splits, the Dask dashboard. Identical output for
    any ``workers``, and with ``client``.

    ``client``: a ``distributed.Client``; each shard is then one Dask task on its cluster
    (longsynth.store.cluster) instead of a local process, and ``root`` must be on a
    filesystem every Dask worker sees under the same path. This process still holds the
    lock and keeps the manifest.

    ``authors_stream``: the samples are the authors' own data (``longsynth.authors_dataset``),
    written by this process one shard after another: each split the authors' stream of its
    count (the manifest records ``"stream": "authors"``), or, for a task whose authors draw
    every split from one generator (MAD), one stream continuing through train, val and test
    (``"stream": "authors-pipeline"``).

    Refused before anything is written: a dataset larger than the free disk space, and a
    directory another process is writing (LongsynthError).
    """
    asked = workers
    workers = (os.cpu_count() or 1) if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LongsynthError(f"workers: must be an integer >= 1, got {workers!r}")
    if client is not None and asked is not None:
        raise LongsynthError("workers: give workers or client, not both (the cluster's workers write the shards)")
    note = notify or (lambda line: None)
    authors_stream = bool(authors_stream)
    p = dry_run(root, task, params, seed=seed, splits=splits, num_samples=num_samples, shard_size=shard_size,
                compression=compression, authors_stream=authors_stream)  # the authors' refusals come before any write
    t, cfg, seed, splits, shard_size, root, total = p.task, p.config, p.seed, p.splits, p.shard_size, p.root, p.total
    if authors_stream:
        if client is not None:
            raise LongsynthError("authors_stream: the authors' stream is sequential; it is written here, not on Dask")
        if workers > 1:
            note("authors' stream: sequential, written by this process (--workers ignored)")
        workers, asked = 1, None
    if client is not None:
        from longsynth.store.cluster import DaskExecutor

        executor = DaskExecutor(client, note)
    else:
        executor = LocalPool(workers, asked, note)
    kind = "uncompressed, less with compression" if compression != "none" else "on disk"
    note(f"{t.name}: {total:,} samples ({', '.join(f'{s} {c:,}' for s, c in splits.items())}), "
         f"about {human(p.bytes)} {kind}; {human(p.free)} free")
    if p.bytes > p.free:  # compressed too, at the uncompressed size: HDF5's filters end a full disk in a crash
        raise LongsynthError(f"{root}: the dataset needs about {human(p.bytes)}"
                             f"{' before compression' if compression != 'none' else ''} "
                             f"but only {human(p.free)} is free there; lower --num-samples or choose another --out")
    if p.empty:
        note(f"{' and '.join(p.empty)} get 0 samples (2% of {total} rounds down); give --splits to choose the counts")
    fixed = t.fixed_draws(cfg, seed)
    cparams = dataclasses.asdict(cfg)
    stream = ("authors-pipeline" if t.authors_pipeline is not None else "authors") if authors_stream else "longsynth"
    manifest = _new_manifest(t, cfg, seed, splits, shard_size, compression, command, fixed, stream)
    # the readers' own check (store/schema.py), before anything is written: a value they would refuse (a 202-character
    # --operators) is refused here, not after the shards are made
    schema.parse_manifest(json.loads(json.dumps(manifest)), f"{root}: the manifest to write")
    with Folder(root).hold():  # made when missing, locked for the whole run, removed again if refused while empty
        return _generate_locked(root, t, cfg, cparams, seed, splits, shard_size, compression, executor,
                                overwrite, manifest, progress, note)


class _RowsExecutor:
    """Writes each shard of rows read from files (``write_rows``), here, one after another."""

    compiles_here = False

    def __init__(self, read):
        self.read = read

    def run(self, jobs, n_jobs, progress, done):
        for job in jobs:
            record, _, timing = shards.write_shard(job, progress, rows=self.read(job.split, job.start, job.count))
            done(job, record, timing)


def write_rows(root, task, params, splits, source, read, *, shard_size=None, compression="none", command="",
               overwrite=False, progress=None, notify=None):
    """Write (or resume) a dataset of ``task`` whose rows come from files, not from a seed (``import-hf``,
    longsynth.hubimport): ``read(split, start, count)`` returns rows start..start+count-1 of a split as
    {key: array}, asked in order; ``source`` (the files, their rows and SHA-256) goes into the manifest,
    whose ``"stream"`` is ``"imported"``. The same books as ``generate``: shards, digests, card, resume."""
    note = notify or (lambda line: None)
    p = dry_run(root, task, params, seed=0, splits=splits, shard_size=shard_size, compression=compression)
    t, cfg, splits, shard_size, root = p.task, p.config, p.splits, p.shard_size, p.root
    if t.law is None:
        raise LongsynthError(f"{t.name}: has no law to check imported rows by (Task.law)")
    if p.bytes > p.free:
        raise LongsynthError(f"{root}: the dataset needs about {human(p.bytes)} but only {human(p.free)} is free there")
    note(f"{t.name} {os.path.basename(root)}: {p.total:,} rows ({', '.join(f'{s} {c:,}' for s, c in splits.items())}), "
         f"about {human(p.bytes)} on disk")
    manifest = _new_manifest(t, cfg, 0, splits, shard_size, compression, command, {}, "imported", source)
    schema.parse_manifest(json.loads(json.dumps(manifest)), f"{root}: the manifest to write")
    with Folder(root).hold():
        return _generate_locked(root, t, cfg, dataclasses.asdict(cfg), 0, splits, shard_size, compression,
                                _RowsExecutor(read), overwrite, manifest, progress, note)


def _warm_kernels(job, note):
    """Make one sample here first: on first use Numba compiles the task's kernels (a minute or
    more; later runs load them from its cache), so the progress bar's rate and estimate start
    after it, and a note says so when it takes long (longsynth.progress.compiling_note)."""
    from longsynth.progress import compiling_note

    with compiling_note(note):
        try:
            shards.warm(job)
        except Exception:  # noqa: BLE001 - the same failure comes again where the shards are written, in context
            pass


def _generate_locked(root, t, cfg, cparams, seed, splits, shard_size, compression, executor, overwrite,
                     manifest, progress, note):
    keep = _prepare_dir(root, manifest, overwrite)
    for split, rec in keep.values():
        manifest["splits"][split]["shards"].append(rec)
    try:
        _write_manifest(root, manifest)
        jobs = (j for j in plan(root, t.name, cparams, seed, splits, shard_size, compression, manifest["generation"],
                                manifest.get("stream", "longsynth"))
                if j.name not in keep)
        n_jobs = sum(-(-n // shard_size) for n in splits.values()) - len(keep)
        total = sum(splits.values())
        kept = sum(rec["count"] for _, rec in keep.values())
        if kept == total:
            note(f"already complete: {total:,} of {total:,} samples written; nothing to generate")
        elif kept:
            note(f"resuming: {kept:,} of {total:,} samples already written")
        if kept < total and manifest.get("stream", "longsynth") == "longsynth" and executor.compiles_here:
            first = next(s for s, n in splits.items() if n)
            job = ShardJob(root, t.name, cparams, seed, first, 0, 0, 1, compression, manifest["generation"])
            _warm_kernels(job, note)
            executor.estimate(job, total - kept)  # a small job is written here: a pool takes longer to start
        if progress is not None:  # the bar and its rate start after the kernels are compiled
            progress(None, total=total, done=kept)
        timings, written = [], [time.monotonic()]

        def done(job, record, timing):
            manifest["splits"][job.split]["shards"].append(record)
            timings.append(timing)
            if time.monotonic() - written[0] >= MANIFEST_EVERY_S:
                _write_manifest(root, manifest)
                written[0] = time.monotonic()

        try:
            executor.run(jobs, n_jobs, progress, done)
        except BaseException:  # Ctrl-C, a failed shard, a full disk: record the shards finished so far
            with contextlib.suppress(OSError):
                _write_manifest(root, manifest)
            raise
        for split, info in manifest["splits"].items():
            info["shards"].sort(key=lambda r: r["start"])  # kept shards were listed first: the index order
            info["digest"] = _split_digest(root, info["shards"])
        manifest["complete"] = True
        if t.audit is not None:
            manifest["audit"] = t.audit(Dataset(root, manifest))
        atomic_write_text(os.path.join(root, CARD), dataset_card(t, cfg, manifest))
        _write_manifest(root, manifest)
    except DiskFullError:
        raise _disk_full(root, t, cfg, seed, splits, shard_size, manifest) from None
    except OSError as e:
        if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            raise _disk_full(root, t, cfg, seed, splits, shard_size, manifest) from None
        raise LongsynthError(f"{root}: write failed ({os_reason(e)}); rerun the same command to resume") from None
    manifest["timings"] = timings
    return manifest


def _disk_full(root, t, cfg, seed, splits, shard_size, manifest):
    """The one line for a disk that filled up during ``gen``: the finished shards are kept
    (the manifest lists them), the rest needs about this much room (the uncompressed
    estimate of the samples not yet written), and the same command resumes."""
    written, total = progress_of(manifest)
    left = {s: n - sum(r["count"] for r in manifest["splits"][s]["shards"]) for s, n in splits.items()}
    need = estimate_bytes(t, cfg, {s: n for s, n in left.items() if n}, seed, shard_size) if total > written else 0
    return LongsynthError(f"{root}: the disk is full; {written:,} of {total:,} samples are written and kept, the rest "
                          f"needs about {human(need)} more (uncompressed; {human(_free_bytes(root))} free now): free "
                          f"space and rerun the same command to resume")
