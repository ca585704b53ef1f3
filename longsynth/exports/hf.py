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

Files hold about FILE_BYTES of Arrow data (``push_to_hub``'s default shard size), so a
large split has several that workers and nodes stream in parallel; row groups hold about
ROW_GROUP_BYTES, the unit that a streaming reader fetches.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import struct
import tempfile
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from longsynth import safe, values
from longsynth._version import __version__
from longsynth.errors import LongsynthError
from longsynth.files import PendingFiles
from longsynth.outdir import LOCK
from longsynth.store.read import Dataset
from longsynth.task import Ragged

SPLIT_NAMES = {"train": "train", "val": "validation", "test": "test"}  # longsynth -> Hugging Face
FILE_BYTES = 500_000_000
MIN_FILES, MIN_FILE_BYTES = 8, 32 << 20
ROW_GROUP_BYTES = 32 << 20
ROW_GROUP_ROWS = 1000  # at most; small samples would otherwise make row groups of 100K rows
PREVIEW_SAMPLES = 2
MARK = "longsynth.json"
LICENSE = "mit"  # the license longsynth is released under; the samples are its output
_TEMP_RE = re.compile(r"^\.(README\.md|longsynth\.json|preview\.png"
                      r"|(train|validation|test)-\d{5}-of-\d{5}\.parquet)\.tmp$")

# ---------------------------------------------------------------- features


def feature(task, key, spec):
    """The ``datasets`` feature of a stored key.

    Pathfinder's ``inputs`` and ``targets`` are images: PNG through ``Image``, which the Hub
    shows and decodes to the same uint8 pixels. Fixed shapes of 2 to 5 axes are ArrayND
    (``with_format("numpy")`` gives the stored array); 1 axis a fixed-length list.
    """
    if task.family == "pathfinder" and key in ("inputs", "targets") and spec.dtype == "uint8" and len(spec.shape) == 2:
        return datasets.Image()
    if spec.ragged:
        return datasets.List(_fixed_feature(spec.dtype, tuple(spec.shape)))
    if 2 <= len(spec.shape) <= 5:
        return getattr(datasets, f"Array{len(spec.shape)}D")(shape=tuple(spec.shape), dtype=spec.dtype)
    return _fixed_feature(spec.dtype, tuple(spec.shape))


def _fixed_feature(dtype, shape):
    if not shape:
        return datasets.Value(dtype)
    return datasets.List(_fixed_feature(dtype, shape[1:]), length=shape[0])


def features(task, specs):
    return datasets.Features({k: feature(task, k, spec) for k, spec in specs.items()})


# ---------------------------------------------------------------- PNG


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def png_gray8(image):
    """PNG file bytes of a uint8 [h, w] image: 8-bit grayscale, no row filter, zlib's
    run-length strategy.

    Written here rather than with PIL: PIL's encoder picks a row filter per row (adaptive
    filtering) and takes 3-5x longer on these mostly black images (256 px: 0.95-1.7 ms
    against 0.33 ms, at about the same size). zlib releases the GIL, so threads encode a
    block's images in parallel.
    """
    h, w = image.shape
    rows = np.zeros((h, w + 1), dtype=np.uint8)  # each row starts with its filter type, 0
    rows[:, 1:] = image
    z = zlib.compressobj(1, zlib.DEFLATED, 15, 8, zlib.Z_RLE)  # memLevel 9 costs 50 us more per image
    idat = z.compress(rows) + z.flush()
    return (_PNG_SIGNATURE + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b""))


# ---------------------------------------------------------------- columns


def _fixed_array(values, shape):
    """Flat values as nested fixed-size lists of ``shape`` (the last axis innermost)."""
    arr = pa.array(values)
    for d in reversed(shape):
        arr = pa.FixedSizeListArray.from_arrays(arr, d)
    return arr


def _column(feat, col, pool):
    """One block column (array [n, ...] or Ragged) as an Arrow array of ``feat``'s type."""
    if isinstance(feat, datasets.Image):
        pngs = list((pool.map if pool is not None else map)(png_gray8, col))
        return pa.StructArray.from_arrays([pa.array(pngs, pa.binary()), pa.nulls(len(pngs), pa.string())],
                                          fields=list(feat.pa_type))
    if isinstance(col, Ragged):
        inner = col.values.shape[1:]
        values = _fixed_array(np.ascontiguousarray(col.values).reshape(-1), inner)
        return pa.ListArray.from_arrays(pa.array(col.offsets.astype(np.int32)), values)
    col = np.ascontiguousarray(col)
    if not isinstance(feat, (datasets.Array2D, datasets.Array3D, datasets.Array4D, datasets.Array5D)):
        return _fixed_array(col.reshape(-1), col.shape[1:])
    arr = pa.array(col.reshape(-1))  # ArrayND's storage: lists of lists with regular offsets
    for d in reversed(col.shape[1:]):
        arr = pa.ListArray.from_arrays(_regular_offsets(len(arr) // d, d), arr)
    return pa.ExtensionArray.from_storage(feat(), arr)


@functools.lru_cache(maxsize=16)
def _regular_offsets(n, d):
    """Offsets 0, d, ..., n d of n lists of d values each: the same for every full block, so
    made once (for [4096, 1] samples they are as large as the values)."""
    return pa.array(np.arange(0, n * d + 1, d, dtype=np.int32))


def _batch(feats, schema, block, pool):
    return pa.RecordBatch.from_arrays([_column(feats[k], block[k], pool) for k in feats], schema=schema)


def _leaves(name, typ):
    """(Parquet path, Arrow type) of each leaf column of a field: lists as
    ``name.list.element``, struct fields as ``name.field``, the names that per-column
    Parquet options take."""
    if isinstance(typ, pa.ExtensionType):
        typ = typ.storage_type
    if pa.types.is_list(typ) or pa.types.is_fixed_size_list(typ) or pa.types.is_large_list(typ):
        return _leaves(f"{name}.list.element", typ.value_type)
    if pa.types.is_struct(typ):
        return [leaf for f in typ for leaf in _leaves(f"{name}.{f.name}", f.type)]
    return [(name, typ)]


def _parquet_options(schema):
    """Per-column encoding: integer columns (tokens, labels, counts) shrink with dictionaries
    and zstd; float noise does not, so it gets snappy (cheap, and it still squeezes zero
    padding); PNG bytes are compressed already. Statistics only for scalar columns, where
    a filter can use them."""
    compression, dictionary, stats = {}, [], []
    for field in schema:
        for path, typ in _leaves(field.name, field.type):
            if pa.types.is_binary(typ) or pa.types.is_string(typ):
                compression[path] = "none"
            elif pa.types.is_floating(typ):
                compression[path] = "snappy"
            else:
                compression[path] = "zstd"
                dictionary.append(path)
        if pa.types.is_primitive(field.type):
            stats.append(field.name)
    return {"compression": compression, "use_dictionary": dictionary or False, "write_statistics": stats or False}


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
    _, block = next(sp.iter_blocks(list(feats), chunk=16))
    batch = _batch(feats, schema, block, None)
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


def _write_file(dataset, f, path, feats, schema, options, group, pool, done, stop):
    """Samples f.start..f.stop-1 of one split as the Parquet file ``path``, in row groups of
    ``group`` rows (blocks end at shard boundaries; rows are regrouped). Returns the
    file's Arrow bytes. ``done(n)`` counts rows; ``stop`` (an Event) ends it early when
    another file failed."""
    sp = Dataset(dataset.root, dataset.manifest)[f.split]  # its own HDF5 handles
    nbytes, buffered, rows = 0, [], 0
    try:
        with pq.ParquetWriter(path, schema, **options) as writer:
            for first, block in sp.iter_blocks(list(feats), chunk=group, start=f.start, stop=f.stop):
                if stop.is_set():
                    return nbytes
                values.check(sp.specs, block, f"{f.split}[{first}..]", dataset.root)
                batch = _batch(feats, schema, block, pool)
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
        feats = features(ds.task, ds.task.keys(ds.config))
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


_OWN_RE = re.compile(r"^(README\.md|longsynth\.json|preview\.png"
                     r"|data/(train|validation|test)-\d{5}-of-\d{5}\.parquet)$")


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
    feats = features(dataset.task, dataset.task.keys(dataset.config))
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
            card = dataset_card(dataset, feats, files, nbytes, sizes, shown is not None)
            with open(pending.path(os.path.join(out, "README.md")), "w", encoding="utf-8") as f:
                f.write(card)
    except BaseException:
        if made_data:
            shutil.rmtree(os.path.join(out, "data"), ignore_errors=True)
        raise
    for rel in set(old) - set(written):  # what the replaced export had and this one does not
        _remove_own(out, rel)


def _preview(dataset, split, path):
    """The task's picture of the first samples of ``split``, written to ``path``. Drawn
    under a real name (the task's show picks the image format from the extension), then
    copied to ``path``."""
    samples = [split[i] for i in range(min(PREVIEW_SAMPLES, len(split)))]
    with tempfile.TemporaryDirectory() as tmp:
        drawn = os.path.join(tmp, "preview.png")
        dataset.task.show(samples, dataset.config, drawn)
        shutil.copyfile(drawn, path)


# ---------------------------------------------------------------- card

_DLR = """@article{gupta2022dlr,
  title   = {Simplifying and Understanding State Space Models with Diagonal Linear {RNN}s},
  author  = {Gupta, Ankit and Mehta, Harsh and Berant, Jonathan},
  journal = {arXiv preprint arXiv:2212.00768},
  year    = {2022}
}"""
_LRA = """@inproceedings{tay2021lra,
  title     = {Long Range Arena: A Benchmark for Efficient Transformers},
  author    = {Tay, Yi and Dehghani, Mostafa and Abnar, Samira and Shen, Yikang and Bahri, Dara and Pham, Philip
               and Rao, Jinfeng and Yang, Liu and Ruder, Sebastian and Metzler, Donald},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2021}
}"""
_PATHFINDER = """@inproceedings{linsley2018pathfinder,
  title     = {Learning long-range spatial dependencies with horizontal gated recurrent units},
  author    = {Linsley, Drew and Kim, Junkyung and Veerabadran, Vijay and Windolf, Charles and Serre, Thomas},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  year      = {2018}
}"""


def citations(task):
    """BibTeX of the papers that define the task: the DLR paper for its 13 tasks, LRA for
    classic ListOps, and Linsley et al. for the Pathfinder images; a task that names its
    own paper (``Task.citation``: the token tasks) that one."""
    if task.citation:
        return [task.citation]
    if task.name == "listops":
        return [_LRA]
    if task.family == "pathfinder":
        return [_DLR, _PATHFINDER]
    return [_DLR]


def _task_category(task, specs):
    if task.family == "pathfinder":
        return ["image-segmentation"]
    if task.family == "listops":
        return ["token-classification"] if specs["targets"].ragged else ["text-classification"]
    if task.family == "tokens":
        return ["text-generation"]
    return []


def _size_category(n):
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                         (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")):
        if n < limit:
            return label
    return "100M<n<1B"


def _feature_text(feat):
    if isinstance(feat, datasets.Image):
        return "Image (PNG, 8-bit gray)"
    return repr(feat)


def _shape_text(spec):
    dims = (["n"] if spec.ragged else []) + [str(d) for d in spec.shape]
    return f"[{', '.join(dims)}]" if dims else "scalar"


def dataset_card(dataset, feats, files, nbytes, sizes, preview):
    """README.md: the YAML that ``datasets`` and the Hub read, then the definition."""
    task, m = dataset.task, dataset.manifest
    specs = task.keys(dataset.config)
    counts = {SPLIT_NAMES[s]: len(sp) for s, sp in dataset.splits.items() if len(sp)}
    split_bytes = {name: sum(nbytes[f.rel] for f in files if SPLIT_NAMES[f.split] == name) for name in counts}
    split_files = {name: [f.rel for f in files if SPLIT_NAMES[f.split] == name] for name in counts}
    data = DatasetCardData(
        license=LICENSE,
        pretty_name=f"longsynth {task.name}",
        size_categories=[_size_category(sum(counts.values()))],
        task_categories=_task_category(task, specs) or None,
        tags=["synthetic", "long-range", "longsynth", task.name],
    )
    splits = datasets.SplitDict()
    for name, n in counts.items():
        splits.add(datasets.SplitInfo(name=name, num_bytes=split_bytes[name], num_examples=n))
    info = datasets.DatasetInfo(features=feats, splits=splits, download_size=sum(sizes.values()),
                                dataset_size=sum(split_bytes.values()))
    DatasetInfosDict({"default": info}).to_dataset_card_data(data)
    MetadataConfigs(
        {"default": {"data_files": [{"split": name, "path": f"data/{name}-*.parquet"} for name in split_files]}}
    ).to_dataset_card_data(data)

    v = m["versions"]
    keys = "\n".join(f"| `{k}` | {_feature_text(feats[k])} | {spec.dtype} | {_shape_text(spec)} | {spec.doc} |"
                     for k, spec in specs.items())
    params = "\n".join(f"| `{k}` | {val} |" for k, val in m["params"].items())
    split_rows = "\n".join(
        f"| {SPLIT_NAMES[s]} | {s} | {len(sp):,} | {len(split_files[SPLIT_NAMES[s]])} | `{m['splits'][s]['digest']}` |"
        for s, sp in dataset.splits.items() if len(sp))
    empty = [s for s, sp in dataset.splits.items() if not len(sp)]
    if empty:
        split_rows += f"\n\n{', '.join(empty)}: no samples, left out (`datasets` loads no empty split)."
    vocab = ""
    own = list(task.vocab(dataset.config)) if task.vocab is not None else None  # never the manifest's copy
    if own:
        vocab = ("\n## Vocabulary\n\nToken id -> token: "
                 + ", ".join(f"{i} `{t}`" for i, t in enumerate(own)) + ".\n")
    fixed = ""
    if m.get("fixed"):
        fixed = (f"\nDataset-level draws shared by every sample ({', '.join(f'`{k}`' for k in m['fixed'])}) are in "
                 f"`{MARK}` under `dataset.fixed`.\n")
    picture = "\n![the first samples](preview.png)\n" if preview else ""
    cite = "\n\n".join(citations(task))
    body = f"""
# longsynth {task.name}

{task.summary}.

{task.card}
{picture}
Generated by longsynth {v['longsynth']} (task revision {m.get('task_revision', 1)}) with

    {m['command'] or f"longsynth.store.generate({task.name!r}, ...)"}

Seed {m['seed']}. Every sample is a pure function of (task, parameters, seed, split, index):
the same command regenerates these rows bit for bit. Exported with longsynth
{__version__} (`longsynth export DIR --format hf`).

## Loading

```python
from datasets import load_dataset
ds = load_dataset("PATH_OR_REPO")                  # DatasetDict: {', '.join(split_files)}
ds = ds.with_format("numpy")                       # arrays with their stored dtypes and shapes
stream = load_dataset("PATH_OR_REPO", split="train", streaming=True)
```

Row i of a split is sample i of that split (longsynth's `val` is `validation`).

## Features

| column | feature | stored dtype | shape | meaning |
|---|---|---|---|---|
{keys}
{vocab}
## Parameters

| parameter | value |
|---|---|
{params}
{fixed}
## Splits

The digest is longsynth's: SHA-256 over the SHA-256 of every sample in index order (keys
sorted, each as `key|dtype|shape|` and its bytes; `longsynth.store.sample_digest`), so it
can be recomputed from these rows.

| split | longsynth split | samples | files | digest |
|---|---|---|---|---|
{split_rows}

Versions that generated the samples: longsynth {v['longsynth']}, Python {v['python']}, NumPy
{v['numpy']}, Numba {v['numba']}, h5py {v['h5py']}, HDF5 {v['hdf5']}.

## Citation

```bibtex
{cite}
```

## License

{LICENSE.upper()}, as longsynth, which generated the data.
"""
    return str(DatasetCard("---\n" + data.to_yaml() + "\n---\n" + body))
