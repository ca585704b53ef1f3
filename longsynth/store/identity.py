"""A shard's identity, checked when it is opened: the file is the one the manifest lists.

Every shard carries in its HDF5 attributes the task, task revision, parameters, seed,
split, first index, sample count and the dataset's generation id (docs/format.md,
"Shards"); its datasets' dtypes and shapes are those the task declares, stored contiguously
or in the chunks longsynth writes (one sample per chunk). ``problem``
compares all of it with what the reader expects, once per shard and process, so a
same-size shard of another index range, seed or dataset, a crafted shard of another dtype,
or a dataset regenerated under an open reader is refused with one line instead of being
served. HDF5 links to other files and virtual or external-storage datasets are refused
too: a shard reads nothing outside itself.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from longsynth import safe
from longsynth.store.layout import CHECK_KEY, DIGEST_KEY, FORMAT, ragged_chunks, sample_chunks


@dataclass(frozen=True)
class Expected:
    """What every shard of one split of one dataset must say about itself."""

    task: str
    revision: int
    params: dict
    seed: int
    split: str
    generation: str | None  # None: a dataset written before generation ids (weaker check)
    specs: dict  # key -> KeySpec

    @classmethod
    def of(cls, manifest, split, specs):
        return cls(manifest["task"], manifest.get("task_revision", 1), manifest["params"], manifest["seed"], split,
                   manifest.get("generation"), specs)


class Mismatch(ValueError):
    """A shard that is not what the manifest lists (the caller adds the path)."""


def open_shard(path, size):
    """(fd, h5py.File) of the shard at ``path``: opened without following a link, a regular
    file of ``size`` bytes; HDF5 reads the very file that was checked (through
    /proc/self/fd where there is one). Raises FileNotFoundError, LongsynthError, or
    Mismatch(text) for a size mismatch or unreadable HDF5 (the caller words it)."""
    import h5py

    fd = safe.open_regular(path)
    try:
        got = os.fstat(fd).st_size
        if got != size:
            raise Mismatch(f"shard is {got} bytes, the manifest says {size} (truncated or replaced)")
        via = f"/proc/self/fd/{fd}"
        try:
            f = h5py.File(via if os.path.exists(via) else path, "r")
        except OSError as e:
            raise Mismatch(f"unreadable HDF5 ({' '.join(str(e).split())[:200]})") from None
    except BaseException:
        os.close(fd)
        raise
    return fd, f


def problem(f, rec, expect):
    """The first way the open shard ``f`` differs from manifest record ``rec`` of a split
    described by ``expect`` (an ``Expected``), as text; None when it is that shard."""
    try:
        return _attrs_problem(f.id, rec, expect) or _layout_problem(f, rec["count"], expect.specs)
    except (OSError, KeyError, RuntimeError, ValueError, TypeError) as e:  # a damaged file fails anywhere in h5py
        return f"unreadable HDF5 metadata ({type(e).__name__}: {' '.join(str(e).split())[:160]})"


_VLEN = object()  # an attribute stored in the global heap (shards of before fixed-length strings)


def _attr(obj, name):
    """Attribute ``name``: an int, a str (fixed-length bytes, decoded), None when absent, or
    _VLEN for any other type, which is never read (variable-length data lives in the global
    heap, and HDF5 can loop forever on a damaged one). Low-level calls: one open per
    attribute."""
    import h5py

    try:
        a = h5py.h5a.open(obj, name.encode())
    except KeyError:
        return None
    if a.shape != () or a.dtype.kind not in "iuS":
        return _VLEN
    v = np.empty((), dtype=a.dtype)
    a.read(v)
    v = v.item()
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _attrs_problem(fid, rec, expect):
    fmt = _attr(fid, "format")
    if fmt is _VLEN:  # written before fixed-length attributes: only its numbers are read
        if expect.generation is not None:
            return "shard of a dataset written before generation ids, under a manifest that has one (a mixed folder)"
        return _numbers_problem(fid, rec, expect)
    if fmt != FORMAT:
        return "not a longsynth shard"
    generation = _attr(fid, "generation")
    if expect.generation is not None and generation != expect.generation:
        if generation is None:
            return "shard of a dataset written before generation ids, under a manifest that has one (a mixed folder)"
        return (f"shard of generation {str(generation)[:64]}, the manifest read at open says {expect.generation}: "
                f"the dataset was regenerated or replaced; open it again")
    for name, value in {"task": expect.task, "split": expect.split}.items():
        got = _attr(fid, name)
        if got != value:
            return f"shard holds {name} {str(got)[:64]}, the manifest says {value} (a shard of another dataset)"
    found = _numbers_problem(fid, rec, expect)
    if found:
        return found
    revision = _attr(fid, "task_revision")
    if revision != expect.revision:
        return f"shard holds task revision {revision}, the manifest says {expect.revision}"
    params = _attr(fid, "params")
    try:
        same = isinstance(params, str) and json.loads(params) == expect.params
    except (ValueError, RecursionError):
        same = False
    if not same:
        return "shard holds other task parameters than the manifest (a shard of another dataset)"
    return None


def _numbers_problem(fid, rec, expect):
    for name, value in {"seed": expect.seed, "start": rec["start"], "count": rec["count"]}.items():
        got = _attr(fid, name)
        if got != value or type(got) is not int:
            return (f"shard holds {name} {str(got)[:64]}, the manifest says {value} "
                    "(a shard of another dataset or range)")
    return None


def _members(g):
    """Names in group ``g`` -> whether each is a hard link (external and soft links are
    never followed)."""
    import h5py

    names = []
    g.id.links.iterate(lambda name: names.append(name) and None)
    return {n.decode("utf-8", "surrogateescape"): g.id.links.get_info(n).type == h5py.h5l.TYPE_HARD for n in names}


def _dataset_problem(g, members, name, dtype, shape, label, chunks=None):
    """Why ``g[name]`` is not a plain dataset of ``dtype`` and ``shape`` holding its own
    data, or None. ``shape`` None: any number of rows of the per-row shape ``dtype``'s key.
    ``chunks``: the chunk shape longsynth writes it in when chunked (None: it is always
    contiguous); any other chunking is refused, as a read of one sample would decompress
    every sample the chunk holds (one chunk of a whole shard: a decompression bomb)."""
    import h5py

    if name not in members:
        return f"{label} missing"
    d = g[name]
    if not isinstance(d, h5py.Dataset):
        return f"{label} is not an HDF5 dataset"
    dcpl = d.id.get_create_plist()
    if dcpl.get_layout() == h5py.h5d.VIRTUAL or dcpl.get_external_count():
        return f"{label} reads its data from other files (virtual or external storage); refused"
    got_dtype, got_shape = d.id.dtype, d.id.shape
    if got_dtype != np.dtype(dtype) or (got_shape != shape if shape[0] is not None
                                        else (len(got_shape) != len(shape) or got_shape[1:] != shape[1:])):
        return f"{label} is {got_dtype} {got_shape}, expected {np.dtype(dtype)} {shape}"
    if dcpl.get_layout() == h5py.h5d.CHUNKED:
        got_chunks = tuple(int(d) for d in dcpl.get_chunk())
        if got_chunks != chunks:
            want = f"chunks of {chunks}" if chunks is not None else "contiguous storage"
            return (f"{label} is stored in chunks of {got_chunks}, not in {want} as longsynth writes it (a read "
                    f"would decompress more than one sample); refused")
    if dcpl.get_layout() == h5py.h5d.CONTIGUOUS:  # readers allocate from the shape: the bytes must be there
        need = got_dtype.itemsize * int(np.prod(got_shape, dtype=object))
        have = d.id.get_storage_size()
        if have != need:
            return f"{label} stores {have:,} bytes, its shape needs {need:,}"
    return None


def _layout_problem(f, n, specs):
    import h5py

    members = _members(f)
    for name, hard in members.items():
        if not hard:
            return f"{name} is a link to another file or path; a shard must hold its own data"
    for k, spec in specs.items():
        if spec.ragged:
            if k not in members or not isinstance(f[k], h5py.Group):
                return f"key {k!r} missing"
            inner = _members(f[k])
            if not all(inner.values()):
                return f"{k} holds a link to another file or path; a shard must hold its own data"
            found = (_dataset_problem(f[k], inner, "values", spec.dtype, (None,) + tuple(spec.shape), f"{k}/values",
                                      ragged_chunks(spec.shape))
                     or _dataset_problem(f[k], inner, "offsets", "int64", (n + 1,), f"{k}/offsets"))
        else:
            found = _dataset_problem(f, members, k, spec.dtype, (n,) + tuple(spec.shape), k,
                                     sample_chunks(spec.shape, n))
        if found:
            return found
    if CHECK_KEY in members:
        return _dataset_problem(f, members, CHECK_KEY, "uint64", (n, len(specs), 2), CHECK_KEY)
    return _dataset_problem(f, members, DIGEST_KEY, "uint8", (n, 32), DIGEST_KEY)
