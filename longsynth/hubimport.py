"""``import-hf``: a Hugging Face Hub dataset that its authors released as files, written as longsynth
datasets without changing a row (docs/format.md, "Imported data").

The rows are read from the parquet files alone (pyarrow; nothing of the Hub's is run), after each
file's SHA-256 is checked against the Hub's record where the download left one (longsynth.hubfiles).
Two passes: the first reads every row and checks it against the task's definition (the importer's
``convert``) and each file against its split's law (``file_problem``), so a refusal comes before
anything is written; the second writes the shards. Each dataset's manifest has ``"stream":
"imported"`` and a ``source`` naming every file, its rows and SHA-256.

An importer is a module beside its task (generators/flipflop/hub.py) with REPO, TASK, COLUMN,
SPLITS {Hub split: (folder, p_ignore, our split)}, ``convert(texts, dtype, width) -> (rows, tally)``
(ValueError(row, text) for a row that is not the task's),
``file_problem(tally, params)`` and ``params(T, p)``.
"""
from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field

from longsynth import hubfiles, registry
from longsynth.errors import LongsynthError
from longsynth.files import file_sha256

IMPORTERS = {"synthseq/flipflop": "longsynth.generators.flipflop.hub"}
_PART = re.compile(r"(?P<split>[A-Za-z0-9_]+)-(?P<k>\d{5})-of-(?P<n>\d{5})(?:-[0-9a-f]+)?\.parquet")
READ_ROWS = 8192  # rows converted at a time
READ_BYTES = 8 << 20  # text converted at a time (a string longer than this alone)


def importer(repo):
    if repo not in IMPORTERS:
        raise LongsynthError(f"repo: {repo!r} is none of the Hub datasets longsynth imports ({', '.join(IMPORTERS)})")
    return importlib.import_module(IMPORTERS[repo])


@dataclass
class Part:
    file: hubfiles.HubFile
    split: str  # the Hub's
    rows: int = 0
    sha256: str = ""
    width: int = 0
    tally: object = None


@dataclass
class Target:
    """One dataset to write: its folder name, parameters and {our split: [parts in order]}."""
    name: str
    params: dict
    splits: dict = field(default_factory=dict)


def _parts(imp, src):
    """The Hub files of ``src`` grouped by split, each split whole (every k of its n parts)."""
    found = {}
    for f in hubfiles.files(src):
        base = os.path.basename(f.name)
        m = _PART.fullmatch(base)
        if m is None or m["split"] not in imp.SPLITS:
            raise LongsynthError(f"{f.name}: not a file of {imp.REPO}'s splits ({', '.join(imp.SPLITS)}: "
                                 f"SPLIT-00000-of-0000N-*.parquet)")
        found.setdefault(m["split"], []).append((int(m["k"]), int(m["n"]), f))
    if not found:
        raise LongsynthError(f"{src}: no parquet file of {imp.REPO} there (its data/SPLIT-*.parquet)")
    out = {}
    for split, items in found.items():
        items.sort(key=lambda x: x[0])
        n = items[0][1]
        if [k for k, _, _ in items] != list(range(n)) or any(m != n for _, m, _ in items):
            have = ", ".join(str(k) for k, _, _ in items)
            raise LongsynthError(f"{src}: {imp.REPO}'s {split} split is {n} file(s), found part(s) {have}; a split "
                                 f"is imported whole")
        out[split] = [Part(f, split) for _, _, f in items]
    return out


def _batches(path, column, longest=None):
    """Lists of the strings of ``column`` in the parquet file ``path``: at most READ_ROWS strings and, past the
    first, at most READ_BYTES of text at a time, whatever the file's pages hold (zstd makes a few kB of repetition
    into hundreds of MB of text, and converting a list holds some 20 times its text). A string longer than
    ``longest`` bytes is one line before it is read into Python."""
    try:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise LongsynthError('import-hf reads parquet with pyarrow: pip install "longsynth[hf]"') from None

    try:
        pf = pq.ParquetFile(path)
        typ = pf.schema_arrow.field(column).type if column in pf.schema_arrow.names else None
        leaf = next((i for i in range(len(pf.schema)) if pf.schema.column(i).path == column), None)
        md = pf.metadata
        per_row = max((md.row_group(g).column(leaf).total_uncompressed_size / max(1, md.row_group(g).num_rows)
                       for g in range(md.num_row_groups)), default=0) if leaf is not None else 0
    except (pa.ArrowException, OSError, ValueError, IndexError) as e:
        raise LongsynthError(f"{path}: not a readable parquet file ({' '.join(str(e).split())[:200]})") from None
    if typ is None or not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        raise LongsynthError(f"{path}: no string column {column!r} (columns: {', '.join(pf.schema_arrow.names)[:200]})")
    rows = max(1, min(READ_ROWS, int(READ_BYTES // max(per_row, 1))))  # the row groups' own sizes, as they declare
    seen = 0
    try:
        for batch in pf.iter_batches(batch_size=rows, columns=[column]):
            arr = batch.column(0)
            lengths = np.asarray(pc.binary_length(arr).fill_null(0), dtype=np.int64)
            if longest is not None and len(lengths) and lengths.max() > longest:
                i = int(np.argmax(lengths > longest))
                raise LongsynthError(f"{path}: row {seen + i:,} holds {int(lengths[i]):,} bytes of text, more than "
                                     f"the {longest:,} of the task's longest string; nothing written")
            ends = np.cumsum(lengths)
            start = 0
            while start < len(arr):  # READ_BYTES of text at a time, one string at least
                stop = max(start + 1, int(np.searchsorted(ends, (ends[start - 1] if start else 0) + READ_BYTES,
                                                          side="right")))
                yield arr.slice(start, stop - start).to_pylist()
                start = stop
            seen += len(arr)
    except pa.ArrowException as e:
        raise LongsynthError(f"{path}: unreadable parquet data ({' '.join(str(e).split())[:200]})") from None


def check(imp, src, progress=None):
    """The first pass: every file's SHA-256 against the Hub's record, every row through the importer's
    check, every file against its split's law. Returns ([Target], [notes])."""
    task = registry.get(imp.TASK)
    parts = _parts(imp, src)
    notes, width = [], None
    unchecked = [p.file.name for ps in parts.values() for p in ps if p.file.sha256 is None]
    if unchecked:
        notes.append(f"no Hub record of the SHA-256 of {len(unchecked)} file(s) beside them ({unchecked[0]}, ...): "
                     f"computed and kept in the manifest, checked against nothing")
    for split in parts:
        for p in parts[split]:
            p.sha256 = file_sha256(p.file.path)
            if p.file.sha256 is not None and p.sha256 != p.file.sha256:
                raise LongsynthError(f"{p.file.name}: SHA-256 {p.sha256[:16]}... is not the Hub's "
                                     f"{p.file.sha256[:16]}... (a damaged or changed file; download it again)")
    for split in parts:
        for p in parts[split]:
            folder, prob, _ = imp.SPLITS[split]
            for texts in _batches(p.file.path, imp.COLUMN, getattr(imp, "MAX_WIDTH", None)):
                if width is None and texts:
                    if not isinstance(texts[0], str):  # a null: a row of the Hub's data always holds its string
                        raise LongsynthError(f"{p.file.name} row 0: no string (a null); not {imp.REPO}'s data, "
                                             f"nothing written")
                    width = len(texts[0])
                    try:  # a string length the task cannot take is refused at the first row, not after them all
                        task.make_config(**imp.params(width, prob))
                    except (LongsynthError, TypeError, ValueError) as e:
                        raise LongsynthError(f"{p.file.name} row 0: strings of {width:,} characters: "
                                             f"{' '.join(str(e).split())[:200]}; nothing written") from None
                try:
                    _, tally = imp.convert(texts, "int8", width)
                except ValueError as e:
                    row, text = e.args
                    raise LongsynthError(f"{p.file.name} row {p.rows + row:,}: {text}; not {imp.REPO}'s data, "
                                         f"nothing written") from None
                p.tally = tally if p.tally is None else p.tally + tally
                p.rows += len(texts)
                if progress is not None:
                    progress(len(texts))
            if p.rows == 0:
                raise LongsynthError(f"{p.file.name}: no rows")
            bad = imp.file_problem(p.tally, prob)
            if bad is not None:
                raise LongsynthError(f"{p.file.name}: {bad}: not {imp.REPO}'s {split}, nothing written")
    targets = {}
    for split, ps in parts.items():
        folder, prob, ours = imp.SPLITS[split]
        params = imp.params(width, prob)
        task.make_config(**params)  # a width the task cannot take is refused here
        t = targets.setdefault(folder, Target(folder, params))
        t.splits[ours] = ps
    return list(targets.values()), notes


def source_record(imp, target):
    """The manifest's ``source``: the repository, the revision where known, and each file in order."""
    revs = {p.file.revision for ps in target.splits.values() for p in ps}
    return {"repo": imp.REPO, "revision": revs.pop() if len(revs) == 1 else None,
            "files": [{"name": p.file.name, "split": split, "hub_split": p.split, "rows": p.rows,
                       "sha256": p.sha256, "checked": p.file.sha256 is not None}
                      for split, ps in target.splits.items() for p in ps]}


class Reader:
    """Rows start..start+count-1 of one of a target's splits, in its files' order; the shards ask in order,
    so the files are read once, front to back."""

    def __init__(self, imp, target, dtype):
        self.imp, self.target, self.dtype = imp, target, dtype
        self.split, self.pos, self.buf, self.it = None, 0, None, None

    def _stream(self, split):
        for p in self.target.splits[split]:
            for texts in _batches(p.file.path, self.imp.COLUMN, getattr(self.imp, "MAX_WIDTH", None)):
                rows, _ = self.imp.convert(texts, self.dtype)  # the check passed every row
                yield rows

    def __call__(self, split, start, count):
        import numpy as np

        if split != self.split or start < self.pos:
            self.split, self.pos, self.buf, self.it = split, 0, None, self._stream(split)
        out = []
        while count:
            if self.buf is None or not len(self.buf["inputs"]):
                self.buf = next(self.it)
            skip = min(start - self.pos, len(self.buf["inputs"])) if start > self.pos else 0
            if skip:
                self.buf = {k: v[skip:] for k, v in self.buf.items()}
                self.pos += skip
                continue
            take = min(count, len(self.buf["inputs"]))
            out.append({k: v[:take] for k, v in self.buf.items()})
            self.buf = {k: v[take:] for k, v in self.buf.items()}
            self.pos += take
            start += take
            count -= take
        return {k: np.concatenate([o[k] for o in out]) for k in out[0]}


def import_hub(repo, src, out, *, shard_size=None, compression="none", command="", overwrite=False, progress=None,
               notify=None):
    """Import the Hub dataset ``repo`` from the folder ``src`` (a cache folder, one of its snapshots, or a
    ``--local-dir`` download) into one longsynth dataset per configuration under ``out``; returns {folder:
    manifest}. ``progress(desc)``: a callback of the store's protocol for each phase (the check, then each
    dataset's writing), or None."""
    from longsynth.store.build import write_rows

    imp = importer(repo)
    note = notify or (lambda line: None)
    bar = progress("checking") if progress else None
    if bar is not None:
        bar(None, total=None)
    targets, notes = check(imp, src, bar)
    for line in notes:
        note(line)
    task = registry.get(imp.TASK)
    out = os.path.abspath(out)
    done = {}
    for t in targets:
        dtype = task.keys(task.make_config(**t.params))["inputs"].dtype
        splits = {s: sum(p.rows for p in ps) for s, ps in t.splits.items()}
        done[t.name] = write_rows(os.path.join(out, t.name), imp.TASK, t.params, splits, source_record(imp, t),
                                  Reader(imp, t, dtype), shard_size=shard_size, compression=compression,
                                  command=command, overwrite=overwrite, progress=progress(t.name) if progress else None,
                                  notify=note)
    return done
