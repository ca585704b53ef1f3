"""Reading stored datasets: ``open`` -> Dataset -> Split, every read checked against the
shard's stored checksums, so damaged bytes raise DamagedDataError instead of being
returned.
"""
from __future__ import annotations

import bisect
import os

import numpy as np

from longsynth import checksum, registry
from longsynth.errors import DamagedDataError, LongsynthError, MissingKeyError
from longsynth.rng import SPLIT_ALIASES, SPLITS
from longsynth.store import identity
from longsynth.store.layout import CHECK_KEY, DIGEST_KEY, sample_digest
from longsynth.store.manifest import read_manifest, writer
from longsynth.task import Ragged

class Split:
    """Samples of one split as a sequence: ``len(s)``, ``s[i]`` -> dict of arrays.

    HDF5 files are opened lazily, per process: a Split pickled into a DataLoader worker
    opens its own handles there.

    Every read is checked: a shard's size must match the manifest when it is opened, and
    each value read must match its stored checksum (``_check``, longsynth.checksum; shards
    written before checksums: the sample's SHA-256 digest). A missing, truncated or damaged
    shard raises DamagedDataError naming the shard; damaged values are never returned.
    """

    def __init__(self, root, name, info, specs, expect):
        self.root, self.name, self.specs, self.expect = root, name, specs, expect
        self.records = info["shards"]
        self.starts = [r["start"] for r in self.records]
        self.count = info["count"]
        self.columns = {k: c for c, k in enumerate(sorted(specs))}
        self._files, self._nodes, self._checks, self._pid = {}, {}, {}, None

    def __len__(self):
        return self.count

    def __repr__(self):
        return (f"<longsynth.Split {self.name}: {self.count:,} samples in {len(self.records):,} shards, keys "
                f"{', '.join(self.specs)}; at {self.root}>")

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_files"], state["_nodes"], state["_checks"], state["_pid"] = {}, {}, {}, None
        return state

    def _damaged(self, k, what):
        path = os.path.join(self.root, self.records[k]["file"])
        return DamagedDataError(f"{path}: {what}; run `longsynth verify {self.root}`")

    def _file(self, k):
        """Shard k's h5py file, opened once per process and checked against the manifest:
        its size, and its identity and layout (longsynth.store.identity), before any of it
        is read."""
        if self._pid != os.getpid():
            self._files, self._nodes, self._checks, self._pid = {}, {}, {}, os.getpid()
        f = self._files.get(k)
        if f is None:
            rec = self.records[k]
            try:
                fd, f = identity.open_shard(os.path.join(self.root, rec["file"]), rec["bytes"])
            except FileNotFoundError:
                raise self._damaged(k, "shard is missing") from None
            except (identity.Mismatch, LongsynthError) as e:
                raise self._damaged(k, str(e).partition(f"{self.root}/{rec['file']}: ")[2] or str(e)) from None
            found = identity.problem(f, rec, self.expect)
            if found is not None:
                f.close()
                os.close(fd)
                raise self._damaged(k, found)
            self._files[("fd", k)] = _Fd(fd)
            self._files[k] = f
        return f

    def _node(self, k, path):
        """HDF5 dataset ``path`` of shard k, looked up once per process (a lookup costs ~0.1 ms)."""
        f = self._file(k)
        d = self._nodes.get((k, path))
        if d is None:
            d = self._nodes[(k, path)] = f[path]
        return d

    def _check(self, k):
        """(kind, array) of shard k, read once per process: ("sum64", uint64 [count, keys, 2])
        or ("sha256", uint8 [count, 32]) for shards written before checksums."""
        c = self._checks.get(k)
        if c is None:
            f = self._file(k)
            c = ("sum64", f[CHECK_KEY][()]) if CHECK_KEY in f else ("sha256", f[DIGEST_KEY][()])
            if c[1].shape[0] != self.records[k]["count"]:
                raise self._damaged(k, f"checksums cover {c[1].shape[0]} samples, "
                                       f"the shard holds {self.records[k]['count']}")
            self._checks[k] = c
        return c

    def locate(self, i):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"index must be an integer, got {type(i).__name__}")
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError(f"index {i} out of range for {self.name} split of {self.count}")
        k = bisect.bisect_right(self.starts, i) - 1
        return k, int(i - self.starts[k])

    def __getitem__(self, i):
        return self.read(i)

    def __iter__(self):
        for i in range(self.count):
            yield self.read(i)

    def _fixed(self, k, key):
        """How to read sample j of fixed-shape ``key`` in shard k, looked up once per process.

        Contiguous (uncompressed) storage: (fd, file offset, bytes per sample, dtype, shape),
        read with one pread (5-10 us less than h5py's selection machinery per read, which
        pays for the checksum). Chunked storage: the h5py dataset.
        """
        r = self._nodes.get(("fixed", k, key))
        if r is None:
            d = self._node(k, key)
            offset = d.id.get_offset() if d.chunks is None else None
            if offset is None:
                r = d
            else:
                self._file(k)
                fd = self._files[("fd", k)]  # the descriptor the shard was checked through
                shape = d.shape[1:]
                r = (fd.fd, offset, d.dtype.itemsize * int(np.prod(shape, dtype=np.int64)), d.dtype, shape)
            self._nodes[("fixed", k, key)] = r
        return r

    def _read_key(self, k, j, key):
        if self.specs[key].ragged:
            r = self._fixed(k, f"{key}/offsets")
            if type(r) is tuple:
                fd, offset, size, dtype, _ = r
                buf = bytearray(2 * size)
                if os.preadv(fd, [buf], offset + j * size) != 2 * size:
                    raise self._damaged(k, f"sample {self.starts[k] + j} of {self.name} is cut short")
                a, b = np.frombuffer(buf, dtype).tolist()
            else:
                a, b = r[j : j + 2]
            if not 0 <= a <= b:
                raise self._damaged(k, f"sample {self.starts[k] + j} has offsets {a}..{b}")
            return self._node(k, f"{key}/values")[a:b]
        r = self._fixed(k, key)
        if type(r) is not tuple:
            return np.asarray(r[j])
        fd, offset, size, dtype, shape = r
        buf = bytearray(size)
        if os.preadv(fd, [buf], offset + j * size) != size:
            raise self._damaged(k, f"sample {self.starts[k] + j} of {self.name} is cut short")
        return np.frombuffer(buf, dtype).reshape(shape)

    def read(self, i, keys=None):
        k, j = self.locate(i)
        if keys is None:
            keys = self.specs
        else:
            for key in keys:
                if key not in self.specs:
                    raise MissingKeyError(f"no key {key!r}; this dataset has {', '.join(self.specs)}")
        try:
            kind, check = self._checks.get(k) or self._check(k)
            out = {}
            bad = False
            if kind == "sum64":
                columns, matches = self.columns, checksum.matches_at
                for key in keys:
                    v = out[key] = self._read_key(k, j, key)
                    if not matches(v, check, j, columns[key]):
                        bad = True
            else:  # shards written before checksums: the SHA-256 digest covers every key
                for key in self.specs:
                    out[key] = self._read_key(k, j, key)
                bad = sample_digest(out) != check[j].tobytes()
                out = {key: out[key] for key in keys}
        except DamagedDataError:
            raise
        except (OSError, KeyError, RuntimeError, MemoryError) as e:  # h5py on a damaged file; sizes it claims
            raise self._damaged(k, f"unreadable ({type(e).__name__}: {e})") from None
        if bad:
            raise self._damaged(k, f"sample {self.starts[k] + j} of {self.name} fails its checksum (damaged data)")
        return out

    def column(self, key):
        """A fixed-shape key of every sample of the split, in index order, checked."""
        if key not in self.specs or self.specs[key].ragged:
            raise MissingKeyError(f"no fixed-shape key {key!r}; this dataset has {', '.join(self.specs)}")
        parts = []
        for k, rec in enumerate(self.records):
            try:
                kind, check = self._checks.get(k) or self._check(k)
                if kind != "sum64":
                    parts.append(np.stack([self.read(self.starts[k] + j)[key] for j in range(rec["count"])]))
                    continue
                a = self._node(k, key)[()]
                got = np.zeros((rec["count"], len(self.columns), 2), dtype=np.uint64)
                c = self.columns[key]
                checksum.fill_rows(a, rec["count"], got, c)
            except (OSError, KeyError, RuntimeError, MemoryError) as e:  # h5py on a damaged file; sizes it claims
                raise self._damaged(k, f"unreadable ({type(e).__name__}: {e})") from None
            bad = np.flatnonzero(np.any(got[:, c] != check[:, c], axis=1))
            if bad.size:
                raise self._damaged(k, f"sample {self.starts[k] + int(bad[0])} of {self.name} fails its checksum "
                                       f"(damaged data)")
            parts.append(a)
        spec = self.specs[key]
        return np.concatenate(parts) if parts else np.zeros((0,) + tuple(spec.shape), dtype=spec.dtype)

    def iter_samples(self, keys=None, chunk=256):
        """Every sample in index order, read ``chunk`` samples at a time (memory stays flat),
        each checked like ``read`` (DamagedDataError before a damaged sample is yielded)."""
        for _, block in self.iter_blocks(keys, chunk):
            yield from _unblock(block)

    def iter_blocks(self, keys=None, chunk=256, start=0, stop=None):
        """Samples ``start..stop-1`` (default: all) in index order as ``(index of the first,
        block)`` with up to ``chunk`` samples per block, each block checked whole before it is
        yielded.

        A block is ``{key: array [n, ...]}`` for fixed-shape keys and ``Ragged`` (values,
        offsets from 0) for variable-length ones: the layout the kernels write, so a writer
        that handles columns (an export) costs no per-sample Python. Blocks never span
        shards."""
        keys = list(keys or self.specs)
        for key in keys:
            if key not in self.specs:
                raise MissingKeyError(f"no key {key!r}; this dataset has {', '.join(self.specs)}")
        stop = self.count if stop is None else min(stop, self.count)
        for k, rec in enumerate(self.records):
            first, n = max(0, start - self.starts[k]), min(rec["count"], stop - self.starts[k])
            for lo in range(first, n, chunk):
                hi = min(n, lo + chunk)
                try:
                    kind, check = self._checks.get(k) or self._check(k)
                    if kind != "sum64":  # shards written before checksums: sample by sample
                        block = _block([self.read(self.starts[k] + j, keys) for j in range(lo, hi)],
                                       keys, self.specs)
                        yield self.starts[k] + lo, block
                        continue
                    block, got = {}, np.zeros((hi - lo, len(self.columns), 2), dtype=np.uint64)
                    for key in keys:
                        c = self.columns[key]
                        if self.specs[key].ragged:
                            raw = self._node(k, f"{key}/offsets")[lo : hi + 1]
                            vals = self._node(k, f"{key}/values")[int(raw[0]) : max(int(raw[0]), int(raw[-1]))]
                            off = raw - raw[0]
                            if vals.shape[0] != off[-1] or np.any(np.diff(off) < 0):
                                raise self._damaged(k, f"samples {self.starts[k] + lo}..{self.starts[k] + hi - 1} "
                                                       f"of {self.name} have inconsistent offsets")
                            checksum.fill_ragged(vals, off, hi - lo, got, c)
                            block[key] = Ragged(vals, off)
                        else:
                            block[key] = self._node(k, key)[lo:hi]
                            checksum.fill_rows(block[key], hi - lo, got, c)
                        bad = np.flatnonzero(np.any(got[:, c] != check[lo:hi, c], axis=1))
                        if bad.size:
                            raise self._damaged(k, f"sample {self.starts[k] + lo + int(bad[0])} of {self.name} fails "
                                                   f"its checksum (damaged data)")
                except (OSError, KeyError, RuntimeError, MemoryError) as e:  # h5py on a damaged file; sizes it claims
                    raise self._damaged(k, f"unreadable ({type(e).__name__}: {e})") from None
                yield self.starts[k] + lo, block

    def close(self):
        for f in self._files.values():
            f.close()
        self._files, self._nodes, self._checks = {}, {}, {}


def _block(samples, keys, specs):
    """Checked samples (dicts) as one block: fixed-shape keys stacked, ragged keys joined."""
    block = {}
    for key in keys:
        values = [np.asarray(s[key]) for s in samples]
        if specs[key].ragged:
            offsets = np.zeros(len(values) + 1, dtype=np.int64)
            np.cumsum([v.shape[0] for v in values], out=offsets[1:])
            block[key] = Ragged(np.concatenate(values) if values else np.zeros((0,) + tuple(specs[key].shape),
                                                                              dtype=specs[key].dtype), offsets)
        else:
            block[key] = np.stack(values)
    return block


def _unblock(block):
    """The samples of a block, in order, as dicts of views into it."""
    n = next(len(c.offsets) - 1 if isinstance(c, Ragged) else c.shape[0] for c in block.values())
    for i in range(n):
        yield {key: col.values[col.offsets[i] : col.offsets[i + 1]] if isinstance(col, Ragged) else col[i]
               for key, col in block.items()}


class _Fd:
    """A read-only file descriptor that closes like a file (kept beside the h5py handles)."""

    def __init__(self, fd):
        self.fd = fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Dataset:
    """A stored dataset: ``.manifest``, ``.task``, ``.config``, ``ds["train"]``, ``.splits``."""

    def __init__(self, root, manifest=None):
        self.root = os.path.abspath(root)
        self.manifest = read_manifest(self.root) if manifest is None else manifest
        if not self.manifest.get("complete"):
            pid = writer(self.root)
            if pid is not None:
                raise LongsynthError(f"{root}: is being written by process {pid}; open it when that gen has finished")
            raise LongsynthError(f"{root}: dataset is incomplete; rerun its gen command to resume")
        self.task = registry.get(self.manifest["task"])
        self.config = self.task.make_config(**self.manifest["params"])
        specs = self.task.keys(self.config)
        msplits = self.manifest["splits"]
        self.splits = {s: Split(self.root, s, msplits[s], specs, identity.Expected.of(self.manifest, s, specs))
                       for s in SPLITS if s in msplits}

    def __getitem__(self, split):
        name = SPLIT_ALIASES.get(split, split) if isinstance(split, str) else split
        if name not in self.splits:
            raise MissingKeyError(f"no split {split!r}; this dataset has {', '.join(self.splits)}"
                                  + (" (validation is val)" if "val" in self.splits else ""))
        return self.splits[name]

    def __repr__(self):
        counts = ", ".join(f"{s} {len(sp):,}" for s, sp in self.splits.items())
        return f"<longsynth.Dataset {self.task.name}, seed {self.seed}: {counts} at {self.root}>"

    @property
    def seed(self):
        return self.manifest["seed"]

    def close(self):
        for s in self.splits.values():
            s.close()


def open(root):  # noqa: A001 - mirrors builtins.open for datasets
    """Open a stored dataset directory for reading."""
    return Dataset(root)

