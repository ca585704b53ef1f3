"""Checking and describing a stored dataset: ``verify`` (sizes, SHA-256, structure,
digests; ``deep`` regenerates samples), ``info`` and the validation certificates kept
beside the shards.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os

import numpy as np

from longsynth import registry
from longsynth.api import authors_block
from longsynth.errors import DamagedDataError, LongsynthError
from longsynth.rng import SPLITS, split_code
from longsynth import safe
from longsynth.files import file_sha256
from longsynth.store import identity
from longsynth.store.layout import DIGEST_KEY, sample_digest
from longsynth.store.manifest import _jsonable, progress_of, read_manifest, writer
from longsynth.store.read import open
from longsynth.stats import split_statistics
from longsynth.task import Ragged

INCOMPLETE = "manifest: dataset is incomplete (generation did not finish)"


@dataclasses.dataclass
class Check:
    """What ``check`` found: ``damage`` (problems of the data written), whether the
    dataset is ``complete``, its ``written`` and ``total`` sample counts."""

    damage: list
    complete: bool
    written: int
    total: int


def verify(root, deep=False, samples=16, progress=None):
    """List of problems found (empty when the dataset is intact; an incomplete dataset
    lists ``INCOMPLETE`` first, then any damage of the shards written so far).

    Checks the manifest, every shard's size and SHA-256, its structure against the
    manifest, and each split digest. ``deep`` also regenerates ``samples`` indices per
    split (spread over the range) with the generator and compares their bytes.
    """
    c = check(root, deep, samples, progress)
    return ([] if c.complete else [INCOMPLETE]) + c.damage


def check(root, deep=False, samples=16, progress=None):
    """``verify`` as a ``Check``: an incomplete dataset (a gen that stopped) is told apart
    from a damaged one. A dataset another process is writing is refused (LongsynthError)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise LongsynthError(f"samples: must be an integer >= 1, got {samples!r}")
    m = read_manifest(root)
    if not m.get("complete"):
        pid = writer(root)
        if pid is not None:
            raise LongsynthError(f"{root}: is being written by process {pid}; verify it when that gen has finished")
    problems = []
    task = registry.get(m["task"])
    cfg = task.make_config(**m["params"])
    specs = task.keys(cfg)
    problems += fixed_problems(m, task, cfg)
    for split, info in m["splits"].items():
        expect = 0
        h = hashlib.sha256()
        who = identity.Expected.of(m, split, specs)
        for rec in info["shards"]:
            if progress is not None:
                progress(rec["file"])
            if rec["start"] != expect:
                problems.append(f"{rec['file']}: starts at {rec['start']}, expected {expect}")
            expect = rec["start"] + rec["count"]
            problems += _check_shard(root, rec, who, h)
        if m.get("complete") and expect != info["count"]:
            problems.append(f"{split}: shards cover {expect} samples, manifest says {info['count']}")
        if m.get("complete") and h.hexdigest() != info["digest"]:
            problems.append(f"{split}: split digest mismatch")
    if deep and not problems and m.get("complete"):
        problems += _deep_check(root, m, task, cfg, samples)
    return Check(problems, bool(m.get("complete")), *progress_of(m))


def fixed_problems(m, task, cfg):
    """The manifest's ``fixed`` against the draws the task makes for its config and seed:
    an entry it lacks or one it does not draw is a problem (their values are compared by
    ``--deep``)."""
    if task.fixed is None:  # the schema refuses entries then
        return []
    names = set(task.fixed_draws(cfg, m["seed"]))
    stored = set(m.get("fixed", {}))
    return ([f"manifest: fixed: lists {k[:40]!r}, which {task.name} does not draw" for k in sorted(stored - names)]
            + [f"manifest: fixed: lacks {k!r}, which {task.name} draws" for k in sorted(names - stored)])


def _check_shard(root, rec, who, h):
    """Problems of one shard: presence, size, SHA-256, identity and layout (as readers
    check them at open), offsets; its per-sample digests go into ``h``."""
    path = os.path.join(root, rec["file"])
    try:
        fd, f = identity.open_shard(path, rec["bytes"])
    except FileNotFoundError:
        return [f"{rec['file']}: missing"]
    except identity.Mismatch as e:
        return [f"{rec['file']}: {e}"]
    except LongsynthError as e:
        return [str(e)]
    out = []
    try:
        if file_sha256(path) != rec["sha256"]:
            out.append(f"{rec['file']}: SHA-256 mismatch (file changed or corrupt)")
        found = identity.problem(f, rec, who)
        if found is not None:
            return out + [f"{rec['file']}: {found}"]
        out += _check_structure(rec, f, who.specs)
        h.update(f[DIGEST_KEY][()].tobytes())
    except Exception as e:  # corrupt HDF5 can fail anywhere in h5py
        out.append(f"{rec['file']}: unreadable HDF5 ({type(e).__name__}: {' '.join(str(e).split())[:200]})")
    finally:
        f.close()
        os.close(fd)
    return out


def _check_structure(rec, f, specs):
    """Offsets of ragged keys (identity.problem has checked dtypes and shapes)."""
    out = []
    n = rec["count"]
    for k, spec in specs.items():
        if spec.ragged:
            off = f[k]["offsets"][()]
            if off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] != f[k]["values"].shape[0]:
                out.append(f"{rec['file']}: {k} offsets are inconsistent")
    if DIGEST_KEY not in f or f[DIGEST_KEY].shape != (n, 32):
        out.append(f"{rec['file']}: per-sample digests missing or malformed")
    return out


def _deep_check(root, m, task, cfg, samples):
    stored_rev = m.get("task_revision", 1)
    if stored_rev != task.revision:
        return [f"manifest: generated by revision {stored_rev} of {task.name}'s draws; this longsynth "
                f"draws revision {task.revision}, so samples cannot be regenerated (install the version "
                f"in manifest 'versions' to check them)"]
    if m.get("stream") == "imported":
        return _law_check(root, task, cfg)
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
            if m.get("stream", "longsynth") != "longsynth":
                block = authors_block(task, cfg, m["seed"], split, m["counts"], i, 1, m["stream"],
                                      verifying=True)
            else:
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


def _law_check(root, task, cfg):
    """Every row of an imported dataset against the task's definition (Task.law), since no seed
    regenerates them: the first row that breaks it in each split, or the block that fails its checksum."""
    problems = []
    ds = open(root)
    try:
        for split, sp in ds.splits.items():
            try:
                for lo, block in sp.iter_blocks(chunk=4096):
                    bad = task.law(cfg, block)
                    if bad is not None:
                        problems.append(f"{split}[{lo + bad[0]}]: {bad[1]} (the task's definition)")
                        break
            except DamagedDataError as e:
                problems.append(f"{split}: {e}")
    finally:
        ds.close()
    return problems


def info(root, samples=None, progress=None):
    """Summary of a dataset: configuration, counts, sizes, key shapes/dtypes, and value
    statistics per split over every sample (streamed block by block, each block checked),
    or over the first ``samples`` of each split when given: ``stats[split][key]``. Integer
    ``targets`` also get their class balance per split (share of each value; negative values
    mark unlabelled positions and are left out), token tasks their marginals and scored
    positions per split (``tokens[split]``), and parity and modular arithmetic their sequence
    lengths per split (``lengths[split]``, ``row_lengths``). ``progress`` follows the store's
    protocol."""
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        raise LongsynthError(f"samples: must be an integer >= 1, got {samples!r}")
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
        **({"source": m["source"]} if "source" in m else {}),
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
        try:
            out.update(_statistics(ds, samples, progress))
        finally:
            ds.close()
    val = latest_certificate(root)
    if val is not None:
        out["validation"] = val
    return out


def _statistics(ds, samples, progress):
    """Value statistics, token marginals, class balance and lengths, each per split (a split
    of other lengths or scored positions is not pooled with the others)."""
    per = split_statistics(ds, samples, progress)
    result = {"stats_samples": sum(st.samples for st in per.values()),
              "stats_per_split": {s: st.samples for s, st in per.items()},
              "stats": {s: {k: mo.summary() for k, mo in st.moments.items() if mo.n or any(mo.nonfinite.values())}
                        for s, st in per.items()}}
    if any(st.counts is not None for st in per.values()):
        result["balance"] = {s: b for s, st in per.items() if (b := st.balance()) is not None}
    if ds.task.family == "tokens":
        result["tokens"] = {s: st.tokens.summary() for s, st in per.items()}
    if ds.task.row_length_offset is not None:
        result["length_definition"] = ds.task.row_length_definition
        result["lengths"] = {s: L for s, st in per.items() if (L := st.length_summary()) is not None}
    return result


def latest_certificate(root):
    """metrics.json of the newest ``validation/*`` run in the dataset directory, if any.

    Certificates travel with a dataset folder: run folders and metrics.json are read only
    as a real folder and a regular file inside it (no links followed), bounded in size and
    depth, and must follow the certificate schema (longsynth.certificate: types, finite numbers,
    known names); anything else is one LongsynthError line naming the file and field."""
    vdir = os.path.join(root, "validation")
    if not os.path.isdir(vdir) or os.path.islink(vdir):
        return None
    runs = sorted(d for d in os.listdir(vdir) if os.path.isdir(os.path.join(vdir, d))
                  and not os.path.islink(os.path.join(vdir, d))
                  and os.path.lexists(os.path.join(vdir, d, "metrics.json")))
    if not runs:
        return None
    from longsynth import certificate  # pydantic: imported only when a certificate is read

    path = os.path.join(vdir, runs[-1], "metrics.json")
    data = certificate.check(safe.read_json(path, path, limit=certificate.MAX_BYTES), path)
    data["path"] = os.path.join(vdir, runs[-1])
    return data
