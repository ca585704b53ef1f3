"""The manifest, validated: every field ``manifest.json`` may hold is checked for type and
range before anything uses it, and counts, shard starts and file names for consistency
with each other, so a malformed or edited manifest is one line naming its field
(docs/format.md, "manifest.json" and "Trust").

A hand parser rather than a schema library: the rules that matter here (shard k is
``{split}-{k:05d}.h5`` and holds samples ``k*shard_size`` on; keys as the task declares
them) are relations between fields, which a schema library would leave to validators
written like these anyway, and longsynth gains no dependency. A manifest of 1,000 shards
parses in about 4 ms, relations included (docs/benchmarks.md, "Manifest parsing").
"""
from __future__ import annotations

import re

from longsynth.errors import LongsynthError
from longsynth.rng import SPLITS
from longsynth import safe
from longsynth.store.layout import COMPRESSIONS, FORMAT, FORMAT_VERSION, MAX_COUNT

MAX_SEED = 2**63 - 1
MAX_BYTES = 1 << 50  # bytes of one shard
# whose samples: ours (per-sample law), the authors' sequential stream of each split, the authors' data set
# whose splits continue one stream (Task.authors_pipeline), or rows imported from the files the authors released
# (longsynth.hubimport; the manifest's "source" names them)
STREAMS = ("longsynth", "authors", "authors-pipeline", "imported")
MAX_SOURCE_FILES = 10_000
# an imported dataset's names reach its cards (markdown) and the terminal: plain characters only
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,299}$")
_WORD = re.compile(r"^[A-Za-z0-9_]{1,100}$")
MAX_TEXT = 10_000  # characters of a free-text field (command, versions, docs)
MAX_PARAMS = 64
VERSION_KEYS = ("longsynth", "python", "numpy", "numba", "h5py", "hdf5")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_GENERATION = re.compile(r"^[0-9a-f]{16,64}$")


class _Fields:
    """Checks of one JSON object; errors name the field by its dotted path."""

    def __init__(self, where):
        self.where = where

    def bad(self, field, text):
        return LongsynthError(f"{self.where}: {field}: {text}")

    def obj(self, value, field):
        if not isinstance(value, dict):
            raise self.bad(field, f"expected an object, got {_kind(value)}")
        return value

    def get(self, obj, name, field, default=KeyError):
        if name not in obj:
            if default is KeyError:
                raise self.bad(field, "missing")
            return default
        return obj[name]

    def int(self, value, field, lo, hi):
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad(field, f"expected an integer, got {_kind(value)}")
        if not lo <= value <= hi:
            raise self.bad(field, f"must be in {lo}..{hi:,}, got {value:,}" if value.bit_length() < 80
                           else f"must be in {lo}..{hi:,}, got an integer of {value.bit_length()} bits")
        return value

    def str(self, value, field, limit=MAX_TEXT, pattern=None):
        if not isinstance(value, str):
            raise self.bad(field, f"expected a string, got {_kind(value)}")
        if len(value) > limit:
            raise self.bad(field, f"longer than {limit:,} characters")
        if pattern is not None and not pattern.match(value):
            raise self.bad(field, f"{value[:80]!r} is malformed")
        return value

    def bool(self, value, field):
        if not isinstance(value, bool):
            raise self.bad(field, f"expected true or false, got {_kind(value)}")
        return value

    def list(self, value, field):
        if not isinstance(value, list):
            raise self.bad(field, f"expected a list, got {_kind(value)}")
        return value


def _kind(value):
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def parse_manifest(raw, where):
    """The validated manifest (a new dict holding only the fields longsynth knows) from the
    JSON value ``raw``; LongsynthError naming ``where`` and the field otherwise."""
    from longsynth import registry

    c = _Fields(where)
    m = c.obj(raw, "manifest")
    if m.get("format") != FORMAT:
        raise LongsynthError(f"{where}: not a longsynth manifest")
    if m.get("format_version") != FORMAT_VERSION:
        raise LongsynthError(f"{where}: format version {str(m.get('format_version'))[:20]} is not {FORMAT_VERSION}")
    out = {"format": FORMAT, "format_version": FORMAT_VERSION}
    out["task"] = c.str(c.get(m, "task", "task"), "task", 100)
    try:
        task = registry.get(out["task"])
    except LongsynthError as e:
        raise c.bad("task", str(e).partition(": ")[2]) from None
    out["task_revision"] = c.int(c.get(m, "task_revision", "task_revision", 1), "task_revision", 1, 1 << 20)
    params = c.obj(c.get(m, "params", "params"), "params")
    if len(params) > MAX_PARAMS:
        raise c.bad("params", f"more than {MAX_PARAMS} parameters")
    for k, v in params.items():
        if v is not None and not isinstance(v, (bool, int, float, str)):
            raise c.bad(f"params.{k[:40]}", f"expected a number, string or boolean, got {_kind(v)}")
        if isinstance(v, str):
            c.str(v, f"params.{k[:40]}", 200)
    try:
        cfg = task.make_config(**params)
    except (LongsynthError, TypeError, ValueError, OverflowError) as e:
        raise c.bad("params", " ".join(str(e).split())[:200]) from None
    out["params"] = dict(params)
    out["seed"] = c.int(c.get(m, "seed", "seed"), "seed", 0, MAX_SEED)
    counts = c.obj(c.get(m, "counts", "counts"), "counts")
    for s in counts:
        if s not in SPLITS:
            raise c.bad(f"counts.{s[:20]}", f"not a split ({', '.join(SPLITS)})")
    out["counts"] = {s: c.int(counts[s], f"counts.{s}", 0, MAX_COUNT) for s in SPLITS if s in counts}
    out["shard_size"] = size = c.int(c.get(m, "shard_size", "shard_size"), "shard_size", 1, MAX_COUNT)
    out["compression"] = c.get(m, "compression", "compression")
    if out["compression"] not in COMPRESSIONS:
        raise c.bad("compression", f"must be one of {', '.join(COMPRESSIONS)}")
    out["keys"] = _keys(c, c.get(m, "keys", "keys"), task.keys(cfg), task.name)
    out["fixed"] = c.obj(c.get(m, "fixed", "fixed", {}), "fixed")
    if out["fixed"] and task.fixed is None:  # names against the task's draws: checks.fixed_problem (verify)
        raise c.bad("fixed", f"{task.name} has no dataset-level draws, the manifest lists {len(out['fixed'])}")
    stream = c.get(m, "stream", "stream", STREAMS[0])
    if stream not in STREAMS:
        raise c.bad("stream", f"must be one of {', '.join(STREAMS)}")
    if stream == "authors" and task.authors is None:
        raise c.bad("stream", f"{task.name} has no authors' stream")
    if stream == "authors-pipeline" and task.authors_pipeline is None:
        raise c.bad("stream", f"{task.name} has no authors' pipeline")
    if stream == "imported" and task.law is None:
        raise c.bad("stream", f"{task.name} has no law to check imported rows by")
    if stream != STREAMS[0]:
        out["stream"] = stream
    if stream == "imported":
        out["source"] = _source(c, c.get(m, "source", "source"), out["counts"])
    elif "source" in m:
        raise c.bad("source", "only an imported dataset names its source files")
    out["vocab"] = _vocab(c, c.get(m, "vocab", "vocab", None), task, cfg)
    versions = c.obj(c.get(m, "versions", "versions"), "versions")
    out["versions"] = {k: c.str(c.get(versions, k, f"versions.{k}"), f"versions.{k}", 100) for k in VERSION_KEYS}
    out["command"] = c.str(c.get(m, "command", "command", ""), "command")
    out["complete"] = c.bool(c.get(m, "complete", "complete"), "complete")
    generation = c.get(m, "generation", "generation", None)
    if generation is not None:
        out["generation"] = c.str(generation, "generation", 64, _GENERATION)
    if "audit" in m:
        out["audit"] = m["audit"]
    splits = c.obj(c.get(m, "splits", "splits"), "splits")
    if set(splits) != set(out["counts"]):
        raise c.bad("splits", f"has {', '.join(sorted(splits)) or 'no splits'}, counts has "
                              f"{', '.join(out['counts']) or 'none'}")
    out["splits"] = {s: _split(c, splits[s], s, out["counts"][s], size, out["complete"]) for s in out["counts"]}
    return out


def _source(c, raw, counts):
    """An imported dataset's files: repository, revision, and each file's name, split, rows and SHA-256, whose
    rows add up to the split's count."""
    src = c.obj(raw, "source")
    out = {"repo": c.str(c.get(src, "repo", "source.repo"), "source.repo", 201, _REPO),
           "revision": c.get(src, "revision", "source.revision", None)}
    if out["revision"] is not None:
        out["revision"] = c.str(out["revision"], "source.revision", 40, re.compile(r"^[0-9a-f]{40}$"))
    files = c.list(c.get(src, "files", "source.files"), "source.files")
    if not files or len(files) > MAX_SOURCE_FILES:
        raise c.bad("source.files", f"expected 1 to {MAX_SOURCE_FILES:,} files, got {len(files):,}")
    out["files"], rows = [], dict.fromkeys(counts, 0)
    for i, f in enumerate(files):
        f = c.obj(f, f"source.files[{i}]")
        split = c.get(f, "split", f"source.files[{i}].split")
        if split not in counts:
            raise c.bad(f"source.files[{i}].split", f"not a split of this dataset ({', '.join(counts)})")
        rec = {"name": c.str(c.get(f, "name", f"source.files[{i}].name"), f"source.files[{i}].name", 300, _FILE),
               "split": split,
               "hub_split": c.str(c.get(f, "hub_split", f"source.files[{i}].hub_split"),
                                  f"source.files[{i}].hub_split", 100, _WORD),
               "rows": c.int(c.get(f, "rows", f"source.files[{i}].rows"), f"source.files[{i}].rows", 1, MAX_COUNT),
               "sha256": c.str(c.get(f, "sha256", f"source.files[{i}].sha256"), f"source.files[{i}].sha256", 64,
                               _HEX64),
               "checked": c.bool(c.get(f, "checked", f"source.files[{i}].checked"), f"source.files[{i}].checked")}
        out["files"].append(rec)
        rows[split] += rec["rows"]
    for split, n in counts.items():
        if rows[split] != n:
            raise c.bad("source.files", f"{rows[split]:,} rows of {split}, the split holds {n:,}")
    return out


def _vocab(c, vocab, task, cfg):
    """The task's own vocabulary for ``cfg`` (None for a task without one): a manifest's
    ``vocab`` is a record of it, and one that differs is refused rather than shown (cards
    print it). Absent, it is the task's."""
    own = [str(t) for t in task.vocab(cfg)] if task.vocab is not None else None
    if vocab is None:
        return own
    vocab = [c.str(t, f"vocab[{i}]", 100) for i, t in enumerate(c.list(vocab, "vocab"))]
    if own is None:
        raise c.bad("vocab", f"{task.name} has no vocabulary, the manifest lists {len(vocab):,} tokens")
    if vocab != own:
        first = next((i for i, (a, b) in enumerate(zip(vocab, own)) if a != b), min(len(vocab), len(own)))
        raise c.bad("vocab", f"is not the vocabulary of {task.name} with these params ({len(vocab):,} tokens, "
                             f"{task.name} has {len(own):,}; first difference at id {first})")
    return own


def _keys(c, keys, specs, task):
    keys = c.obj(keys, "keys")
    if set(keys) != set(specs):
        raise c.bad("keys", f"{', '.join(sorted(map(str, keys)))[:200]} are not the keys {task} stores "
                            f"({', '.join(sorted(specs))})")
    out = {}
    for k, spec in specs.items():
        v = c.obj(keys[k], f"keys.{k}")
        got = (v.get("dtype"), v.get("shape"), v.get("ragged"))
        if got != (spec.dtype, list(spec.shape), spec.ragged):
            raise c.bad(f"keys.{k}", f"{str(got)[:120]} is not what {task} stores with these params "
                                     f"({(spec.dtype, list(spec.shape), spec.ragged)})")
        out[k] = {"dtype": spec.dtype, "shape": list(spec.shape), "ragged": spec.ragged,
                  "doc": c.str(c.get(v, "doc", f"keys.{k}.doc", ""), f"keys.{k}.doc")}
    return out


def _split(c, info, split, count, size, complete):
    """A split's record: its shards are the plan's (shard k holds samples k*size..), sorted,
    each once, and a complete split has all of them and its digest."""
    field = f"splits.{split}"
    info = c.obj(info, field)
    n = c.int(c.get(info, "count", f"{field}.count"), f"{field}.count", 0, MAX_COUNT)
    if n != count:
        raise c.bad(f"{field}.count", f"{n:,} differs from counts.{split} ({count:,})")
    digest = c.get(info, "digest", f"{field}.digest", None)
    if digest is not None:
        c.str(digest, f"{field}.digest", 64, _HEX64)
    elif complete:
        raise c.bad(f"{field}.digest", "missing in a complete dataset")
    shards = c.list(c.get(info, "shards", f"{field}.shards"), f"{field}.shards")
    planned = -(-n // size)
    if len(shards) > planned:
        raise c.bad(f"{field}.shards", f"{len(shards):,} shards, but {n:,} samples in shards of {size:,} make "
                                       f"{planned:,}")
    if complete and len(shards) != planned:
        raise c.bad(f"{field}.shards", f"{len(shards):,} shards cover {n:,} samples in shards of {size:,}; "
                                       f"a complete dataset has {planned:,}")
    records, last = [], -1
    for i, rec in enumerate(shards):
        f = f"{field}.shards[{i}]"
        rec = c.obj(rec, f)
        start = c.int(c.get(rec, "start", f"{f}.start"), f"{f}.start", 0, max(0, n - 1))
        if start % size:
            raise c.bad(f"{f}.start", f"{start:,} is not a multiple of shard_size {size:,}")
        k = start // size
        if k <= last:
            raise c.bad(f"{f}.start", "shards must be listed once each, in index order")
        last = k
        want = min(size, n - start)
        got = c.int(c.get(rec, "count", f"{f}.count"), f"{f}.count", 1, MAX_COUNT)
        if got != want:
            raise c.bad(f"{f}.count", f"{got:,}, but the shard from {start:,} holds {want:,} samples")
        name = safe.plain_name(c.get(rec, "file", f"{f}.file"), f"{c.where}: {f}.file")
        if name != f"{split}-{k:05d}.h5":
            raise c.bad(f"{f}.file", f"{name[:80]!r} is not {split}-{k:05d}.h5, the shard from {start:,}")
        records.append({"file": name, "start": start, "count": got,
                        "bytes": c.int(c.get(rec, "bytes", f"{f}.bytes"), f"{f}.bytes", 0, MAX_BYTES),
                        "sha256": c.str(c.get(rec, "sha256", f"{f}.sha256"), f"{f}.sha256", 64, _HEX64)})
    return {"count": n, "digest": digest, "shards": records}
