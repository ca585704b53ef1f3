"""A Hugging Face Hub dataset on disk, as ``import-hf`` reads it: its parquet files and the SHA-256
the Hub recorded for each (docs/format.md, "Imported data").

Two layouts are known, both written by ``huggingface_hub``:

- the cache (``~/.cache/huggingface/hub/datasets--OWNER--NAME``, or one of its ``snapshots/REV``
  folders): each file of a snapshot is a link to ``blobs/SHA256``, the file's SHA-256 as the Hub's
  LFS pointer gives it;
- a ``--local-dir`` download: real files, and beside them
  ``.cache/huggingface/download/PATH.metadata``, whose second line is the file's etag, the same
  SHA-256 for an LFS file.

Files copied by other means have no record; their SHA-256 is computed and kept, and the import
says it checked them against nothing. Nothing here runs code from the folder, and a link is
followed only into the cache folder's own ``blobs/``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from longsynth.errors import LongsynthError

_SHA = re.compile(r"[0-9a-f]{64}")
_REV = re.compile(r"[0-9a-f]{40}")
MAX_FILES = 10_000


@dataclass(frozen=True)
class HubFile:
    name: str  # the file's name in the Hub repository's data folder
    path: str  # the real file on disk (a cache blob, or the file itself)
    sha256: str | None  # what the Hub recorded, None where nothing on disk says it
    revision: str | None  # the Hub commit the snapshot or download came from, when known


def _snapshot(src):
    """The snapshot folder of a cache folder ``datasets--OWNER--NAME``: the one refs/main names, or
    the only one there is."""
    snaps = os.path.join(src, "snapshots")
    ref = os.path.join(src, "refs", "main")
    if os.path.isfile(ref) and not os.path.islink(ref):
        with open(ref, encoding="utf-8", errors="replace") as f:
            rev = f.read(100).strip()
        if _REV.fullmatch(rev) and os.path.isdir(os.path.join(snaps, rev)):
            return _not_linked(os.path.join(snaps, rev))
    found = sorted(d for d in os.listdir(snaps) if _REV.fullmatch(d) and os.path.isdir(os.path.join(snaps, d)))
    if len(found) != 1:
        raise LongsynthError(f"{src}: {len(found)} snapshots and no refs/main naming one; give a snapshot folder "
                             f"(snapshots/REVISION)")
    return _not_linked(os.path.join(snaps, found[0]))


def _not_linked(snapshot):
    """``snapshot``, a folder the cache holds (huggingface_hub makes snapshots/ and each REVISION in it real folders
    and only their files links); LongsynthError where it or snapshots/ is a link, which could lead out of the cache."""
    for path in (os.path.dirname(snapshot), snapshot):
        if os.path.islink(path):
            raise LongsynthError(f"{path}: a link, where the Hub cache has a folder; not followed")
    return snapshot


def files(src, suffix=".parquet"):
    """The ``suffix`` files of the Hub dataset in folder ``src`` (its ``data/`` folder when it has one), each
    with the SHA-256 the Hub recorded for it where the folder says it; LongsynthError for a folder that is
    not one, or a link out of the cache."""
    src = os.path.abspath(src)
    if not os.path.isdir(src):
        raise LongsynthError(f"{src}: not a folder")
    if os.path.isdir(os.path.join(src, "snapshots")):
        src = _snapshot(src)
    cache = None  # the repository's cache folder, when src is one of its snapshots
    parent = os.path.dirname(src)
    if os.path.basename(parent) == "snapshots" and _REV.fullmatch(os.path.basename(src)):
        cache = os.path.dirname(parent)
    revision = os.path.basename(src) if cache else None
    rel_dir = "data" if os.path.isdir(os.path.join(src, "data")) and not os.path.islink(os.path.join(src, "data")) \
        else ""
    folder = os.path.join(src, rel_dir)
    names = sorted(n for n in os.listdir(folder) if n.endswith(suffix))
    if len(names) > MAX_FILES:
        raise LongsynthError(f"{folder}: {len(names):,} {suffix} files, more than {MAX_FILES:,}")
    out = []
    for name in names:
        path = os.path.join(folder, name)
        rel = f"{rel_dir}/{name}" if rel_dir else name
        if os.path.islink(path):
            target = os.path.realpath(path)
            blobs = os.path.join(os.path.realpath(cache), "blobs") if cache else None
            if blobs is None or os.path.dirname(target) != blobs or not _SHA.fullmatch(os.path.basename(target)):
                raise LongsynthError(f"{path}: a link out of the Hub cache's blobs/ folder; not followed")
            if not os.path.isfile(target):
                raise LongsynthError(f"{path}: its blob is missing (an interrupted download?)")
            out.append(HubFile(rel, target, os.path.basename(target), revision))
            continue
        if not os.path.isfile(path):
            raise LongsynthError(f"{path}: not a regular file")
        out.append(HubFile(rel, path, *_local_dir_record(src, rel)))
    return out


def _local_dir_record(src, rel):
    """(sha256, revision) that ``huggingface_hub``'s ``--local-dir`` metadata gives for file ``rel``, or
    (None, None)."""
    inside = os.path.join(".cache", "huggingface", "download", rel + ".metadata")
    meta = os.path.join(src, inside)
    if not os.path.isfile(meta) or os.path.realpath(meta) != os.path.join(os.path.realpath(src), inside):
        return None, None  # missing, or reached through a link (the file's, or .cache's): no record of this folder
    with open(meta, encoding="utf-8", errors="replace") as f:
        lines = f.read(4096).splitlines()
    rev = lines[0].strip() if lines and _REV.fullmatch(lines[0].strip()) else None
    etag = lines[1].strip().strip('"') if len(lines) > 1 else ""
    return (etag if _SHA.fullmatch(etag) else None), rev
