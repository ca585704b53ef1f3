"""The output directory: where every command that writes (``gen``, ``export``, ``evaluate``,
``validate``, the trainer's checkpoints) puts its files, and how (docs/format.md, "Trust").

One rule for all of them:

* **no link is followed inside the folder**: every folder below the output folder is
  opened component by component with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent,
  and every file is created with ``O_EXCL | O_NOFOLLOW`` in the folder it belongs to, so a
  link planted anywhere under ``--out`` (``runs``, ``imgs/``, ``report.md``) is refused in
  one line instead of sending the write elsewhere. The output folder itself may be a
  link: the user named it;
* **a final name never holds a partial file**: a file is written as ``.{name}.tmp``,
  flushed and renamed (within the one folder descriptor it was created in);
* **one command per folder**: ``hold()`` takes the folder's lock (``DirLock``: an flock on
  ``.lock`` that holds the PID) for the whole command; a second command into the same
  folder is refused in one line and the first one's result stands;
* **a failed command cleans up only what it created**: the folders it made are removed
  again when empty (never a folder that another command wrote into), and temporary files
  are removed as each write fails.

``Folder`` is plain data (a root and the names below it), so a job that crosses a process
or Dask boundary carries the folder it writes to.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import stat
import time

from longsynth import safe
from longsynth.errors import LongsynthError


_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)

LOCK = ".lock"  # held (flock) by the process writing the folder; holds its PID


def _refused(path, e):
    """The one line for a component under the output folder that cannot be entered."""
    if e.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path):
        return LongsynthError(f"{path}: is a symbolic link inside the output folder; longsynth never writes "
                              f"through one (remove it or choose another --out)")
    if e.errno == errno.ENOTDIR:
        return LongsynthError(f"{path}: exists and is not a folder; choose another --out")
    return LongsynthError(f"{path}: cannot be opened ({e.strerror or e})")


@dataclasses.dataclass(frozen=True)
class Folder:
    """A folder inside an output folder: ``root`` (followed if a link: the user named it)
    and the plain names below it, each entered without following a link.

        out = Folder(path)                       # the output folder
        run = out.sub("runs", "select", "lr1")   # made when missing; a link anywhere is refused
        run.write_json("metrics.json", cert)     # .metrics.json.tmp, fsync, rename
        with run.create("curves.png") as f: fig.savefig(f, format="png")
        cert = run.read_json("metrics.json", what)
    """

    root: str
    parts: tuple = ()

    @classmethod
    def of(cls, where):
        """``where`` as a Folder: a Folder, or a path (then its own root)."""
        return where if isinstance(where, Folder) else cls(os.path.abspath(os.fspath(where)))

    @property
    def path(self):
        return os.path.join(self.root, *self.parts)

    def __fspath__(self):
        return self.path

    def __str__(self):
        return self.path

    def join(self, name):
        """The path of ``name`` in this folder (for messages and readers that check it themselves)."""
        return os.path.join(self.path, name)

    # ------------------------------------------------------------- folders

    def _open(self, create=False, made=None):
        """A descriptor of this folder, entered component by component without following a
        link; missing components are made when ``create`` (their paths appended to
        ``made``). FileNotFoundError when one is missing and not ``create``."""
        try:
            fd = os.open(self.root, _DIR & ~getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            if not create:
                raise
            os.makedirs(self.root, exist_ok=True)
            fd = os.open(self.root, _DIR & ~getattr(os, "O_NOFOLLOW", 0))
        except OSError as e:
            raise _refused(self.root, e) from None
        here = self.root
        try:
            for name in self.parts:
                here = os.path.join(here, name)
                try:
                    nfd = os.open(name, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(name, 0o755, dir_fd=fd)
                        if made is not None:
                            made.append(here)
                    except FileExistsError:  # made meanwhile by another process
                        pass
                    try:
                        nfd = os.open(name, _DIR, dir_fd=fd)
                    except OSError as e:
                        raise _refused(here, e) from None
                except OSError as e:
                    raise _refused(here, e) from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def sub(self, *names):
        """The folder ``names`` below this one (plain names; not made here: ``make()`` does)."""
        return Folder(self.root, self.parts + tuple(safe.plain_name(n, self.path) for n in names))

    def make(self, made=None):
        """This folder, made (with its missing parents below the root) when missing;
        LongsynthError if a component is a link or not a folder. Returns self."""
        os.close(self._open(create=True, made=made))
        return self

    def exists(self, name=None):
        """Whether this folder (and in it the entry ``name``, link or not) exists; a link
        on the way is refused (LongsynthError)."""
        try:
            fd = self._open()
        except FileNotFoundError:
            return False
        try:
            if name is None:
                return True
            try:
                os.stat(name, dir_fd=fd, follow_symlinks=False)
                return True
            except FileNotFoundError:
                return False
        finally:
            os.close(fd)

    def listdir(self):
        """The names in this folder ([] when it does not exist)."""
        try:
            fd = self._open()
        except FileNotFoundError:
            return []
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------- files

    @contextlib.contextmanager
    def create(self, name, made=None):
        """A new binary file to write as ``name`` in this folder (made when missing): written
        as ``.{name}.tmp`` (created with O_EXCL | O_NOFOLLOW), flushed and renamed over
        ``name`` when the block ends without an error, removed when it fails, with the
        folders this call made when they are still empty (a checkpoint interrupted mid-write
        leaves no empty ``checkpoints/``). ``made``: the caller tracks the folders instead."""
        safe.plain_name(name, self.path)
        mine = [] if made is None else made
        try:
            with self._writing(name, mine) as f:
                yield f
        except BaseException:
            if made is None:
                remove_empty(mine)
            raise

    @contextlib.contextmanager
    def _writing(self, name, made):
        tmp = f".{name}.tmp"
        fd = self._open(create=True, made=made)
        try:
            try:
                st = os.stat(tmp, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    raise LongsynthError(f"{self.join(tmp)}: is a folder where longsynth writes a temporary file")
                os.unlink(tmp, dir_fd=fd)  # left by a killed run, or planted: removed, never followed
            except FileNotFoundError:
                pass
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    raise LongsynthError(f"{self.join(name)}: is a {'link' if stat.S_ISLNK(st.st_mode) else 'folder'}"
                                         f" inside the output folder, not a file longsynth wrote; not replaced")
            except FileNotFoundError:
                pass
            f = os.fdopen(os.open(tmp, _NEW, 0o644, dir_fd=fd), "wb")
            try:
                with f:
                    yield f
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=fd)
                raise
            with contextlib.suppress(OSError):
                os.fsync(fd)
        finally:
            os.close(fd)

    def write_bytes(self, name, data):
        with self.create(name) as f:
            f.write(data)

    def write_text(self, name, text):
        self.write_bytes(name, text.encode("utf-8"))

    def write_json(self, name, value, indent=1):
        """``value`` as JSON (a diverged run's NaN is written as NaN; readers refuse it)."""
        self.write_text(name, json.dumps(value, indent=indent) + "\n")

    def save_png(self, name, fig, dpi=None):
        """A matplotlib figure as the PNG ``name``."""
        with self.create(name) as f:
            fig.savefig(f, format="png", **({} if dpi is None else {"dpi": dpi}))

    @contextlib.contextmanager
    def open_read(self, name):
        """The regular file ``name`` in this folder, opened for reading without following a
        link (FileNotFoundError when it or a folder on the way is missing)."""
        fd = self._open()
        try:
            try:
                ffd = os.open(name, _READ, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.EMLINK):
                    raise LongsynthError(f"{self.join(name)}: is a symbolic link; not read") from None
                raise
        finally:
            os.close(fd)
        try:
            if not stat.S_ISREG(os.fstat(ffd).st_mode):
                raise LongsynthError(f"{self.join(name)}: is not a regular file; not read")
            import fcntl

            fcntl.fcntl(ffd, fcntl.F_SETFL, fcntl.fcntl(ffd, fcntl.F_GETFL) & ~getattr(os, "O_NONBLOCK", 0))
            f = os.fdopen(ffd, "rb")
        except BaseException:
            os.close(ffd)
            raise
        with f:
            yield f

    def read_json(self, name, what=None, limit=safe.MAX_JSON_BYTES):
        """The JSON value of ``name`` (safe.read_json's bounds), read without following a link."""
        with self.open_read(name) as f:
            return safe.read_json_fd(os.dup(f.fileno()), what or self.join(name), limit)

    def remove(self, name):
        """Remove the file or link ``name`` (never what a link points to); gone already is fine."""
        try:
            fd = self._open()
        except FileNotFoundError:
            return
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    # ------------------------------------------------------------- one command

    @contextlib.contextmanager
    def hold(self, refuse=None):
        """This folder for one command: made when missing, locked (DirLock on ``.lock``)
        until the block ends. ``refuse(names)``: called with the folder's entries (the lock
        aside) once the lock is held; it raises to refuse a folder the command must not
        write into. When the block fails, the folders this command made here are removed
        again if empty; files are the writers' own to clean up (each removes its temporary
        file when it fails)."""
        made = []
        try:
            if not os.path.lexists(self.root):
                parent = os.path.dirname(self.root)
                if parent:
                    os.makedirs(parent, exist_ok=True)
                try:
                    os.mkdir(self.root)
                    made.append(self.root)
                except FileExistsError:  # another command made it first: it is not ours to remove
                    pass
            elif not os.path.isdir(self.root):
                raise LongsynthError(f"{self.root}: exists and is not a folder; choose another --out")
        except OSError as e:
            raise LongsynthError(f"{self.root}: cannot create directory ({e.strerror or e})") from None
        try:
            if not os.access(self.root, os.W_OK):
                raise LongsynthError(f"{self.root}: directory is not writable")
            self.make(made)
            lock = DirLock(self.path).acquire()
            try:
                if refuse is not None:
                    refuse([e for e in self.listdir() if e != LOCK])
                yield self
            finally:
                lock.release()
        except BaseException:
            remove_empty(made)
            raise


def remove_empty(made):
    """Remove the folders in ``made`` (paths this command created) that are empty, deepest
    first: a folder someone else wrote into stays."""
    for d in sorted(made, key=len, reverse=True):
        try:
            if not os.path.islink(d):
                os.rmdir(d)
        except OSError:
            pass


class DirLock:
    """Exclusive lock of an output folder for one writer (flock on DIR/.lock).

    The kernel drops an flock when its process dies, so a lock left by a killed writer is
    simply taken over; the file holds the writer's PID for the message to the next one.
    """

    def __init__(self, root):
        self.root, self.path, self.fd = root, os.path.join(root, LOCK), None

    def acquire(self):
        import fcntl

        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = ""
                for _ in range(20):  # the holder writes its PID right after locking
                    pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
                    if pid:
                        break
                    time.sleep(0.01)
                os.close(fd)
                raise LongsynthError(f"{self.root} is being written by process {pid[:20] or '(unknown)'}") from None
            try:
                same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a file its previous holder unlinked while we opened it
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self.fd = fd
                return self
            os.close(fd)

    def _open(self):
        """The lock file's descriptor: created anew (O_EXCL), else the one a killed writer
        left, opened without following a link. A link, a non-regular file or a file with
        other hard links is refused before anything is written to it: the PID written
        into the lock must never land in a file outside the folder."""
        flags = os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        try:
            return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        try:
            fd = safe.open_regular(self.path, flags)
        except FileNotFoundError:  # its holder removed it meanwhile: try again
            return self._open()
        if os.fstat(fd).st_nlink != 1:
            os.close(fd)
            raise LongsynthError(f"{self.path}: has other hard links; remove it if no longsynth gen is running")
        return fd

    def release(self):
        if self.fd is not None:
            try:
                if os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(self.fd).st_ino:
                    os.unlink(self.path)
            except FileNotFoundError:
                pass
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


