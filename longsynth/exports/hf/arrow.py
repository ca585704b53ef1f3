"""Stored keys as ``datasets`` features and Arrow columns: typed arrays, ragged lists, and
Pathfinder's images as PNG; the Parquet options per column."""
from __future__ import annotations

import functools
import struct
import zlib

import datasets
import numpy as np
import pyarrow as pa

from longsynth.task import Ragged

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


LENGTH = "length"  # the column of the rows' lengths, where they vary (the Chomsky tasks, parity, modular arithmetic)


def row_lengths_of(task, cfg, specs):
    """``lengths(targets [n, L]) -> int64 [n]`` of the export's LENGTH column, or None: for the
    tasks whose rows vary in length (longsynth.stats.row_lengths, what ``info`` and ``show
    --stats`` count; -1 for a row without a scored target), unless a stored key has the name
    (ListOps stores its own ``length``). None for ``cfg`` None: the stored keys only."""
    from longsynth.stats import row_lengths

    if cfg is None or LENGTH in specs:
        return None
    return row_lengths(task, cfg)


def features(task, specs, cfg=None):
    """The stored keys' features, then (``cfg`` given) the derived LENGTH column where
    ``row_lengths_of`` has one: not a stored key, and so no part of a sample's digest."""
    feats = {k: feature(task, k, spec) for k, spec in specs.items()}
    if row_lengths_of(task, cfg, specs) is not None:
        feats[LENGTH] = datasets.Value("int64")
    return datasets.Features(feats)


def with_lengths(block, lengths):
    """``block`` with the LENGTH column that ``lengths`` (row_lengths_of) computes from its
    targets; ``block`` itself for None."""
    return block if lengths is None else {**block, LENGTH: lengths(block["targets"])}


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
