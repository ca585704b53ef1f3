"""``hf``: a stored dataset as a Hugging Face dataset (Parquet files and a dataset card).

    OUT/README.md        dataset card: YAML metadata (configs with the data files of each
                         split, typed features, split sizes, license) and the definition
    OUT/preview.png      the task's picture of the first samples
    OUT/longsynth.json   the dataset's manifest (configuration, split digests, fixed draws,
                         vocabulary) and what this export wrote
    OUT/data/{split}-{k:05d}-of-{n:05d}.parquet

``datasets.load_dataset(OUT)`` returns a DatasetDict with train, validation (longsynth's
val) and test, and ``load_dataset(OUT, streaming=True)`` streams it; the directory is
ready for ``huggingface-cli upload REPO OUT --repo-type dataset``. Rows are the stored
samples in index order, one column per stored key, typed as stored (docs/export.md):
fixed-shape arrays as ``Array2D``..``Array5D`` or fixed-length lists, variable-length keys
as lists, and Pathfinder's image and label mask as ``Image`` (PNG), which the Hub previews.
Where the rows vary in length (the Chomsky tasks, parity, modular arithmetic) a ``length``
column (int64) follows: each row's length as ``info`` counts it, so that the test split's
lengths (the Chomsky tasks' 41-500) are told from train's; it is derived, no stored key.

Files hold about FILE_BYTES of Arrow data (``push_to_hub``'s default shard size), so a
large split has several that workers and nodes stream in parallel; row groups hold about
ROW_GROUP_BYTES, the unit that a streaming reader fetches.

Modules: this one plans the files and writes the export; ``arrow`` makes the features and
Arrow columns (Pathfinder's PNGs too), ``parquet`` writes the files on threads or
processes, ``card`` writes README.md, and ``layout`` names what OUT holds.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from longsynth import safe
from longsynth._version import __version__
from longsynth.errors import LongsynthError
from longsynth.exports.hf.arrow import (LENGTH, _batch, _parquet_options, feature, features, png_gray8,
                                        row_lengths_of, with_lengths)
from longsynth.exports.hf.card import LICENSE, citations, dataset_card
from longsynth.exports.hf.layout import _OWN_RE, _TEMP_RE, MARK, SPLIT_NAMES
from longsynth.exports.hf.parquet import _write_files
from longsynth.files import PendingFiles
from longsynth.outdir import LOCK

__all__ = ["FILE_BYTES", "LENGTH", "LICENSE", "MARK", "MIN_FILES", "MIN_FILE_BYTES", "PREVIEW_SAMPLES",
           "ROW_GROUP_BYTES", "ROW_GROUP_ROWS", "SPLIT_NAMES", "citations", "dataset_card", "feature", "features",
           "plan", "png_gray8", "row_lengths_of", "write"]

FILE_BYTES = 500_000_000
MIN_FILES, MIN_FILE_BYTES = 8, 32 << 20
ROW_GROUP_BYTES = 32 << 20
ROW_GROUP_ROWS = 1000  # at most; small samples would otherwise make row groups of 100K rows
PREVIEW_SAMPLES = 2


# ---------------------------------------------------------------- writing


@dataclass(frozen=True)
class _File:
    split: str  # longsynth's name
    rel: str  # path under OUT
    start: int
    stop: int


def _row_bytes(dataset, feats, schema):
    """Arrow bytes per row, from the first few samples (PNG and list sizes are not the
    stored sizes); 1 for a dataset without samples."""
    sp = next((s for s in dataset.splits.values() if len(s)), None)
    if sp is None:
        return 1
    _, block = next(sp.iter_blocks([k for k in feats if k in sp.specs], chunk=16))
    batch = _batch(feats, schema, with_lengths(block, row_lengths_of(dataset.task, dataset.config, sp.specs)), None)
    return max(1, batch.nbytes // batch.num_rows)


def plan(dataset, row_bytes):
    """(rows per row group, files): row groups of about ROW_GROUP_BYTES of stored data,
    files of whole row groups, at most FILE_BYTES of Arrow data each and at least one per
    MIN_FILE_BYTES up to MIN_FILES (a split of 256 MB has 8). Depends on the dataset only, never on the
    machine, so every export of a dataset has the same files. A split without samples gets
    no file: `datasets` cannot load an empty one, so it is left out of the card too."""
    m = dataset.manifest
    count = sum(len(s) for s in dataset.splits.values())
    stored = sum(r["bytes"] for s in m["splits"].values() for r in s["shards"])
    group = int(max(1, min(ROW_GROUP_ROWS, ROW_GROUP_BYTES // max(1, stored // max(1, count)))))
    files = []
    for split, sp in dataset.splits.items():
        n, size = len(sp), len(sp) * row_bytes
        if not n:
            continue
        k = max(-(-size // FILE_BYTES), min(MIN_FILES, size // MIN_FILE_BYTES), 1)
        rows = max(1, -(-n // k) // group) * group  # rows per file: whole row groups, rounded down
        k = -(-n // rows)
        name = SPLIT_NAMES[split]
        files += [_File(split, f"data/{name}-{i:05d}-of-{k:05d}.parquet", i * rows, min(n, (i + 1) * rows))
                  for i in range(k)]
    return group, files


def _previous_files(out):
    """Files of an earlier hf export in ``out``, which this one replaces. Temporary files
    that a killed export left are removed; a directory that holds anything else is
    refused, so an export never mixes with or deletes files it did not write. The earlier
    export's record (``longsynth.json``) is data from the folder: every file it lists must
    be one of the names this exporter writes (_OWN_RE), or the folder is refused."""
    if not os.path.isdir(out):
        return []
    safe.real_dir(os.path.join(out, "data"), "--out")
    for d in (out, os.path.join(out, "data")):
        for e in os.listdir(d) if os.path.isdir(d) else []:
            if _TEMP_RE.match(e):
                os.remove(os.path.join(d, e))
    entries = [e for e in os.listdir(out) if e != LOCK]  # the lock: this export's own
    if not entries or entries == ["data"] and not os.listdir(os.path.join(out, "data")):
        return []
    refused = LongsynthError(f"{out}: directory is not empty and holds no longsynth hf export; choose another --out")
    try:
        mark = safe.read_json(os.path.join(out, MARK), f"{out}/{MARK}")
    except (OSError, LongsynthError):
        raise refused from None
    export = mark.get("export") if isinstance(mark, dict) else None
    files = export.get("files") if isinstance(export, dict) else None
    if not isinstance(files, list) or export.get("format") != "hf":
        raise refused
    for i, rel in enumerate(files):
        if not isinstance(rel, str) or not _OWN_RE.match(rel):
            raise LongsynthError(f"{out}/{MARK}: export.files[{i}]: {str(rel)[:80]!r} is not a file an hf export "
                                 f"writes; choose another --out")
    return files


def _remove_own(out, rel):
    """Remove ``out/rel``, a name _OWN_RE matched, unless it is gone (a link is removed, never
    what it points to)."""
    try:
        os.remove(os.path.join(out, rel))
    except FileNotFoundError:
        pass


def write(dataset, out, progress, workers=None):
    """Every split of ``dataset`` as Parquet files under out/data, with the card and preview.

    ``workers``: processes that write the Parquet files, at most one per file (None or 1:
    threads of this process). The files are the same bytes whatever it is. Threads are the
    default because they were faster on every export measured (docs/benchmarks.md,
    "Hugging Face export"): a spawned writer needs about 2 s to start (a fresh interpreter
    importing pyarrow, datasets and the task registry), and the threads of one process
    already keep two cores busy, as Parquet encoding and zlib release the GIL."""
    from longsynth.store.checks import fixed_problems

    found = fixed_problems(dataset.manifest, dataset.task, dataset.config)  # the card names them
    if found:
        raise LongsynthError(f"{dataset.root}: {found[0]}; run `longsynth verify {dataset.root}`")
    old = _previous_files(out)
    feats = features(dataset.task, dataset.task.keys(dataset.config), dataset.config)  # LENGTH where rows vary
    schema = feats.arrow_schema
    group, files = plan(dataset, _row_bytes(dataset, feats, schema))
    shown = next((s for s in dataset.splits.values() if len(s)), None) if dataset.task.show else None
    made_data = not os.path.isdir(os.path.join(out, "data"))
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    try:
        with PendingFiles(out) as pending, ThreadPoolExecutor(1) as side:
            paths = {f.rel: pending.path(os.path.join(out, f.rel)) for f in files}
            if shown is not None:  # drawn while the Parquet files are written
                drawing = side.submit(_preview, dataset, shown, pending.path(os.path.join(out, "preview.png")))
            workers = max(1, min(workers or 1, len(files)))
            nbytes = _write_files(dataset, files, paths, feats, schema, _parquet_options(schema), group, progress,
                                  workers)
            if shown is not None:
                drawing.result()
            sizes = {rel: os.path.getsize(path) for rel, path in paths.items()}
            written = list(paths) + [MARK, "README.md"] + (["preview.png"] if shown is not None else [])
            mark = {"export": {"format": "hf", "longsynth": __version__, "files": written,
                               "splits": {SPLIT_NAMES[s]: s for s, sp in dataset.splits.items() if len(sp)}},
                    "dataset": dataset.manifest}
            with open(pending.path(os.path.join(out, MARK)), "w", encoding="utf-8") as f:
                json.dump(mark, f, indent=1, sort_keys=True)
                f.write("\n")
            derived = LENGTH in feats and LENGTH not in dataset.task.keys(dataset.config)
            card = dataset_card(dataset, feats, files, nbytes, sizes, shown is not None,
                                _length_ranges(files, paths) if derived else None)
            with open(pending.path(os.path.join(out, "README.md")), "w", encoding="utf-8") as f:
                f.write(card)
    except BaseException:
        if made_data:
            shutil.rmtree(os.path.join(out, "data"), ignore_errors=True)
        raise
    for rel in set(old) - set(written):  # what the replaced export had and this one does not
        _remove_own(out, rel)


def _length_ranges(files, paths):
    """{longsynth split: (shortest, longest)} of the LENGTH column, read from the written
    files' row-group statistics (no row is read again)."""
    import pyarrow.parquet as pq

    out = {}
    for f in files:
        meta = pq.ParquetFile(paths[f.rel]).metadata
        at = next(j for j in range(meta.num_columns) if meta.schema.column(j).path == LENGTH)
        for g in range(meta.num_row_groups):
            st = meta.row_group(g).column(at).statistics
            lo, hi = out.get(f.split, (st.min, st.max))
            out[f.split] = (min(lo, st.min), max(hi, st.max))
    return out


def _preview(dataset, split, path):
    """The task's picture of the first samples of ``split``, written to ``path``. Drawn
    under a real name (the task's show picks the image format from the extension), then
    copied to ``path``."""
    samples = [split[i] for i in range(min(PREVIEW_SAMPLES, len(split)))]
    with tempfile.TemporaryDirectory() as tmp:
        drawn = os.path.join(tmp, "preview.png")
        dataset.task.show(samples, dataset.config, drawn)
        shutil.copyfile(drawn, path)
