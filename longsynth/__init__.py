"""longsynth: fast, seeded, sharded generators for synthetic long-range benchmarks.

    >>> import longsynth
    >>> s = longsynth.sample("cumsum", 0, seed=0, L=512)
    >>> s["inputs"].shape, s["targets"].shape
    ((512, 1), (512, 1))
"""
import os as _os

__version__ = "0.1.0"

# setuptools maps generators/, cli/ and models_ref/ of the repository to
# longsynth.generators, .cli and .models_ref. Imported straight from a source checkout
# (`python -m longsynth` in the repository root), they sit beside this package instead:
# let the package find them there.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "generators")) and _os.path.isfile(
    _os.path.join(_root, "generators", "__init__.py")
):
    __path__.append(_root)

from longsynth.api import batch, sample, tasks, vocab  # noqa: E402
from longsynth.store import open  # noqa: E402,A001

__all__ = ["batch", "open", "sample", "tasks", "vocab", "__version__"]
