"""The project's own error types: failures a user can cause and fix, with one-line messages.

The command line prints these as one ``Error:`` line; anything else (a bug of ours, a
library's internal failure) keeps its traceback. ``LongsynthError`` derives from
``ValueError`` and ``MissingKeyError`` also from ``KeyError``, so library callers that
catch the built-in types keep working.
"""


class LongsynthError(ValueError):
    """A user-facing failure (bad argument, missing or busy directory, no room): one line."""

    __str__ = Exception.__str__  # no KeyError-style quoting in subclasses


class DamagedDataError(LongsynthError):
    """A stored shard is missing, truncated or fails its checksums: nothing of it was returned."""


class MissingKeyError(LongsynthError, KeyError):
    """A split or key the dataset does not have."""
