"""What a dataset directory holds and how its bytes are named: file names, keys, digests
and shard sizing. Everything else in the store builds on these; nothing here knows about
jobs, executors or readers. Atomic and staged file writes and file hashing, which the
exporters share, are in ``longsynth.files``.
"""
from __future__ import annotations

import hashlib
import re

import numpy as np

from longsynth.outdir import LOCK  # noqa: F401 - the output folder's lock, part of the layout
from longsynth.task import Ragged

FORMAT = "longsynth-shards"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CARD = "README.md"
DIGEST_KEY = "_digest"
CHECK_KEY = "_check"  # uint64 [count, keys in sorted order, 2]: longsynth.checksum.sum64 of each value
SHARD_RE = re.compile(r"^(train|val|test)-\d{5}\.h5$")
OURS_RE = re.compile(r"^(\.?(train|val|test)-\d{5}\.h5((\.[0-9a-z]+)?\.tmp)?"
                     r"|\.?manifest\.json(\.tmp)?|\.?README\.md(\.tmp)?|\.lock)$")
# a shard's temporary file: `.{name}.tmp` (local pool) or `.{name}.{attempt}.tmp` (an executor
# that may run two attempts of one shard at once, as Dask does after losing a worker)
TMP_RE = re.compile(r"^\.(train|val|test)-\d{5}\.h5(\.[0-9a-z]+)?\.tmp$")
COMPRESSIONS = ("none", "lzf", "gzip")
SHARD_BYTES = 128 << 20  # default shard size aims at this many bytes
RAGGED_ROWS = 8192  # assumed rows of a ragged key when sizing shards and chunks
BLOCK_BYTES = 8 << 20  # samples generated per call to the kernel
MAX_COUNT = 1 << 62  # samples per split: indices stay well inside int64
# shards per dataset: the manifest lists each (about 200 bytes a record, so 100,000 make 20 MB,
# a third of the 64 MB every reader accepts) and is rewritten after each one (docs/format.md)
MAX_SHARDS = 100_000
SCALAR_CHUNK = 1 << 16  # samples per chunk of a chunked scalar key


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


def sample_chunks(shape, count):
    """HDF5 chunk shape of a chunked fixed-shape key of per-sample ``shape`` in a shard of
    ``count`` samples: one sample per chunk, a scalar key in chunks of up to SCALAR_CHUNK
    samples (docs/format.md, "Shards"). Readers refuse any other chunking: a read of one
    sample must never decompress more than its own chunk."""
    shape = tuple(int(d) for d in shape)
    return (1,) + shape if shape else (min(int(count), SCALAR_CHUNK),)


def ragged_chunks(shape):
    """HDF5 chunk shape of a ragged key's ``values`` (rows of per-row ``shape``): about
    RAGGED_ROWS values a chunk."""
    shape = tuple(int(d) for d in shape)
    return (max(1, RAGGED_ROWS // max(1, int(np.prod(shape, dtype=np.int64)))),) + shape


def default_shard_size(task, cfg):
    return int(max(1, min(100_000, SHARD_BYTES // sample_bytes(task, cfg))))
