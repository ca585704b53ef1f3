"""File I/O that the store and every exporter share: staged files and folders renamed into
place together, atomic text writes, and file hashing that never follows a link.

A final name never holds a partial file: everything is written under a temporary name
beside its final one (``.{name}.tmp``), flushed to disk and renamed. This module imports
nothing of longsynth but ``longsynth.safe`` and ``longsynth.outdir`` (confinement) and
``longsynth.errors``.
"""
from __future__ import annotations

import builtins
import hashlib
import os
import shutil

from longsynth import safe
from longsynth.errors import LongsynthError
from longsynth.outdir import Folder

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def file_sha256(path):
    """Hex SHA-256 of the regular file ``path`` (a link or a FIFO is never read)."""
    with os.fdopen(safe.open_regular(path), "rb", buffering=0) as f:
        return sha256_of(f)


def sha256_of(f):
    """Hex SHA-256 of what is left to read in the open binary file ``f``."""
    h = hashlib.sha256()
    buf = bytearray(1 << 20)  # one buffer, read into: no fresh 4 MB object (and page faults) per read
    view = memoryview(buf)
    while n := f.readinto(buf):
        h.update(view[:n])
    return h.hexdigest()


def fsync_dir(path):
    """Flush a folder's entries (names made, renamed or removed in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _tmp_name(final):
    d, name = os.path.split(final)
    return os.path.join(d, f".{name}.tmp")


def _clear(tmp):
    """Remove what a killed run left under a temporary name: a folder we made (never
    followed if it is a link), else the file or link itself."""
    if os.path.isdir(tmp) and not os.path.islink(tmp):
        shutil.rmtree(tmp)
    elif os.path.lexists(tmp):
        os.remove(tmp)


def atomic_write_text(path, text):
    """Write ``text`` to ``path`` through ``.{name}.tmp`` + fsync + rename. The temporary
    file is created anew (O_EXCL: a link planted under its name is never followed) and
    removed again if the write is interrupted."""
    d = os.path.dirname(path)
    tmp = _tmp_name(path)
    _clear(tmp)
    try:
        with builtins.open(os.open(tmp, _CREATE, 0o644), "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
    fsync_dir(d or ".")


class PendingFiles:
    """Files and folders written under temporary names and renamed to their final names
    together, in the order they were asked for (so a reader that finds files through an
    index sees the index last).

        with PendingFiles(out) as pending:
            with open(pending.path("out/a.tsv"), "wb") as f: ...
            folder = pending.folder("out/imgs/0")  # then write files into folder
            with open(pending.path("out/metadata/0.npy", new=True), "w") as f: ...

    On success every file is flushed to disk and renamed; on any failure the temporary
    names are removed, and so are the parent folders made for them, so no final name ever
    holds a partial file and a failed run leaves nothing behind. A final name asked for
    with ``new=True`` (every folder) must not exist when the renames start: if one does,
    nothing is renamed (LongsynthError).
    """

    def __init__(self, root):
        self.root = os.path.abspath(root)  # the output folder: no link below it is followed
        self.items = []  # (tmp, final, is_folder, new)
        self._made = []  # parent folders made here, removed again on failure when empty

    def _folder(self, final):
        """The Folder that holds ``final``, which must lie inside the output folder."""
        d = os.path.dirname(os.path.abspath(final))
        rel = os.path.relpath(d, self.root)
        if rel == os.curdir:
            return Folder(self.root)
        if rel.startswith(os.pardir):
            raise LongsynthError(f"{final}: outside the output folder {self.root}")
        return Folder(self.root).sub(*rel.split(os.sep))

    def _parents(self, final):
        """Make the folders of ``final`` below the output folder, refusing a link on the way."""
        self._folder(final).make(self._made)

    def path(self, final, new=False):
        """The temporary name to write file ``final`` under, created here, empty (O_EXCL: a
        link planted under that name is removed, never followed)."""
        self._parents(final)
        tmp = _tmp_name(final)
        _clear(tmp)
        os.close(os.open(tmp, _CREATE, 0o644))
        self.items.append((tmp, final, False, new))
        return tmp

    def folder(self, final):
        """A new, empty temporary folder to fill and rename to ``final``, which must not
        exist at the end (a folder cannot replace another in one rename)."""
        self._parents(final)
        tmp = _tmp_name(final)
        _clear(tmp)
        os.mkdir(tmp)
        self.items.append((tmp, final, True, True))
        return tmp

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self._commit()
        else:
            self._discard()
        return False

    def _commit(self):
        try:
            for _, final, is_folder, _ in self.items:  # nothing planted meanwhile is written through
                parent = self._folder(final)
                parent.make()
                if os.path.islink(final) or (not is_folder and os.path.isdir(final)):
                    raise LongsynthError(f"{final}: is a {'link' if os.path.islink(final) else 'folder'} inside the "
                                         f"output folder; not replaced (nothing was written)")
            taken = [final for _, final, _, new in self.items if new and os.path.lexists(final)]
            if taken:
                raise LongsynthError(f"{taken[0]}: already exists (another export into the same folder at the same "
                                     f"time?); nothing was written")
            for tmp, _, is_folder, _ in self.items:
                if not is_folder:
                    with builtins.open(tmp, "rb+") as f:
                        os.fsync(f.fileno())
            if any(is_folder for _, _, is_folder, _ in self.items):
                # one sync for every file in the folders: an fsync each costs 0.4 ms a file here,
                # as much as writing a small PNG
                os.sync()
        except BaseException:
            self._discard()
            raise
        for tmp, final, _, _ in self.items:
            os.replace(tmp, final)
        for d in {os.path.dirname(final) for _, final, _, _ in self.items}:
            fsync_dir(d or ".")

    def _discard(self):
        for tmp, _, is_folder, _ in self.items:
            try:
                if is_folder:
                    shutil.rmtree(tmp)
                else:
                    os.remove(tmp)
            except FileNotFoundError:
                pass
        for d in reversed(self._made):
            try:
                os.rmdir(d)
            except OSError:  # not empty: something else wrote there meanwhile
                pass
