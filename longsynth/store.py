"""Sharded HDF5 datasets: crash-safe writing, resuming, reading and verification.

Layout of a dataset directory (see docs/format.md):
    manifest.json          configuration, versions, per-split counts, shards, digests
    README.md              dataset card
    {split}-{k:05d}.h5     shard k of a split: samples start..start+count-1

Every shard is written to ``.{name}.tmp``, flushed, fsynced, hashed and renamed; the
manifest is rewritten atomically (tmp + rename) after each finished shard. Rerunning
the same ``generate`` keeps the shards whose SHA-256 matches the manifest and redoes the
rest, so a killed run finishes byte-identical to an uninterrupted one.
"""
from __future__ import annotations

import bisect
import builtins
import dataclasses
import hashlib
import json
import os
import re
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from longsynth import checksum, registry
from longsynth.api import check_seed
from longsynth.errors import DamagedDataError, LongsynthError, MissingKeyError  # noqa: F401 (re-exported)
from longsynth.rng import SPLITS, split_code
from longsynth.task import Ragged

FORMAT = "longsynth-shards"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CARD = "README.md"
DIGEST_KEY = "_digest"
CHECK_KEY = "_check"  # uint64 [count, keys in sorted order, 2]: longsynth.checksum.sum64 of each value
SHARD_RE = re.compile(r"^(train|val|test)-\d{5}\.h5$")
LOCK = ".lock"  # held (flock) by the process writing the directory; holds its PID
OURS_RE = re.compile(r"^(\.?(train|val|test)-\d{5}\.h5(\.tmp)?|\.?manifest\.json(\.tmp)?|\.?README\.md(\.tmp)?|\.lock)$")
COMPRESSIONS = ("none", "lzf", "gzip")
SHARD_BYTES = 128 << 20  # default shard size aims at this many bytes
RAGGED_ROWS = 8192  # assumed rows of a ragged key when sizing shards and chunks
BLOCK_BYTES = 8 << 20  # samples generated per call to the kernel
MAX_COUNT = 1 << 62  # samples per split: indices stay well inside int64


# ---------------------------------------------------------------- digests and sizing


def sample_digest(sample):
    """SHA-256 of one sample: keys in sorted order, each with dtype, shape and bytes.

    A 0-d value (scalar extra) is hashed as shape (1,), as np.ascontiguousarray gives it.
    """
    h = hashlib.sha256()
    for k in sorted(sample):
        a = np.ascontiguousarray(sample[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.data if a.size else b"")
    return h.digest()


def block_digests(block, count):
    """Per-sample digests of a generated block, uint8 [count, 32]; equal to sample_digest's."""
    cols = []
    for k in sorted(block):
        col = block[k]
        if isinstance(col, Ragged):
            values = np.ascontiguousarray(col.values)
            cols.append((k, None, values, col.offsets, f"|{values.dtype.str}|"))
        else:
            col = np.ascontiguousarray(col)
            shape = col.shape[1:] or (1,)  # scalars hash as shape (1,), like sample_digest
            cols.append((k, f"{k}|{col.dtype.str}|{shape}|".encode(), col, None, None))
    out = np.empty((count, 32), dtype=np.uint8)
    for i in range(count):
        h = hashlib.sha256()
        for k, header, col, offsets, dtype in cols:
            if offsets is None:
                h.update(header)
                h.update(col[i : i + 1])
            else:
                v = col[offsets[i] : offsets[i + 1]]
                h.update(f"{k}{dtype}{v.shape}|".encode())
                if v.size:
                    h.update(v)
        out[i] = np.frombuffer(h.digest(), dtype=np.uint8)
    return out


def sample_bytes(task, cfg):
    total = 0
    for spec in task.keys(cfg).values():
        n = int(np.prod(spec.shape, dtype=np.int64)) * np.dtype(spec.dtype).itemsize
        total += n * (RAGGED_ROWS if spec.ragged else 1)
    return max(total, 1)


def default_shard_size(task, cfg):
    return int(max(1, min(100_000, SHARD_BYTES // sample_bytes(task, cfg))))


def file_sha256(path):
    h = hashlib.sha256()
    with builtins.open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------- atomic files


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path, text):
    d, name = os.path.split(path)
    tmp = os.path.join(d, f".{name}.tmp")
    with builtins.open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(d or ".")


class PendingFiles:
    """Files written under temporary names and renamed to their final names together.

        with PendingFiles() as pending:
            with open(pending.path("out/a.tsv"), "wb") as f: ...
            with open(pending.path("out/b.tsv"), "wb") as f: ...

    On success every file is fsynced and renamed; on any failure the temporary files are
    removed, so no final name ever holds a partial file.
    """

    def __init__(self):
        self.items = []

    def path(self, final):
        d, name = os.path.split(final)
        tmp = os.path.join(d, f".{name}.tmp")
        self.items.append((tmp, final))
        return tmp

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            for tmp, final in self.items:
                with builtins.open(tmp, "rb+") as f:
                    os.fsync(f.fileno())
            for tmp, final in self.items:
                os.replace(tmp, final)
            for d in {os.path.dirname(final) for _, final in self.items}:
                _fsync_dir(d or ".")
            return False
        for tmp, _ in self.items:
            try:
                os.remove(tmp)
            except FileNotFoundError:
                pass
        return False


# ---------------------------------------------------------------- plan


@dataclass(frozen=True)
class ShardJob:
    root: str
    task: str
    params: dict
    seed: int
    split: str
    shard: int
    start: int
    count: int
    compression: str

    @property
    def name(self):
        return f"{self.split}-{self.shard:05d}.h5"


def parse_splits(text, num_samples=None):
    """``train=N,val=N,test=N`` (any subset) -> ordered dict; ValueError if malformed."""
    counts = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or name not in SPLITS or not value.strip().isdigit():
            raise LongsynthError(f"splits: expected train=N,val=N,test=N with N >= 0, got {text!r}")
        if name in counts:
            raise LongsynthError(f"splits: {name} is given twice ({text})")
        counts[name] = int(value)
    return {s: counts[s] for s in SPLITS if s in counts}


def default_splits(num_samples):
    """96/2/2 of num_samples; val and test round down, train takes the rest."""
    val = test = num_samples * 2 // 100
    return {"train": num_samples - val - test, "val": val, "test": test}


def plan(root, task, params, seed, splits, shard_size, compression):
    """The shard jobs, lazily: nothing is allocated per shard before it is written."""
    for split, n in splits.items():
        for k, start in enumerate(range(0, n, shard_size)):
            count = min(shard_size, n - start)
            yield ShardJob(root, task, params, seed, split, k, start, count, compression)


def human(n):
    """Bytes as text: 512 B, 3.2 MB, 14.7 GB (powers of 1000, as `df -H`)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def estimate_bytes(task, cfg, splits, seed, shard_size):
    """Bytes the dataset will take on disk, uncompressed (within a few percent).

    Fixed-shape keys are exact; variable-length keys are sized from the first samples.
    Per sample: the keys, the 32-byte digest and the checksums; per shard about 16 kB of
    HDF5 metadata.
    """
    specs = task.keys(cfg)
    per = 32 + 16 * len(specs)
    ragged = [k for k, spec in specs.items() if spec.ragged]
    for k, spec in specs.items():
        if not spec.ragged:
            per += int(np.prod(spec.shape, dtype=np.int64)) * np.dtype(spec.dtype).itemsize
    if ragged:
        m = int(min(16, sum(splits.values())))
        block = task.generate(cfg, seed, split_code("train"), 0, m, task.fixed_draws(cfg, seed))
        per += sum(block[k].values.nbytes + 8 * m for k in ragged) / m
    shards = sum(-(-n // shard_size) for n in splits.values())
    return int(sum(splits.values()) * per + shards * 16_000 + 100_000)


def _free_bytes(root):
    """Free bytes on the disk that holds root (or its nearest existing parent)."""
    import shutil

    d = root
    while not os.path.exists(d):
        d = os.path.dirname(d)
    return shutil.disk_usage(d).free


def _our_bytes(root):
    """Bytes of longsynth files already in root (replaced or kept by this run)."""
    if not os.path.isdir(root):
        return 0
    return sum(os.path.getsize(os.path.join(root, e)) for e in os.listdir(root)
               if OURS_RE.match(e) and os.path.isfile(os.path.join(root, e)))


class DirLock:
    """Exclusive lock of a dataset directory for one writer (flock on DIR/.lock).

    The kernel drops an flock when its process dies, so a lock left by a killed writer is
    simply taken over; the file holds the writer's PID for the message to the next one.
    """

    def __init__(self, root):
        self.root, self.path, self.fd = root, os.path.join(root, LOCK), None

    def acquire(self):
        import fcntl

        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = ""
                for _ in range(20):  # the holder writes its PID right after locking
                    pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
                    if pid:
                        break
                    time.sleep(0.01)
                os.close(fd)
                raise LongsynthError(f"{self.root} is being written by process {pid or '(unknown)'}") from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a file its previous holder unlinked while we opened it
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self.fd = fd
                return self
            os.close(fd)

    def release(self):
        if self.fd is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


# ---------------------------------------------------------------- shard writing

_PROGRESS = None  # shared counter of generated samples, set in pool workers


def _worker_init(counter, parent):
    global _PROGRESS
    _PROGRESS = counter
    _die_with_parent(parent)
    # a worker's failure reaches the parent as an exception; the "Exception ignored"
    # tracebacks h5py's finalisers print after a failed write (disk full) would only
    # bury the parent's one-line message
    sys.unraisablehook = lambda unraisable: None
    from numba import set_num_threads

    set_num_threads(1)


def _die_with_parent(parent):
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
    return (1,) + tuple(spec.shape) if spec.shape else (min(job.count, 1 << 16),)


def write_shard(job, progress=None):
    """Generate and write one shard atomically; returns its manifest record and timings."""
    import h5py

    task = registry.get(job.task)
    cfg = task.make_config(**job.params)
    code = split_code(job.split)
    fixed = task.fixed_draws(cfg, job.seed)
    specs = task.keys(cfg)
    final = os.path.join(job.root, job.name)
    tmp = os.path.join(job.root, f".{job.name}.tmp")
    block = max(1, min(job.count, BLOCK_BYTES // sample_bytes(task, cfg)))
    opts = _h5_options(job.compression)
    t_gen = t_write = t_hash = 0.0
    digests = np.empty((job.count, 32), dtype=np.uint8)
    order = sorted(specs)
    checks = np.zeros((job.count, len(order), 2), dtype=np.uint64)
    try:
        with h5py.File(tmp, "w", libver="earliest", track_order=False) as f:
            f.attrs["format"] = FORMAT
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["task"] = job.task
            f.attrs["params"] = json.dumps(job.params, sort_keys=True)
            f.attrs["seed"] = job.seed
            f.attrs["split"] = job.split
            f.attrs["start"] = job.start
            f.attrs["count"] = job.count
            dsets = {}
            for k, spec in specs.items():
                if spec.ragged:
                    g = f.create_group(k, track_order=False)
                    rows = max(1, RAGGED_ROWS // max(1, int(np.prod(spec.shape, dtype=np.int64))))
                    dsets[k] = (
                        g.create_dataset("values", shape=(0,) + tuple(spec.shape), maxshape=(None,) + tuple(spec.shape),
                                         dtype=spec.dtype, chunks=(rows,) + tuple(spec.shape), track_times=False, **opts),
                        g.create_dataset("offsets", shape=(job.count + 1,), dtype="int64", track_times=False),
                    )
                    dsets[k][1][0] = 0
                else:
                    shape = (job.count,) + tuple(spec.shape)
                    dsets[k] = f.create_dataset(k, shape=shape, dtype=spec.dtype, chunks=_chunks(spec, job),
                                                track_times=False, **opts)
            for lo in range(0, job.count, block):
                n = min(block, job.count - lo)
                t0 = time.perf_counter()
                data = task.generate(cfg, job.seed, code, job.start + lo, n, fixed)
                t1 = time.perf_counter()
                digests[lo : lo + n] = block_digests(data, n)
                for c, k in enumerate(order):
                    col = data[k]
                    if isinstance(col, Ragged):
                        checksum.fill_ragged(col.values, col.offsets, n, checks[lo : lo + n], c)
                    else:
                        checksum.fill_rows(col, n, checks[lo : lo + n], c)
                t2 = time.perf_counter()
                for k, col in data.items():
                    if isinstance(col, Ragged):
                        values, offsets = dsets[k]
                        base = offsets[lo]
                        values.resize(base + col.values.shape[0], axis=0)
                        values[base:] = col.values
                        offsets[lo + 1 : lo + n + 1] = base + col.offsets[1:]
                    else:
                        dsets[k][lo : lo + n] = col
                t3 = time.perf_counter()
                t_gen += t1 - t0
                t_hash += t2 - t1
                t_write += t3 - t2
                if progress is not None:
                    progress(n)
                elif _PROGRESS is not None:
                    with _PROGRESS.get_lock():
                        _PROGRESS.value += n
            t0 = time.perf_counter()
            f.create_dataset(DIGEST_KEY, data=digests, track_times=False)
            f.create_dataset(CHECK_KEY, data=checks, track_times=False)
        t1 = time.perf_counter()
        with builtins.open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        t2 = time.perf_counter()
        sha = file_sha256(tmp)
        t_hash += time.perf_counter() - t2
        t_write += t1 - t0
        t_sync = t2 - t1
        os.replace(tmp, final)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    record = {
        "file": job.name,
        "start": job.start,
        "count": job.count,
        "bytes": os.path.getsize(final),
        "sha256": sha,
    }
    timing = {"generate_s": t_gen, "write_s": t_write, "hash_s": t_hash, "sync_s": t_sync}
    return record, digests, timing


# ---------------------------------------------------------------- manifest


def versions():
    import h5py
    import numba

    return {
        "longsynth": _package_version(),
        "python": ".".join(map(str, sys.version_info[:3])),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
    }


def _package_version():
    import longsynth

    return longsynth.__version__


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    return value


def config_of(manifest):
    """The fields that define a dataset: a directory with other values is another dataset."""
    keys = ("format_version", "task", "params", "seed", "counts", "shard_size", "compression")
    out = {k: manifest.get(k) for k in keys}
    out["task_revision"] = manifest.get("task_revision", 1)  # manifests before revisions: 1
    return out


def read_manifest(root):
    path = os.path.join(root, MANIFEST)
    try:
        with builtins.open(path, encoding="utf-8") as f:
            m = json.load(f)
    except FileNotFoundError:
        raise LongsynthError(f"{root}: no {MANIFEST}; not a longsynth dataset directory") from None
    except (OSError, ValueError) as e:
        raise LongsynthError(f"{path}: unreadable manifest ({e})") from None
    if m.get("format") != FORMAT:
        raise LongsynthError(f"{path}: not a longsynth manifest")
    if m.get("format_version") != FORMAT_VERSION:
        raise LongsynthError(f"{path}: format version {m.get('format_version')} is not {FORMAT_VERSION}")
    return m


def _new_manifest(task, cfg, seed, counts, shard_size, compression, command, fixed):
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "task": task.name,
        "task_revision": task.revision,
        "params": dataclasses.asdict(cfg),
        "seed": seed,
        "counts": counts,
        "shard_size": shard_size,
        "compression": compression,
        "versions": versions(),
        "command": command,
        "keys": {k: {"dtype": s.dtype, "shape": list(s.shape), "ragged": s.ragged, "doc": s.doc}
                 for k, s in task.keys(cfg).items()},
        "fixed": {k: _jsonable(v) for k, v in fixed.items()},
        "vocab": list(task.vocab(cfg)) if task.vocab is not None else None,
        "complete": False,
        "splits": {s: {"count": n, "digest": None, "shards": []} for s, n in counts.items()},
    }


def _write_manifest(root, manifest):
    for s in manifest["splits"].values():
        s["shards"].sort(key=lambda r: r["start"])
    atomic_write_text(os.path.join(root, MANIFEST), json.dumps(manifest, indent=1, sort_keys=True) + "\n")


# ---------------------------------------------------------------- generate


def _make_dir(root):
    if os.path.exists(root) and not os.path.isdir(root):
        raise LongsynthError(f"{root}: exists and is not a directory")
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as e:
        raise LongsynthError(f"{root}: cannot create directory ({e.strerror})") from None
    if not os.access(root, os.W_OK):
        raise LongsynthError(f"{root}: directory is not writable")


def _prepare_dir(root, want, overwrite):
    """Existing shard records to keep (by file name) after checking what DIR holds."""
    entries = [e for e in os.listdir(root) if e != LOCK]
    foreign = [e for e in entries if not OURS_RE.match(e)]
    mpath = os.path.join(root, MANIFEST)
    old = None
    if os.path.exists(mpath):
        try:
            old = read_manifest(root)
        except LongsynthError:
            if not overwrite:
                raise
    elif foreign:
        raise LongsynthError(f"{root}: directory is not empty and holds no longsynth dataset; choose another --out")
    keep = {}
    if old is not None and config_of(old) != config_of(want):
        if not overwrite:
            diff = [k for k, v in config_of(want).items() if config_of(old)[k] != v]
            raise LongsynthError(
                f"{root}: holds a different dataset ({', '.join(diff)} differ); use --overwrite to replace it"
            )
        old = None
    if old is None and os.path.exists(mpath):  # replacing a dataset: its certificates go with it
        import shutil

        shutil.rmtree(os.path.join(root, "validation"), ignore_errors=True)
    for e in entries:
        path = os.path.join(root, e)
        if e.endswith(".tmp"):
            os.remove(path)
        elif old is None and OURS_RE.match(e) and e != MANIFEST:
            os.remove(path)
    if old is not None:
        for split, info in old["splits"].items():
            for rec in info["shards"]:
                path = os.path.join(root, rec["file"])
                if os.path.exists(path) and os.path.getsize(path) == rec["bytes"] and file_sha256(path) == rec["sha256"]:
                    keep[rec["file"]] = (split, rec)
    return keep


def _split_digest(root, records):
    import h5py

    h = hashlib.sha256()
    for rec in records:
        with h5py.File(os.path.join(root, rec["file"]), "r") as f:
            h.update(f[DIGEST_KEY][()].tobytes())
    return h.hexdigest()


def generate(root, task, params=None, *, seed=0, splits=None, num_samples=None, shard_size=None,
             compression="none", workers=None, overwrite=False, command="", progress=None, notify=None):
    """Write (or resume) a dataset of ``task`` in ``root``; returns the final manifest.

    ``progress(n)`` is called with the number of samples finished since the last call,
    ``progress(None, total=N)`` once first. ``notify(line)`` receives one-line notes: the
    expected size, workers capped, empty splits. Identical output for any ``workers``.

    Refused before anything is written: a dataset larger than the free disk space, and a
    directory another process is writing (LongsynthError).
    """
    params = dict(params or {})
    t = registry.get(task)
    cfg = t.make_config(**params)
    seed = check_seed(seed)
    note = notify or (lambda line: None)
    if compression not in COMPRESSIONS:
        raise LongsynthError(f"compression: must be one of {', '.join(COMPRESSIONS)}, got {compression!r}")
    defaulted = splits is None
    if splits is None:
        n = t.default_num_samples if num_samples is None else num_samples
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise LongsynthError(f"num_samples: must be an integer >= 1, got {n!r}")
        splits = default_splits(n)
    if any(v < 0 for v in splits.values()) or sum(splits.values()) < 1:
        raise LongsynthError("splits: counts must be >= 0 and sum to at least 1")
    if any(v > MAX_COUNT for v in splits.values()):
        raise LongsynthError(f"splits: at most {MAX_COUNT:,} samples per split (indices are 62-bit)")
    if shard_size is None:
        shard_size = default_shard_size(t, cfg)
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise LongsynthError(f"shard_size: must be an integer >= 1, got {shard_size!r}")
    asked = workers
    workers = (os.cpu_count() or 1) if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LongsynthError(f"workers: must be an integer >= 1, got {workers!r}")
    root = os.path.abspath(root)
    total = sum(splits.values())
    need = estimate_bytes(t, cfg, splits, seed, shard_size)
    free = _free_bytes(root) + _our_bytes(root)
    kind = "uncompressed, less with compression" if compression != "none" else "on disk"
    note(f"{t.name}: {total:,} samples ({', '.join(f'{s} {c:,}' for s, c in splits.items())}), "
         f"about {human(need)} {kind}; {human(free)} free")
    if compression == "none" and need > free:
        raise LongsynthError(f"{root}: the dataset needs about {human(need)} but only {human(free)} is free there; "
                             f"lower --num-samples or choose another --out")
    if defaulted:
        empty = [s for s, c in splits.items() if c == 0]
        if empty:
            note(f"{' and '.join(empty)} get 0 samples (2% of {total} rounds down); give --splits to choose the counts")
    fixed = t.fixed_draws(cfg, seed)
    cparams = dataclasses.asdict(cfg)
    manifest = _new_manifest(t, cfg, seed, splits, shard_size, compression, command, fixed)
    _make_dir(root)
    lock = DirLock(root).acquire()
    try:
        return _generate_locked(root, t, cfg, cparams, seed, splits, shard_size, compression, workers, asked,
                                overwrite, manifest, progress, note)
    finally:
        lock.release()


def _generate_locked(root, t, cfg, cparams, seed, splits, shard_size, compression, workers, asked, overwrite,
                     manifest, progress, note):
    keep = _prepare_dir(root, manifest, overwrite)
    for split, rec in keep.values():
        manifest["splits"][split]["shards"].append(rec)
    try:
        _write_manifest(root, manifest)
        jobs = (j for j in plan(root, t.name, cparams, seed, splits, shard_size, compression) if j.name not in keep)
        n_jobs = sum(-(-n // shard_size) for n in splits.values()) - len(keep)
        total = sum(splits.values())
        if progress is not None:
            progress(None, total=total)
            progress(sum(rec["count"] for _, rec in keep.values()))
        cores = os.cpu_count() or 1
        capped = max(1, min(workers, cores, n_jobs))
        if asked is not None and capped < workers:
            note(f"--workers {workers} capped to {capped} ({cores} cores, {n_jobs} shards to write)")
        workers = capped
        timings = []

        def done(job, record, timing):
            manifest["splits"][job.split]["shards"].append(record)
            timings.append(timing)
            _write_manifest(root, manifest)

        if workers == 1 or n_jobs <= 1:
            from numba import get_num_threads, set_num_threads

            threads = get_num_threads()
            set_num_threads(1 if workers == 1 else min(workers, threads))
            try:
                for job in jobs:
                    record, _, timing = write_shard(job, progress)
                    done(job, record, timing)
            finally:
                set_num_threads(threads)
        else:
            _run_pool(jobs, workers, progress, done)
        for split, info in manifest["splits"].items():
            info["digest"] = _split_digest(root, info["shards"])
        manifest["complete"] = True
        if t.audit is not None:
            manifest["audit"] = t.audit(Dataset(root, manifest))
        atomic_write_text(os.path.join(root, CARD), dataset_card(t, cfg, manifest))
        _write_manifest(root, manifest)
    except OSError as e:
        raise LongsynthError(f"{root}: write failed ({_os_reason(e)}); rerun the same command to resume") from None
    manifest["timings"] = timings
    return manifest


def _os_reason(e):
    """One line for an OSError: the errno HDF5 buries in a multi-line message, else strerror."""
    text = str(e)
    m = re.search(r"errno = (\d+)", text)
    if m and int(m.group(1)):
        return os.strerror(int(m.group(1)))
    return " ".join((e.strerror or text).split())


class _SpawnableMain:
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
    with _SpawnableMain(), ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                                               initargs=(counter, os.getpid())) as pool:
        futures = {pool.submit(write_shard, job): job for job in itertools.islice(jobs, 2 * workers)}
        pending = set(futures)
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                for fut in finished:
                    record, _, timing = fut.result()
                    done(futures.pop(fut), record, timing)
                    for job in itertools.islice(jobs, 1):
                        nxt = pool.submit(write_shard, job)
                        futures[nxt] = job
                        pending.add(nxt)
                if progress is not None:
                    now = counter.value
                    progress(now - seen)
                    seen = now
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise


def dataset_card(task, cfg, manifest):
    counts = ", ".join(f"{s} {n}" for s, n in manifest["counts"].items())
    size = sum(r["bytes"] for s in manifest["splits"].values() for r in s["shards"])
    keys = "\n".join(
        f"| `{k}` | {v['dtype']} | {'[n, ' if v['ragged'] else '['}{', '.join(map(str, v['shape']))}] | {v['doc']} |"
        for k, v in manifest["keys"].items()
    )
    params = "\n".join(f"| `{k}` | {v} |" for k, v in manifest["params"].items())
    digests = "\n".join(f"| {s} | {i['count']} | `{i['digest']}` |" for s, i in manifest["splits"].items())
    return f"""# {task.name} dataset (longsynth {manifest['versions']['longsynth']})

{task.summary}.

{task.card}

Made by: `{manifest['command'] or 'longsynth.store.generate(...)'}`

Seed {manifest['seed']}; samples: {counts}; {size / 1e6:.1f} MB in
{sum(len(s['shards']) for s in manifest['splits'].values())} shard(s) ({manifest['compression']} compression).

## Parameters
| parameter | value |
|---|---|
{params}

## Keys (per sample)
| key | dtype | shape | meaning |
|---|---|---|---|
{keys}

## Split digests (SHA-256 over per-sample digests in index order)
| split | samples | digest |
|---|---|---|
{digests}

Read it with `longsynth.open(DIR)` or `longsynth.torch.ShardDataset(DIR)`; check it with
`longsynth verify DIR --deep`.
"""


# ---------------------------------------------------------------- reading


class Split:
    """Samples of one split as a sequence: ``len(s)``, ``s[i]`` -> dict of arrays.

    HDF5 files are opened lazily, per process: a Split pickled into a DataLoader worker
    opens its own handles there.

    Every read is checked: a shard's size must match the manifest when it is opened, and
    each value read must match its stored checksum (``_check``, longsynth.checksum; shards
    written before checksums: the sample's SHA-256 digest). A missing, truncated or damaged
    shard raises DamagedDataError naming the shard; damaged values are never returned.
    """

    def __init__(self, root, name, info, specs):
        self.root, self.name, self.specs = root, name, specs
        self.records = info["shards"]
        self.starts = [r["start"] for r in self.records]
        self.count = info["count"]
        self.columns = {k: c for c, k in enumerate(sorted(specs))}
        self._files, self._nodes, self._checks, self._pid = {}, {}, {}, None

    def __len__(self):
        return self.count

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_files"], state["_nodes"], state["_checks"], state["_pid"] = {}, {}, {}, None
        return state

    def _damaged(self, k, what):
        path = os.path.join(self.root, self.records[k]["file"])
        return DamagedDataError(f"{path}: {what}; run `longsynth verify {self.root}`")

    def _file(self, k):
        import h5py

        if self._pid != os.getpid():
            self._files, self._nodes, self._checks, self._pid = {}, {}, {}, os.getpid()
        f = self._files.get(k)
        if f is None:
            rec = self.records[k]
            path = os.path.join(self.root, rec["file"])
            try:
                size = os.stat(path).st_size
            except FileNotFoundError:
                raise self._damaged(k, "shard is missing") from None
            if size != rec["bytes"]:
                raise self._damaged(k, f"shard is {size} bytes, the manifest says {rec['bytes']} (truncated or replaced)")
            try:
                f = h5py.File(path, "r")
            except OSError as e:
                raise self._damaged(k, f"unreadable HDF5 ({e})") from None
            self._files[k] = f
        return f

    def _node(self, k, path):
        """HDF5 dataset ``path`` of shard k, looked up once per process (a lookup costs ~0.1 ms)."""
        f = self._file(k)
        d = self._nodes.get((k, path))
        if d is None:
            d = self._nodes[(k, path)] = f[path]
        return d

    def _check(self, k):
        """(kind, array) of shard k, read once per process: ("sum64", uint64 [count, keys, 2])
        or ("sha256", uint8 [count, 32]) for shards written before checksums."""
        c = self._checks.get(k)
        if c is None:
            f = self._file(k)
            c = ("sum64", f[CHECK_KEY][()]) if CHECK_KEY in f else ("sha256", f[DIGEST_KEY][()])
            if c[1].shape[0] != self.records[k]["count"]:
                raise self._damaged(k, f"checksums cover {c[1].shape[0]} samples, the shard holds {self.records[k]['count']}")
            self._checks[k] = c
        return c

    def locate(self, i):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"index must be an integer, got {type(i).__name__}")
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError(f"index {i} out of range for {self.name} split of {self.count}")
        k = bisect.bisect_right(self.starts, i) - 1
        return k, int(i - self.starts[k])

    def __getitem__(self, i):
        return self.read(i)

    def __iter__(self):
        for i in range(self.count):
            yield self.read(i)

    def _fixed(self, k, key):
        """How to read sample j of fixed-shape ``key`` in shard k, looked up once per process.

        Contiguous (uncompressed) storage: (fd, file offset, bytes per sample, dtype, shape),
        read with one pread (5-10 us less than h5py's selection machinery per read, which
        pays for the checksum). Chunked storage: the h5py dataset.
        """
        r = self._nodes.get(("fixed", k, key))
        if r is None:
            d = self._node(k, key)
            offset = d.id.get_offset() if d.chunks is None else None
            if offset is None:
                r = d
            else:
                fd = self._files[("fd", k)] = self._files.get(("fd", k)) or _Fd(self._file(k).filename)
                shape = d.shape[1:]
                r = (fd.fd, offset, d.dtype.itemsize * int(np.prod(shape, dtype=np.int64)), d.dtype, shape)
            self._nodes[("fixed", k, key)] = r
        return r

    def _read_key(self, k, j, key):
        if self.specs[key].ragged:
            r = self._fixed(k, f"{key}/offsets")
            if type(r) is tuple:
                fd, offset, size, dtype, _ = r
                buf = bytearray(2 * size)
                if os.preadv(fd, [buf], offset + j * size) != 2 * size:
                    raise self._damaged(k, f"sample {self.starts[k] + j} of {self.name} is cut short")
                a, b = np.frombuffer(buf, dtype).tolist()
            else:
                a, b = r[j : j + 2]
            if not 0 <= a <= b:
                raise self._damaged(k, f"sample {self.starts[k] + j} has offsets {a}..{b}")
            return self._node(k, f"{key}/values")[a:b]
        r = self._fixed(k, key)
        if type(r) is not tuple:
            return np.asarray(r[j])
        fd, offset, size, dtype, shape = r
        buf = bytearray(size)
        if os.preadv(fd, [buf], offset + j * size) != size:
            raise self._damaged(k, f"sample {self.starts[k] + j} of {self.name} is cut short")
        return np.frombuffer(buf, dtype).reshape(shape)

    def read(self, i, keys=None):
        k, j = self.locate(i)
        if keys is None:
            keys = self.specs
        else:
            for key in keys:
                if key not in self.specs:
                    raise MissingKeyError(f"no key {key!r}; this dataset has {', '.join(self.specs)}")
        try:
            kind, check = self._checks.get(k) or self._check(k)
            out = {}
            bad = False
            if kind == "sum64":
                columns, matches = self.columns, checksum.matches_at
                for key in keys:
                    v = out[key] = self._read_key(k, j, key)
                    if not matches(v, check, j, columns[key]):
                        bad = True
            else:  # shards written before checksums: the SHA-256 digest covers every key
                for key in self.specs:
                    out[key] = self._read_key(k, j, key)
                bad = sample_digest(out) != check[j].tobytes()
                out = {key: out[key] for key in keys}
        except DamagedDataError:
            raise
        except (OSError, KeyError, RuntimeError) as e:  # what h5py raises on a damaged file
            raise self._damaged(k, f"unreadable ({type(e).__name__}: {e})") from None
        if bad:
            raise self._damaged(k, f"sample {self.starts[k] + j} of {self.name} fails its checksum (damaged data)")
        return out

    def column(self, key):
        """A fixed-shape key of every sample of the split, in index order, checked."""
        if key not in self.specs or self.specs[key].ragged:
            raise MissingKeyError(f"no fixed-shape key {key!r}; this dataset has {', '.join(self.specs)}")
        parts = []
        for k, rec in enumerate(self.records):
            try:
                kind, check = self._checks.get(k) or self._check(k)
                if kind != "sum64":
                    parts.append(np.stack([self.read(self.starts[k] + j)[key] for j in range(rec["count"])]))
                    continue
                a = self._node(k, key)[()]
                got = np.zeros((rec["count"], len(self.columns), 2), dtype=np.uint64)
                c = self.columns[key]
                checksum.fill_rows(a, rec["count"], got, c)
            except (OSError, KeyError, RuntimeError) as e:  # what h5py raises on a damaged file
                raise self._damaged(k, f"unreadable ({type(e).__name__}: {e})") from None
            bad = np.flatnonzero(np.any(got[:, c] != check[:, c], axis=1))
            if bad.size:
                raise self._damaged(k, f"sample {self.starts[k] + int(bad[0])} of {self.name} fails its checksum "
                                       f"(damaged data)")
            parts.append(a)
        spec = self.specs[key]
        return np.concatenate(parts) if parts else np.zeros((0,) + tuple(spec.shape), dtype=spec.dtype)

    def iter_samples(self, keys=None, chunk=256):
        """Every sample in index order, read ``chunk`` samples at a time (memory stays flat),
        each checked like ``read`` (DamagedDataError before a damaged sample is yielded)."""
        for _, block in self.iter_blocks(keys, chunk):
            yield from _unblock(block)

    def iter_blocks(self, keys=None, chunk=256, start=0, stop=None):
        """Samples ``start..stop-1`` (default: all) in index order as ``(index of the first,
        block)`` with up to ``chunk`` samples per block, each block checked whole before it is
        yielded.

        A block is ``{key: array [n, ...]}`` for fixed-shape keys and ``Ragged`` (values,
        offsets from 0) for variable-length ones: the layout the kernels write, so a writer
        that handles columns (an export) costs no per-sample Python. Blocks never span
        shards."""
        keys = list(keys or self.specs)
        for key in keys:
            if key not in self.specs:
                raise MissingKeyError(f"no key {key!r}; this dataset has {', '.join(self.specs)}")
        stop = self.count if stop is None else min(stop, self.count)
        for k, rec in enumerate(self.records):
            first, n = max(0, start - self.starts[k]), min(rec["count"], stop - self.starts[k])
            for lo in range(first, n, chunk):
                hi = min(n, lo + chunk)
                try:
                    kind, check = self._checks.get(k) or self._check(k)
                    if kind != "sum64":  # shards written before checksums: sample by sample
                        block = _block([self.read(self.starts[k] + j, keys) for j in range(lo, hi)],
                                       keys, self.specs)
                        yield self.starts[k] + lo, block
                        continue
                    block, got = {}, np.zeros((hi - lo, len(self.columns), 2), dtype=np.uint64)
                    for key in keys:
                        c = self.columns[key]
                        if self.specs[key].ragged:
                            raw = self._node(k, f"{key}/offsets")[lo : hi + 1]
                            vals = self._node(k, f"{key}/values")[int(raw[0]) : max(int(raw[0]), int(raw[-1]))]
                            off = raw - raw[0]
                            if vals.shape[0] != off[-1] or np.any(np.diff(off) < 0):
                                raise self._damaged(k, f"samples {self.starts[k] + lo}..{self.starts[k] + hi - 1} "
                                                       f"of {self.name} have inconsistent offsets")
                            checksum.fill_ragged(vals, off, hi - lo, got, c)
                            block[key] = Ragged(vals, off)
                        else:
                            block[key] = self._node(k, key)[lo:hi]
                            checksum.fill_rows(block[key], hi - lo, got, c)
                        bad = np.flatnonzero(np.any(got[:, c] != check[lo:hi, c], axis=1))
                        if bad.size:
                            raise self._damaged(k, f"sample {self.starts[k] + lo + int(bad[0])} of {self.name} fails "
                                                   f"its checksum (damaged data)")
                except (OSError, KeyError, RuntimeError) as e:  # what h5py raises on a damaged file
                    raise self._damaged(k, f"unreadable ({type(e).__name__}: {e})") from None
                yield self.starts[k] + lo, block

    def close(self):
        for f in self._files.values():
            f.close()
        self._files, self._nodes, self._checks = {}, {}, {}


def _block(samples, keys, specs):
    """Checked samples (dicts) as one block: fixed-shape keys stacked, ragged keys joined."""
    block = {}
    for key in keys:
        values = [np.asarray(s[key]) for s in samples]
        if specs[key].ragged:
            offsets = np.zeros(len(values) + 1, dtype=np.int64)
            np.cumsum([v.shape[0] for v in values], out=offsets[1:])
            block[key] = Ragged(np.concatenate(values) if values else np.zeros((0,) + tuple(specs[key].shape),
                                                                              dtype=specs[key].dtype), offsets)
        else:
            block[key] = np.stack(values)
    return block


def _unblock(block):
    """The samples of a block, in order, as dicts of views into it."""
    n = next(len(c.offsets) - 1 if isinstance(c, Ragged) else c.shape[0] for c in block.values())
    for i in range(n):
        yield {key: col.values[col.offsets[i] : col.offsets[i + 1]] if isinstance(col, Ragged) else col[i]
               for key, col in block.items()}


class _Fd:
    """A read-only file descriptor that closes like a file (kept beside the h5py handles)."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Dataset:
    """A stored dataset: ``.manifest``, ``.task``, ``.config``, ``ds["train"]``, ``.splits``."""

    def __init__(self, root, manifest=None):
        self.root = os.path.abspath(root)
        self.manifest = read_manifest(self.root) if manifest is None else manifest
        if not self.manifest.get("complete"):
            raise LongsynthError(f"{root}: dataset is incomplete; rerun its gen command to resume")
        self.task = registry.get(self.manifest["task"])
        self.config = self.task.make_config(**self.manifest["params"])
        specs = self.task.keys(self.config)
        msplits = self.manifest["splits"]
        self.splits = {s: Split(self.root, s, msplits[s], specs) for s in SPLITS if s in msplits}

    def __getitem__(self, split):
        if split not in self.splits:
            raise MissingKeyError(f"no split {split!r}; this dataset has {', '.join(self.splits)}")
        return self.splits[split]

    @property
    def seed(self):
        return self.manifest["seed"]

    def close(self):
        for s in self.splits.values():
            s.close()


def export(root, fmt, out, progress=None):
    """Write the dataset in ``root`` in export format ``fmt`` to ``out`` (longsynth.exports)."""
    from longsynth import exports

    return exports.export(root, fmt, out, progress)


def open(root):  # noqa: A001 - mirrors builtins.open for datasets
    """Open a stored dataset directory for reading."""
    return Dataset(root)


# ---------------------------------------------------------------- verify and info


def verify(root, deep=False, samples=16, progress=None):
    """List of problems found (empty when the dataset is intact).

    Checks the manifest, every shard's size and SHA-256, its structure against the
    manifest, and each split digest. ``deep`` also regenerates ``samples`` indices per
    split (spread over the range) with the generator and compares their bytes.
    """
    import h5py

    m = read_manifest(root)
    problems = []
    if not m.get("complete"):
        problems.append("manifest: dataset is incomplete (generation did not finish)")
    task = registry.get(m["task"])
    cfg = task.make_config(**m["params"])
    specs = task.keys(cfg)
    for split, info in m["splits"].items():
        expect = 0
        h = hashlib.sha256()
        for rec in info["shards"]:
            path = os.path.join(root, rec["file"])
            if progress is not None:
                progress(rec["file"])
            if rec["start"] != expect:
                problems.append(f"{rec['file']}: starts at {rec['start']}, expected {expect}")
            expect = rec["start"] + rec["count"]
            if not os.path.exists(path):
                problems.append(f"{rec['file']}: missing")
                continue
            if os.path.getsize(path) != rec["bytes"]:
                problems.append(f"{rec['file']}: size {os.path.getsize(path)} != {rec['bytes']} in manifest")
            if file_sha256(path) != rec["sha256"]:
                problems.append(f"{rec['file']}: SHA-256 mismatch (file changed or corrupt)")
            try:
                with h5py.File(path, "r") as f:
                    problems += _check_structure(rec, f, specs)
                    h.update(f[DIGEST_KEY][()].tobytes())
            except Exception as e:  # corrupt HDF5 can fail anywhere in h5py
                problems.append(f"{rec['file']}: unreadable HDF5 ({type(e).__name__}: {e})")
        if expect != info["count"]:
            problems.append(f"{split}: shards cover {expect} samples, manifest says {info['count']}")
        if m.get("complete") and h.hexdigest() != info["digest"]:
            problems.append(f"{split}: split digest mismatch")
    if deep and not problems:
        problems += _deep_check(root, m, task, cfg, samples)
    return problems


def _check_structure(rec, f, specs):
    out = []
    n = rec["count"]
    for k, spec in specs.items():
        if k not in f:
            out.append(f"{rec['file']}: key {k!r} missing")
            continue
        if spec.ragged:
            off = f[k]["offsets"][()]
            vals = f[k]["values"]
            if off.shape != (n + 1,) or off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] != vals.shape[0]:
                out.append(f"{rec['file']}: {k} offsets are inconsistent")
            if vals.dtype != np.dtype(spec.dtype) or vals.shape[1:] != tuple(spec.shape):
                out.append(f"{rec['file']}: {k} values have {vals.dtype} {vals.shape[1:]}, expected {spec.dtype} {spec.shape}")
        else:
            d = f[k]
            if d.dtype != np.dtype(spec.dtype) or d.shape != (n,) + tuple(spec.shape):
                out.append(f"{rec['file']}: {k} is {d.dtype} {d.shape}, expected {spec.dtype} {(n,) + tuple(spec.shape)}")
    if DIGEST_KEY not in f or f[DIGEST_KEY].shape != (n, 32):
        out.append(f"{rec['file']}: per-sample digests missing or malformed")
    return out


def _deep_check(root, m, task, cfg, samples):
    stored_rev = m.get("task_revision", 1)
    if stored_rev != task.revision:
        return [f"manifest: generated by revision {stored_rev} of {task.name}'s draws; this longsynth "
                f"draws revision {task.revision}, so samples cannot be regenerated (install the version "
                f"in manifest 'versions' to check them)"]
    problems = []
    ds = open(root)
    fixed = task.fixed_draws(cfg, m["seed"])
    for k, v in m.get("fixed", {}).items():
        if not np.array_equal(np.asarray(v), np.asarray(_jsonable(fixed[k]))):
            problems.append(f"manifest: fixed draw {k!r} differs from the generator's")
    for split, sp in ds.splits.items():
        n = len(sp)
        idx = sorted(set(np.linspace(0, n - 1, min(samples, n)).astype(int).tolist())) if n else []
        for i in idx:
            block = task.generate(cfg, m["seed"], split_code(split), i, 1, fixed)
            fresh = {k: np.asarray(c.values if isinstance(c, Ragged) else c[0]) for k, c in block.items()}
            try:
                stored = sp[i]
            except DamagedDataError:
                problems.append(f"{split}[{i}]: stored sample fails its checksum (damaged data)")
                continue
            if sample_digest(fresh) != sample_digest(stored):
                problems.append(f"{split}[{i}]: stored sample differs from the regenerated one")
    ds.close()
    return problems


def info(root, preview=4):
    """Summary of a dataset: configuration, counts, sizes, key shapes/dtypes, value stats."""
    m = read_manifest(root)
    out = {
        "root": os.path.abspath(root),
        "task": m["task"],
        "params": m["params"],
        "seed": m["seed"],
        "complete": m.get("complete", False),
        "compression": m["compression"],
        "versions": m["versions"],
        "command": m.get("command", ""),
        "splits": {},
        "keys": m["keys"],
        "stats": {},
    }
    for split in (s for s in SPLITS if s in m["splits"]):
        sp = m["splits"][split]
        out["splits"][split] = {
            "count": sp["count"],
            "shards": len(sp["shards"]),
            "bytes": sum(r["bytes"] for r in sp["shards"]),
            "digest": sp["digest"],
        }
    if m.get("complete"):
        ds = open(root)
        split = next((s for s, sp in ds.splits.items() if len(sp)), None)
        if split is not None:
            rows = [ds[split][i] for i in range(min(preview, len(ds[split])))]
            for k in m["keys"]:
                v = np.concatenate([np.asarray(r[k], dtype=np.float64).ravel() for r in rows])
                if v.size:
                    out["stats"][k] = {"split": split, "samples": len(rows), "min": float(v.min()),
                                       "max": float(v.max()), "mean": float(v.mean()), "std": float(v.std())}
        ds.close()
    val = latest_certificate(root)
    if val is not None:
        out["validation"] = val
    return out


def latest_certificate(root):
    """metrics.json of the newest ``validation/*`` run in the dataset directory, if any."""
    vdir = os.path.join(root, "validation")
    if not os.path.isdir(vdir):
        return None
    runs = sorted(d for d in os.listdir(vdir) if os.path.exists(os.path.join(vdir, d, "metrics.json")))
    if not runs:
        return None
    with builtins.open(os.path.join(vdir, runs[-1], "metrics.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["path"] = os.path.join(vdir, runs[-1])
    return data
