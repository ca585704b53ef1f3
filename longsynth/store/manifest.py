"""Planning a dataset and keeping its books: shard jobs, sizes, the directory lock, the
manifest and the dataset card. This is the part of generation that runs in the one
process holding the lock, whichever executor writes the shards.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

from longsynth._version import __version__
from longsynth.errors import LongsynthError
from longsynth.rng import SPLITS, split_code
from longsynth import safe
from longsynth.store import identity, schema
from longsynth.files import atomic_write_text, file_sha256
from longsynth.outdir import DirLock  # noqa: F401 - the store's lock, shared by every writer
from longsynth.store.layout import FORMAT, FORMAT_VERSION, LOCK, MANIFEST, OURS_RE

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
    generation: str | None = None  # the manifest's: written into the shard (docs/format.md, "Trust")
    # the data set's ((split, count), ...) when cut from the authors' data (api.authors_block); None: our law
    authors_counts: tuple | None = None
    stream: str = "longsynth"  # the manifest's "stream"

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


def default_splits(num_samples, percent=(96, 2, 2)):
    """train / val / test = percent (96/2/2 unless the task says otherwise, e.g. 80/10/10)
    of num_samples; val and test round down, train takes the rest."""
    val, test = num_samples * percent[1] // 100, num_samples * percent[2] // 100
    return {"train": num_samples - val - test, "val": val, "test": test}


def plan(root, task, params, seed, splits, shard_size, compression, generation=None, stream="longsynth"):
    """The shard jobs, lazily: nothing is allocated per shard before it is written.
    ``stream``: "longsynth" (our per-sample law), "authors" (the shards are cut from the authors'
    stream of each split, its count) or "authors-pipeline" (from the authors' data set, whose
    splits continue one stream)."""
    counts = tuple(splits.items()) if stream != "longsynth" else None
    for split, n in splits.items():
        for k, start in enumerate(range(0, n, shard_size)):
            count = min(shard_size, n - start)
            yield ShardJob(root, task, params, seed, split, k, start, count, compression, generation, counts, stream)


def progress_of(manifest):
    """(samples written, samples planned) of a manifest: what a stopped gen has kept."""
    written = sum(r["count"] for sp in manifest["splits"].values() for r in sp["shards"])
    return written, sum(sp["count"] for sp in manifest["splits"].values())


def human(n):
    """Bytes as text: 512 B, 3.2 MB, 14.7 GB (powers of 1000, as `df -H`)."""
    if n >= 1e16:  # an estimate past any machine (a vocabulary's permutations): its magnitude
        return f"{n / 1e12:.1e} TB"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def estimate_bytes(task, cfg, splits, seed, shard_size, draw=True):
    """Bytes the dataset will take on disk, uncompressed (within a few percent).

    Fixed-shape keys are exact; variable-length keys are sized from the first samples, or,
    with ``draw=False`` (nothing generated, no kernel compiled: ``longsynth list``), at the
    config's ``max_length`` elements each, an upper bound.
    Per sample: the keys, the 32-byte digest and the checksums; per shard about 16 kB of
    HDF5 metadata.
    """
    specs = task.keys(cfg)
    per = 32 + 16 * len(specs)
    ragged = [k for k, spec in specs.items() if spec.ragged]
    for k, spec in specs.items():
        if not spec.ragged:
            per += int(np.prod(spec.shape, dtype=np.int64)) * np.dtype(spec.dtype).itemsize
    if ragged and not draw:
        per += sum(int(cfg.max_length) * np.dtype(specs[k].dtype).itemsize + 8 for k in ragged)
    elif ragged:
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


def writer(root):
    """The PID (text) of the process writing ``root`` now, or None.

    A reader's question, answered without writing: the lock file is opened read-only
    without following a link and probed with a shared, non-blocking flock (a writer holds
    it exclusively). Anything unusual (no file, a link, an unreadable file) is None."""
    import fcntl

    try:
        fd = safe.open_regular(os.path.join(root, LOCK), os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, LongsynthError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
        return pid[:20] or "(unknown)"
    except OSError:
        return None
    finally:
        os.close(fd)
    return None



# ---------------------------------------------------------------- manifest


def versions():
    import h5py
    import numba

    return {
        "longsynth": __version__,
        "python": ".".join(map(str, sys.version_info[:3])),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
    }


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
    if manifest.get("stream", "longsynth") != "longsynth":  # only then: older datasets keep their ids
        out["stream"] = manifest["stream"]
    if "source" in manifest:  # imported rows: the files they came from are part of what the dataset is
        out["source"] = manifest["source"]
    return out


def read_manifest(root):
    """The validated manifest of the dataset in ``root`` (longsynth.store.schema): one
    LongsynthError line naming the field for anything malformed."""
    path = os.path.join(root, MANIFEST)
    try:
        raw = safe.read_json(path, path)
    except FileNotFoundError:
        if not os.path.lexists(root):
            raise LongsynthError(f"{root}: does not exist") from None
        raise LongsynthError(f"{root}: no {MANIFEST}; not a longsynth dataset directory") from None
    except OSError as e:
        raise LongsynthError(f"{path}: unreadable manifest ({e.strerror or e})") from None
    return schema.parse_manifest(raw, path)


def _new_manifest(task, cfg, seed, counts, shard_size, compression, command, fixed, stream="longsynth", source=None):
    m = {
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
        **({"stream": stream} if stream != "longsynth" else {}),
        **({"source": source} if source is not None else {}),
        "vocab": list(task.vocab(cfg)) if task.vocab is not None else None,
        "complete": False,
        "splits": {s: {"count": n, "digest": None, "shards": []} for s, n in counts.items()},
    }
    m["generation"] = generation_of(m)
    return m


def generation_of(manifest):
    """The dataset's generation id: a digest of the fields that define it (config_of).
    Every shard carries it, so a reader notices a dataset regenerated with another
    configuration under it; regenerating the same one writes the same bytes."""
    import hashlib

    text = json.dumps(config_of(manifest), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _write_manifest(root, manifest):
    for s in manifest["splits"].values():
        s["shards"].sort(key=lambda r: r["start"])
    atomic_write_text(os.path.join(root, MANIFEST), json.dumps(manifest, indent=1, sort_keys=True) + "\n")



def _prepare_dir(root, want, overwrite):
    """Existing shard records to keep (by file name) after checking what DIR holds.

    gen writes only into an empty folder (its own temporary files aside) or a longsynth
    dataset folder; anything else is refused, with or without --overwrite. Replacing a
    dataset removes only the files longsynth writes there (shards, manifest, card, their
    temporary files, validation/); other files in the folder stay.
    """
    entries = [e for e in os.listdir(root) if e != LOCK]
    ours = [e for e in entries if OURS_RE.match(e)]
    old = None
    if not os.path.lexists(os.path.join(root, MANIFEST)):
        if any(not e.endswith(".tmp") for e in ours) or len(ours) != len(entries):
            raise LongsynthError(f"{root}: directory is not empty and holds no longsynth dataset; choose another --out")
    else:
        try:
            old = read_manifest(root)
        except LongsynthError as e:
            raise LongsynthError(f"{e}; not replaced, even with --overwrite: choose another --out") from None
    same = old is not None and config_of(old) == config_of(want)
    if old is not None and not same:
        if not overwrite:
            diff = [k for k, v in config_of(want).items() if config_of(old)[k] != v]
            raise LongsynthError(
                f"{root}: holds a different dataset ({', '.join(diff)} differ); use --overwrite to replace it"
            )
        vdir = os.path.join(root, "validation")  # its certificates go with it
        if os.path.isdir(vdir) and not os.path.islink(vdir):
            import shutil

            shutil.rmtree(vdir, ignore_errors=True)
    for e in ours:
        if e.endswith(".tmp") or (not same and e != MANIFEST):
            os.remove(os.path.join(root, e))
    keep = {}
    if same and old.get("generation") == want["generation"]:  # one of before generation ids is written anew
        from longsynth import registry

        task = registry.get(want["task"])
        specs = task.keys(task.make_config(**want["params"]))
        for split, info in old["splits"].items():
            expect = identity.Expected.of(want, split, specs)
            for rec in info["shards"]:
                if _intact(root, rec, expect):
                    keep[rec["file"]] = (split, rec)
    return keep


def _intact(root, rec, expect):
    """Whether shard ``rec`` is in place, of its recorded size and SHA-256, and says it is
    that shard of this dataset (its layout is checked by readers and verify)."""
    path = os.path.join(root, rec["file"])
    try:
        fd, f = identity.open_shard(path, rec["bytes"])
    except (OSError, ValueError):
        return False
    try:
        return identity.problem(f, rec, expect) is None and file_sha256(path) == rec["sha256"]
    finally:
        f.close()
        os.close(fd)


def law_text(manifest):
    """How a dataset's samples were drawn, in a sentence or two for its cards: longsynth's law (each sample
    a function of its index) or the authors' stream, whose rows depend on every row before them."""
    stream = manifest.get("stream", "longsynth")
    if stream == "imported":
        src = manifest["source"]
        checked = sum(f["checked"] for f in src["files"])
        files = ", ".join(f"`{f['name']}` ({f['rows']:,} rows, SHA-256 `{f['sha256'][:16]}...`)" for f in src["files"])
        return (f"The samples are rows of the files {src['repo']} released on the Hugging Face Hub"
                f"{' at revision `' + src['revision'] + '`' if src['revision'] else ''}, imported unchanged in "
                f"their order (`longsynth import-hf`): {files}; {checked} of {len(src['files'])} file(s) matched "
                f"the SHA-256 the Hub recorded. No seed regenerates them: `verify --deep` checks every row against "
                f"the task's definition instead.")
    if stream == "authors-pipeline":
        from longsynth import registry

        own = getattr(registry.get(manifest["task"]).authors_pipeline, "card", None)
        if own:  # a pipeline that is not one stream through train, val, test says what it is (RegBench's pool)
            return own
        return ("The samples are the authors' own data set for this seed (`longsynth.authors_dataset`): one "
                "sequential stream through the splits in the order train, val, test, each split continuing where "
                "the one before stopped and each row depending on every row before it, as the authors' pipeline "
                "draws its sets; the same command regenerates them bit for bit, but no row can be drawn alone.")
    if stream == "authors":
        return ("The samples are the authors' own stream for this seed (`longsynth.authors_stream`): each split "
                "is one sequential stream of its count, each row depending on every row before it; the same command "
                "regenerates them bit for bit, but no row can be drawn alone.")
    return ("Every sample is a pure function of (task, parameters, seed, split, index): the same command "
            "regenerates these rows bit for bit, and any row can be drawn alone (`longsynth.sample`).")


def dataset_card(task, cfg, manifest):
    counts = ", ".join(f"{s} {n}" for s, n in manifest["counts"].items())
    size = sum(r["bytes"] for s in manifest["splits"].values() for r in s["shards"])
    keys = "\n".join(
        f"| `{k}` | {v['dtype']} | {'[n, ' if v['ragged'] else '['}{', '.join(map(str, v['shape']))}] | {v['doc']} |"
        for k, v in manifest["keys"].items()
    )
    params = "\n".join(f"| `{k}` | {v} |" for k, v in manifest["params"].items())
    digests = "\n".join(f"| {s} | {i['count']} | `{i['digest']}` |" for s, i in manifest["splits"].items())
    origin = "Imported" if manifest.get("stream") == "imported" else f"Seed {manifest['seed']}"
    return f"""# {task.name} dataset (longsynth {manifest['versions']['longsynth']})

{task.summary}.

{task.card}

{law_text(manifest)}

Made by: `{manifest['command'] or 'longsynth.store.generate(...)'}`

{origin}; samples: {counts}; {size / 1e6:.1f} MB in
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

