"""The one line for a failed write of the harness's files (a checkpoint, a run's certificate, a
report): nothing written before is lost, and how to go on.
"""
from __future__ import annotations

import errno

from longsynth.errors import LongsynthError


RESUME = "rerun the same command (evaluate resumes each run from its last checkpoint; validate starts again)"


def write_failed(path, e, what, then=RESUME):
    """The one line for an OSError writing ``what`` to ``path``: nothing earlier is lost, and
    how to go on, ``then`` (docs/evaluate.md, "Jobs, clusters, resuming")."""
    from longsynth.errors import DiskFullError, os_reason

    if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return DiskFullError(f"{path}: the disk is full (writing {what}; the files written before are whole); "
                             f"free space and {then}")
    return LongsynthError(f"{path}: write failed ({os_reason(e)}, writing {what}); {then}")
