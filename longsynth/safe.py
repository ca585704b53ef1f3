"""Confinement: what the store opens, creates or deletes stays inside its folder.

A dataset folder, an export or a certificate may come from someone else (docs/format.md,
"Trust"). Every name the tool reads from such a folder (a shard's ``file``, an export's
file list) is a plain file name inside the folder it belongs to: no separator, no ``..``,
and the file it names is opened without following a symbolic link and must be a regular
file, so a record can never point the tool at ``/etc/passwd``, ``/dev/zero`` or a FIFO.
"""
from __future__ import annotations

import json
import os
import re
import stat

from longsynth.errors import LongsynthError

MAX_NAME = 255  # bytes of one path component (NAME_MAX of Linux and macOS)
MAX_PATH = 4000  # bytes of a path we create folders for (PATH_MAX is 4096)
MAX_JSON_BYTES = 64 << 20  # a manifest of 100K shards is about 15 MB
MAX_JSON_DEPTH = 32  # nesting of a JSON file the tool reads back
# objects and lists of one: a manifest of MAX_SHARDS (100K) shards holds some 100K, while 64 MB of ``{},`` would
# parse into 21 million dicts (1.5 GB)
MAX_JSON_CONTAINERS = 1_000_000

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def plain_name(name, what):
    """``name`` if it is a plain file name (a str without separators, not ``.``/``..``);
    LongsynthError naming ``what`` otherwise."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\0" in name or len(name.encode("utf-8", "surrogateescape")) > MAX_NAME):
        raise LongsynthError(f"{what}: {str(name)[:80]!r} is not a plain file name inside the folder")
    return name


def open_regular(path, flags=os.O_RDONLY):
    """A file descriptor of ``path``, opened without following a symbolic link in its last
    component and without blocking on a FIFO; LongsynthError unless it is a regular file.
    FileNotFoundError passes through (callers name what is missing)."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except OSError as e:
        if e.errno in (getattr(os, "ELOOP", 40), getattr(os, "EMLINK", 31)) and os.path.islink(path):
            raise LongsynthError(f"{path}: is a symbolic link; a dataset's files must be regular files") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LongsynthError(f"{path}: is not a regular file")
        if _NONBLOCK:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_json(path, what, limit=MAX_JSON_BYTES):
    """The JSON value in the regular file ``path``: at most ``limit`` bytes, MAX_JSON_DEPTH levels
    deep and MAX_JSON_CONTAINERS objects and lists, each key once in its object; LongsynthError
    (one line naming ``what``) otherwise.
    FileNotFoundError passes through."""
    return read_json_fd(open_regular(path), what, limit)


def read_json_fd(fd, what, limit=MAX_JSON_BYTES):
    """read_json of a regular file already opened as ``fd`` (closed here)."""
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise LongsynthError(f"{what}: {size:,} bytes, more than the {limit:,} a longsynth file may hold")
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise LongsynthError(f"{what}: more than the {limit:,} bytes a longsynth file may hold")
    deepest, containers = _shape(raw)
    if deepest > MAX_JSON_DEPTH:
        raise LongsynthError(f"{what}: JSON nested more than {MAX_JSON_DEPTH} levels deep")
    if containers > MAX_JSON_CONTAINERS:
        raise LongsynthError(f"{what}: more than {MAX_JSON_CONTAINERS:,} JSON objects and lists, more than a "
                             f"longsynth file holds")
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_once_each)
    except (ValueError, RecursionError, MemoryError) as e:
        text = " ".join(str(e).split())[:200]
        raise LongsynthError(f"{what}: not valid JSON ({text})") from None


def _once_each(pairs):
    """An object whose keys are each given once: JSON leaves a repeated key's meaning open (Python's parser keeps
    the last, others the first), so a record that holds one could read as one thing here and another elsewhere."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {key[:40]!r} is given twice in one object")
    return out


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings (which may hold brackets), brackets
_OPEN = frozenset(b"[{")


def _shape(raw):
    """(deepest bracket nesting, objects and lists) of JSON text, stopping once past MAX_JSON_DEPTH or
    MAX_JSON_CONTAINERS (json's own parser recurses and would hit Python's recursion limit on 100,000 levels,
    and makes an object of 64 bytes or more of each ``{}`` of 3)."""
    depth = deepest = containers = 0
    for m in _TOKENS.finditer(raw):
        c = m.group()[0]
        if c in _OPEN:
            depth += 1
            containers += 1
            if containers > MAX_JSON_CONTAINERS:
                break
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    break
        elif c != 0x22:  # a closing bracket (0x22: a string)
            depth -= 1
    return deepest, containers


def check_out_path(path):
    """LongsynthError unless folders can be made for ``path``: every component at most
    MAX_NAME bytes and the whole at most MAX_PATH, checked before anything is created (a
    path the OS refuses half way would leave the folders made before it)."""
    full = os.path.abspath(path)
    parts = [p for p in full.split(os.sep) if p]
    if len(full.encode("utf-8", "surrogateescape")) > MAX_PATH or any(
            len(p.encode("utf-8", "surrogateescape")) > MAX_NAME for p in parts):
        raise LongsynthError(f"--out: path too long ({len(full):,} characters; at most {MAX_NAME} per folder "
                             f"name and {MAX_PATH} in all)")
    return full


def real_dir(path, what):
    """LongsynthError if ``path`` exists and is a symbolic link or not a folder."""
    if os.path.islink(path):
        raise LongsynthError(f"{what}: {path} is a symbolic link; expected a folder")
    if os.path.exists(path) and not os.path.isdir(path):
        raise LongsynthError(f"{what}: {path} exists and is not a folder")
