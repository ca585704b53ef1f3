"""longsynth: fast, seeded, sharded generators for synthetic long-range benchmarks.

    >>> import longsynth
    >>> s = longsynth.sample("cumsum", 0, seed=0, L=512)
    >>> s["inputs"].shape, s["targets"].shape
    ((512, 1), (512, 1))
"""
__version__ = "0.1.0"

from longsynth.api import batch, sample, tasks, vocab  # noqa: E402
from longsynth.store import open  # noqa: E402,A001

__all__ = ["batch", "open", "sample", "tasks", "vocab", "__version__"]
