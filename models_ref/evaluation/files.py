"""The record of a finished run's files (docs/evaluate.md, "Edited run files"): files.json holds
the SHA-256 of each (its certificate, history, figures and checkpoints), written as the run
finishes, and a later evaluate tells which files changed since.
"""
from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from longsynth import fields
from longsynth.errors import LongsynthError


RECORD = "files.json"  # the SHA-256 of every file of a finished run (docs/evaluate.md, "Edited run files")
RUN_FILES = ("metrics.json", "history.json", "curves.png", "predictions.png", "checkpoints/last.pt",
             "checkpoints/best.pt")
CHECKPOINTS = ("checkpoints/last.pt", "checkpoints/best.pt")


class FilesRecord(fields.Record):
    """files.json: the SHA-256 of each file the run wrote, its certificate among them."""

    sha256: dict[Literal[RUN_FILES], fields.Hex64]

    @model_validator(mode="after")
    def _has_certificate(self):
        if "metrics.json" not in self.sha256:
            raise fields.Bad("sha256", "has no metrics.json")
        return self


def _place(out_dir, name):
    """(folder, file name) of a name of RUN_FILES in the run folder ``out_dir``."""
    *below, base = name.split("/")
    return (out_dir.sub(*below) if below else out_dir), base


def _sha256(folder, name):
    """Hex SHA-256 of the regular file ``name`` in ``folder``, read without following a link."""
    from longsynth.files import sha256_of

    with folder.open_read(name) as f:
        return sha256_of(f)


def _digest(out_dir, name):
    """The SHA-256 of a run file, or None when it is missing, a link or not a regular file."""
    folder, base = _place(out_dir, name)
    try:
        return _sha256(folder, base)
    except (FileNotFoundError, NotADirectoryError, LongsynthError):
        return None


def record_files(out_dir):
    """files.json: the SHA-256 of each file of the finished run in the Folder ``out_dir``
    (its certificate, history, figures and checkpoints), as the store records its shards."""
    digests = {name: d for name in RUN_FILES if (d := _digest(out_dir, name)) is not None}
    out_dir.write_json(RECORD, {"sha256": digests})


def changed_files(out_dir):
    """The files of a finished run that are not as files.json records them: changed, gone,
    or added where the run wrote none ([] when all are as recorded); None when the run has
    no record. An unreadable or malformed record is itself changed."""
    try:
        raw = out_dir.read_json(RECORD, limit=1 << 16)
    except FileNotFoundError:
        return None
    except LongsynthError:  # a link, too large, not JSON
        return [RECORD]
    try:
        digests = fields.parse(FilesRecord, raw, RECORD, "files").sha256
    except LongsynthError:
        return [RECORD]
    return [name for name in RUN_FILES if _digest(out_dir, name) != digests.get(name)]
