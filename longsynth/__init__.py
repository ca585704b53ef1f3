"""longsynth: fast, seeded, sharded generators for synthetic long-range benchmarks.

    >>> import longsynth
    >>> s = longsynth.sample("cumsum", 0, seed=0, L=512)
    >>> s["inputs"].shape, s["targets"].shape
    ((512, 1), (512, 1))
"""
import os as _os

from longsynth._version import __version__

# setuptools maps generators/, cli/ and models_ref/ of the repository to
# longsynth.generators, .cli and .models_ref. Imported straight from a source checkout
# (`python -m longsynth` in the repository root), they sit beside this package instead:
# let the package find them there.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "generators")) and _os.path.isfile(
    _os.path.join(_root, "generators", "__init__.py")
):
    __path__.append(_root)

# Numba reads a .numba_config.yaml in the current folder when imported and again before each compile, and the
# current folder may be a dataset folder from someone else (docs/format.md, "Trust"): its cache_dir had Numba write
# its cache there and unpickle the index files it found there, running the folder's code. Numba's settings are the
# NUMBA_* environment variables and numba.config here, never that file.
import numba.core.config as _numba_config  # noqa: E402

_found = getattr(_numba_config, "_config_fname", "")
_numba_config._config_fname = ""  # a name no file has: every later reload reads the environment only
if _found and _os.path.isfile(_found):
    _numba_config.reload_config()  # the settings as the environment gives them, undoing the file's

# Numba's default threading layer on Linux is GNU OpenMP, which kills a forked child that
# runs a parallel kernel once the parent has run one: a PyTorch DataLoader's default (fork)
# workers generating on the fly. Unless the user chose a layer (NUMBA_THREADING_LAYER or
# numba.config), take a fork-safe one: TBB when installed, else Numba's own workqueue
# (as fast as OpenMP for our per-sample loops, docs/benchmarks.md). The workqueue layer
# does not allow two Python threads to run kernels at once: `pip install tbb` for that.
if "NUMBA_THREADING_LAYER" not in _os.environ:
    import numba as _numba

    if _numba.config.THREADING_LAYER == "default":
        _numba.config.THREADING_LAYER = "forksafe"

from longsynth.api import authors_dataset, authors_stream, batch, sample, tasks, vocab  # noqa: E402
from longsynth.spec import ModelSpec  # noqa: E402
from longsynth.store import generate, open  # noqa: E402

__all__ = ["ModelSpec", "authors_dataset", "authors_stream", "batch", "evaluate", "generate", "open", "read_report",
           "sample", "tasks", "vocab", "__version__"]


def evaluate(model, suite, *, out, scale="tiny", steps=None, lrs=None, seeds=1, device="cpu", jobs=1, dask=None,
             data=None, progress=True, notify=None):
    """Run ``model`` through ``suite``'s protocols; returns a Report (``table()``, ``to_markdown()``).

    ``model``: a factory ``f(ModelSpec) -> torch.nn.Module``, a built-in name (``"dlr"``,
    ``"dss"``, ``"s4"``, ``"s4d"``, ``"essm"``), ``"path/to/file.py:function"`` or
    ``"package.module:function"``. The other arguments are ``longsynth evaluate``'s options
    (docs/evaluate.md). Needs torch.
    """
    from longsynth.models_ref.evaluation.sweep import Settings
    from longsynth.models_ref.evaluation.sweep import evaluate as run

    settings = Settings(scale=scale, steps=steps, lrs=None if lrs is None else tuple(lrs), seeds=seeds,
                        device=device, jobs=jobs, dask=dask, data=data)
    return run(model, suite, out=out, settings=settings, progress=progress, notify=notify)


def read_report(path):
    """An ``evaluate`` report (its folder or its ``report.json``) as a dict, read as untrusted
    input: bounded, no link followed inside the folder, checked against one schema (rows,
    task scores, every run's certificate: longsynth/certificate.py). A report that does not
    follow it raises ``longsynth.certificate.CertificateError``, one line naming the field."""
    from longsynth.certificate import read_report as read

    return read(path)
