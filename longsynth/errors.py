"""The project's own error types: failures a user can cause and fix, with one-line messages.

The command line prints these as one ``Error:`` line; anything else (a bug of ours, a
library's internal failure) keeps its traceback. ``LongsynthError`` derives from
``ValueError`` and ``MissingKeyError`` also from ``KeyError``, so library callers that
catch the built-in types keep working.
"""
import os
import re


class LongsynthError(ValueError):
    """A user-facing failure (bad argument, missing or busy directory, no room): one line."""

    __str__ = Exception.__str__  # no KeyError-style quoting in subclasses


class DamagedDataError(LongsynthError):
    """A stored shard is missing, truncated or fails its checksums: nothing of it was returned."""


class DiskFullError(LongsynthError):
    """The disk filled up while a shard was written: nothing partial was kept, and the
    command that stopped can be rerun once there is room (``gen`` says how much)."""


class MissingKeyError(LongsynthError, KeyError):
    """A split or key the dataset does not have."""


def os_reason(e):
    """One line for an OSError: the errno HDF5 buries in a multi-line message, else strerror."""
    text = str(e)
    m = re.search(r"errno = (\d+)", text)
    if m and int(m.group(1)):
        return os.strerror(int(m.group(1)))
    return " ".join((e.strerror or text).split())
