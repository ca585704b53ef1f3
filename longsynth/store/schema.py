"""The manifest, validated: every field ``manifest.json`` may hold is checked for type and
range before anything uses it, and counts, shard starts and file names for consistency with
each other, so a malformed or edited manifest is one line naming its field (docs/format.md,
"manifest.json" and "Trust").

One pydantic model per record (``Manifest``, ``Split``, ``Shard``, ``Key``, ``Source``,
``SourceFile``, ``Versions``; the language of every record longsynth reads: ``longsynth.fields``)
holds the types and ranges. What relates fields to each other and to the task is checked in
one place, ``Manifest._relations``: the task's parameters by the task's own config, its keys,
vocabulary and dataset-level draws, and the plan of each split (shard k is ``{split}-{k:05d}.h5``
and holds samples ``k*shard_size`` on).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BeforeValidator, Field, StrictBool, model_validator
from pydantic_core import PydanticCustomError

from longsynth.errors import LongsynthError
from longsynth.fields import Bad, Hex64, Int, Record, Text, kind, parse
from longsynth.store.layout import FORMAT, FORMAT_VERSION, MAX_COUNT

MAX_SEED = 2**63 - 1
MAX_BYTES = 1 << 50  # bytes of one shard
# whose samples: ours (per-sample law), the authors' sequential stream of each split, the authors' data set
# whose splits continue one stream (Task.authors_pipeline), or rows imported from the files the authors released
# (longsynth.hubimport; the manifest's "source" names them)
STREAMS = ("longsynth", "authors", "authors-pipeline", "imported")
MAX_SOURCE_FILES = 10_000
MAX_PARAMS = 64
VERSION_KEYS = ("longsynth", "python", "numpy", "numba", "h5py", "hdf5")
# an imported dataset's names reach its cards (markdown) and the terminal: plain characters only
_REPO = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
_FILE = r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,299}$"
_WORD = r"^[A-Za-z0-9_]{1,100}$"

Split = Literal["train", "val", "test"]  # longsynth.rng.SPLITS


def _scalar(v):
    """A task parameter as JSON holds it: a number, a string of at most 200 characters, a boolean or null."""
    if v is not None and not isinstance(v, (bool, int, float, str)):
        raise PydanticCustomError("scalar", "expected a number, string or boolean, got {kind}", {"kind": kind(v)})
    if isinstance(v, str) and len(v) > 200:
        raise PydanticCustomError("scalar", "longer than 200 characters")
    return v


Scalar = Annotated[Any, BeforeValidator(_scalar)]


class Shard(Record):
    """One shard's record: its file, first sample, samples, bytes and SHA-256."""

    file: Text(300)
    start: Int(0, MAX_COUNT)
    count: Int(1, MAX_COUNT)
    bytes: Int(0, MAX_BYTES)
    sha256: Hex64


class SplitRecord(Record):
    """A split's record: its count, its digest once complete, and the shards written so far."""

    count: Int(0, MAX_COUNT)
    digest: Optional[Hex64] = None
    shards: list[Shard]


class Key(Record):
    """One stored key: what the task stores under it (checked against the task's own spec)."""

    dtype: Text(100)
    shape: list[Int(-1, MAX_COUNT)]
    ragged: StrictBool
    doc: Text() = ""


class SourceFile(Record):
    """One file an imported split was read from."""

    name: Text(300, _FILE)
    split: Split
    hub_split: Text(100, _WORD)
    rows: Int(1, MAX_COUNT)
    sha256: Hex64
    checked: StrictBool


class Source(Record):
    """The files an imported dataset's rows came from (longsynth.hubimport)."""

    repo: Text(201, _REPO)
    revision: Optional[Text(40, r"^[0-9a-f]{40}$")] = None
    files: Annotated[list[SourceFile], Field(min_length=1, max_length=MAX_SOURCE_FILES)]


class Versions(Record):
    """The versions the dataset was written with (shown in its card)."""

    longsynth: Text(100)
    python: Text(100)
    numpy: Text(100)
    numba: Text(100)
    h5py: Text(100)
    hdf5: Text(100)


class Manifest(Record):
    """manifest.json (docs/format.md, "manifest.json")."""

    task: Text(100)
    task_revision: Int(1, 1 << 20) = 1
    params: Annotated[dict[str, Scalar], Field(max_length=MAX_PARAMS)]
    seed: Int(0, MAX_SEED)
    counts: dict[Split, Int(0, MAX_COUNT)]
    shard_size: Int(1, MAX_COUNT)
    compression: Literal["none", "lzf", "gzip"]  # layout.COMPRESSIONS
    keys: dict[Text(100), Key]
    fixed: dict[Text(100), Any] = {}
    stream: Literal["longsynth", "authors", "authors-pipeline", "imported"] = "longsynth"  # STREAMS
    source: Optional[Source] = None
    vocab: Optional[list[Text(100)]] = None
    versions: Versions
    command: Text() = ""
    complete: StrictBool
    generation: Optional[Text(64, r"^[0-9a-f]{16,64}$")] = None
    audit: Any = None
    splits: dict[Split, SplitRecord]

    @model_validator(mode="after")
    def _relations(self):
        from longsynth import registry

        try:
            task = registry.get(self.task)
        except LongsynthError as e:
            raise Bad("task", str(e).partition(": ")[2]) from None
        try:
            cfg = task.make_config(**self.params)
        except (LongsynthError, TypeError, ValueError, OverflowError) as e:
            raise Bad("params", " ".join(str(e).split())[:200]) from None
        self._keys(task.keys(cfg), task.name)
        if self.fixed and task.fixed is None:  # names against the task's draws: checks.fixed_problem (verify)
            raise Bad("fixed", f"{task.name} has no dataset-level draws, the manifest lists {len(self.fixed)}")
        needs = {"authors": (task.authors, "an authors' stream"),
                 "authors-pipeline": (task.authors_pipeline, "an authors' pipeline"),
                 "imported": (task.law, "law to check imported rows by")}.get(self.stream)
        if needs is not None and needs[0] is None:
            raise Bad("stream", f"{task.name} has no {needs[1]}")
        if self.stream == "imported":
            if self.source is None:
                raise Bad("source", "missing")
            self._source_rows()
        elif "source" in self.model_fields_set:
            raise Bad("source", "only an imported dataset names its source files")
        self.vocab = self._vocab(task, cfg)
        if set(self.splits) != set(self.counts):
            raise Bad("splits", f"has {', '.join(sorted(self.splits)) or 'no splits'}, counts has "
                                f"{', '.join(self.counts) or 'none'}")
        for split, rec in self.splits.items():
            self._plan(split, rec)
        return self

    def _keys(self, specs, task):
        if set(self.keys) != set(specs):
            raise Bad("keys", f"{', '.join(sorted(self.keys))[:200]} are not the keys {task} stores "
                              f"({', '.join(sorted(specs))})")
        self.keys = {k: self.keys[k] for k in specs}  # the task's order
        for k, spec in specs.items():
            v = self.keys[k]
            got, want = (v.dtype, v.shape, v.ragged), (spec.dtype, list(spec.shape), spec.ragged)
            if got != want:
                raise Bad(f"keys.{k}", f"{str(got)[:120]} is not what {task} stores with these params ({want})")

    def _source_rows(self):
        rows = dict.fromkeys(self.counts, 0)
        for i, f in enumerate(self.source.files):
            if f.split not in rows:
                raise Bad(f"source.files[{i}].split", f"not a split of this dataset ({', '.join(self.counts)})")
            rows[f.split] += f.rows
        for split, n in self.counts.items():
            if rows[split] != n:
                raise Bad("source.files", f"{rows[split]:,} rows of {split}, the split holds {n:,}")

    def _vocab(self, task, cfg):
        """The task's own vocabulary for ``cfg`` (None for a task without one): a manifest's
        ``vocab`` is a record of it, and one that differs is refused rather than shown (cards
        print it). Absent, it is the task's."""
        own = [str(t) for t in task.vocab(cfg)] if task.vocab is not None else None
        if self.vocab is None:
            return own
        if own is None:
            raise Bad("vocab", f"{task.name} has no vocabulary, the manifest lists {len(self.vocab):,} tokens")
        if self.vocab != own:
            first = next((i for i, (a, b) in enumerate(zip(self.vocab, own)) if a != b),
                         min(len(self.vocab), len(own)))
            raise Bad("vocab", f"is not the vocabulary of {task.name} with these params ({len(self.vocab):,} "
                               f"tokens, {task.name} has {len(own):,}; first difference at id {first})")
        return own

    def _plan(self, split, rec):
        """A split's shards are the plan's (shard k holds samples k*size..), sorted, each once,
        and a complete split has all of them and its digest."""
        field, n, size = f"splits.{split}", rec.count, self.shard_size
        if n != self.counts[split]:
            raise Bad(f"{field}.count", f"{n:,} differs from counts.{split} ({self.counts[split]:,})")
        if rec.digest is None and self.complete:
            raise Bad(f"{field}.digest", "missing in a complete dataset")
        planned = -(-n // size)
        if len(rec.shards) > planned:
            raise Bad(f"{field}.shards", f"{len(rec.shards):,} shards, but {n:,} samples in shards of {size:,} "
                                         f"make {planned:,}")
        if self.complete and len(rec.shards) != planned:
            raise Bad(f"{field}.shards", f"{len(rec.shards):,} shards cover {n:,} samples in shards of {size:,}; "
                                         f"a complete dataset has {planned:,}")
        last = -1
        for i, shard in enumerate(rec.shards):
            f, start = f"{field}.shards[{i}]", shard.start
            if start >= n:
                raise Bad(f"{f}.start", f"must be in 0..{max(0, n - 1):,}, got {start:,}")
            if start % size:
                raise Bad(f"{f}.start", f"{start:,} is not a multiple of shard_size {size:,}")
            k = start // size
            if k <= last:
                raise Bad(f"{f}.start", "shards must be listed once each, in index order")
            last = k
            want = min(size, n - start)
            if shard.count != want:
                raise Bad(f"{f}.count", f"{shard.count:,}, but the shard from {start:,} holds {want:,} samples")
            if shard.file != f"{split}-{k:05d}.h5":
                raise Bad(f"{f}.file", f"{shard.file[:80]!r} is not {split}-{k:05d}.h5, the shard from {start:,}")

    def to_dict(self):
        """The manifest as longsynth uses it: only the fields it knows, in their order, splits
        in train, val, test order; ``stream`` and ``source`` only where they are not ours."""
        order = [s for s in ("train", "val", "test") if s in self.counts]
        out = {"format": FORMAT, "format_version": FORMAT_VERSION, "task": self.task,
               "task_revision": self.task_revision, "params": dict(self.params), "seed": self.seed,
               "counts": {s: self.counts[s] for s in order}, "shard_size": self.shard_size,
               "compression": self.compression,
               "keys": {k: v.model_dump() for k, v in self.keys.items()}, "fixed": self.fixed}
        if self.stream != STREAMS[0]:
            out["stream"] = self.stream
        if self.source is not None:
            out["source"] = self.source.model_dump()
        out.update(vocab=self.vocab, versions=self.versions.model_dump(), command=self.command,
                   complete=self.complete)
        if self.generation is not None:
            out["generation"] = self.generation
        if "audit" in self.model_fields_set:
            out["audit"] = self.audit
        out["splits"] = {s: {"count": r.count, "digest": r.digest, "shards": [x.model_dump() for x in r.shards]}
                         for s in order for r in (self.splits[s],)}
        return out


def parse_manifest(raw, where):
    """The validated manifest (a new dict holding only the fields longsynth knows) from the
    JSON value ``raw``; LongsynthError naming ``where`` and the field otherwise."""
    if not isinstance(raw, dict):
        raise LongsynthError(f"{where}: manifest: expected an object, got {kind(raw)}")
    if raw.get("format") != FORMAT:
        raise LongsynthError(f"{where}: not a longsynth manifest")
    version = raw.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:  # 1.0 and true equal 1, and are not it
        raise LongsynthError(f"{where}: format version {str(version)[:20]} is not {FORMAT_VERSION}")
    return parse(Manifest, raw, where, "manifest").to_dict()
