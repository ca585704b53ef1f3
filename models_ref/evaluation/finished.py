"""A sweep's finished runs (docs/evaluate.md, "Edited run files"): a run whose certificate is
there and whose files are as files.json recorded them is not run again; one whose certificate or
files changed is said in one line, then redone (``--edited redo``: from its last checkpoint when
the checkpoints are as recorded, else from the start) or evaluate stops (``refuse``).
"""
from __future__ import annotations

import os

from longsynth import certificate
from longsynth.errors import LongsynthError
from longsynth.models_ref.evaluation.files import CHECKPOINTS, RECORD, RUN_FILES, changed_files


EDITED = ("redo", "refuse")  # what a rerun does with a run whose files changed (--edited)


def _finished(job, run_dir, notify, edited="redo", hash_files=True):
    """A run's certificate when it finished and its files are as it left them; None (run
    it, resuming) when it has none. A certificate is untrusted input (longsynth.certificate):
    read without following a link (a link is refused), bounded, and checked field by field
    before the report uses it; then every file of the run is checked against the SHA-256
    that files.json recorded as the run finished. One that fails the schema, is another
    run's, or whose run folder changed is said in one line, then its run is redone
    (``edited="redo"``: from its last checkpoint when the checkpoints are as recorded, else
    from the start) or evaluate stops (``"refuse"``). Nothing edited is reported. ``hash_files`` False
    (evaluate --dry-run, which only counts what is left) trusts a valid certificate without hashing the run's
    files, its checkpoints included; the run itself checks them."""
    path = run_dir.join("metrics.json")
    for name in (*RUN_FILES, RECORD, "checkpoints"):  # before anything is read, dropped or trained
        where = os.path.join(run_dir.path, *name.split("/"))
        if os.path.islink(where):  # the run's end would write through it and fail
            raise LongsynthError(f"{where}: is a symbolic link inside the output folder; remove it (longsynth never "
                                 f"reads or writes through one)")
        folder = name == "checkpoints"
        if os.path.lexists(where) and os.path.isdir(where) != folder:  # the same: its end could not replace it
            raise LongsynthError(f"{where}: is {'not a folder' if folder else 'a folder'} where the run writes "
                                 f"{'its checkpoints' if folder else 'a file'}; remove it")
    try:
        cert = certificate.read(run_dir)
    except FileNotFoundError:
        return None
    except certificate.CertificateError as e:
        return _edited(str(e), run_dir, notify, edited)
    mine = {"task": job.task, "protocol": job.protocol, "scale": job.scale, "lr": job.lr, "seed": job.seed,
            "weight_decay": job.weight_decay, "width": job.width, "depth": job.depth}
    other = [k for k, v in mine.items() if cert.get(k) != v]
    if other:
        return _edited(f"{path}: {other[0]}: {cert[other[0]]!r}, but this run's is {mine[other[0]]!r}", run_dir,
                       notify, edited)
    if not hash_files:
        return cert
    changed = changed_files(run_dir)
    if changed is None:
        return _edited(f"{run_dir.path}: has no {RECORD} (the SHA-256 of its files, written as its run finishes)",
                       run_dir, notify, edited)
    if changed:
        what = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        return _edited(f"{run_dir.path}: {what} changed since the run finished (not as {RECORD} records "
                       f"{'it' if len(changed) == 1 else 'them'})", run_dir, notify, edited, changed)
    return cert


def _edited(problem, run_dir, notify, edited, changed=None):
    """A finished run whose files cannot be trusted: stop (``refuse``), or say so and redo
    it, from the start when its checkpoints are not as recorded. Returns None (run it).
    ``changed``: the files found changed, when the caller has hashed them already."""
    if edited == "refuse":
        raise LongsynthError(f"{problem}; evaluate stops (--edited refuse): restore the run's files, remove its "
                             f"folder, or rerun with --edited redo to train it again")
    changed = changed_files(run_dir) if changed is None else changed
    fresh = changed is not None and any(name in changed for name in (RECORD, *CHECKPOINTS))
    notify(f"{problem}; the run is redone" + (" from the start (its checkpoints are not as recorded)" if fresh
                                               else ""))
    if fresh:
        _drop_checkpoints(run_dir)
    return None


def _drop_checkpoints(run_dir):
    """Remove a run's checkpoints (not to be resumed from): the run trains from its first step."""
    ck = run_dir.sub("checkpoints")
    for name in ("last.pt", "best.pt"):
        ck.remove(name)
