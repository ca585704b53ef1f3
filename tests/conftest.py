"""Fixtures shared by test files: one finished evaluate folder (a two-step cumsum run of the
built-in dlr), which the certificate and confinement tests copy before they edit or plant
links in it."""
import collections
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

# The Python processes the tests start (`python -m longsynth`, `python -c`, Dask's and torchrun's workers, xdist's)
# import the longsynth pytest imports: the installed one. Without this, one started with the checkout as its working
# directory puts the checkout first on sys.path and imports the source tree (longsynth/__init__.py maps generators/
# there): another copy of the package, with no .pyc files and a Numba cache of its own, so a clean CI run compiled
# each kernel again in those processes (the Dask kill test: 182 s against 13 s). A test that means to run the
# source tree or a bench/ script (which imports its own folder) drops it from its subprocess's environment.
os.environ["PYTHONSAFEPATH"] = "1"

EVAL = ["evaluate", "dlr", "--suite", "cumsum", "--steps", "2"]


def run_evaluate(*args):
    """``longsynth evaluate dlr --suite cumsum --steps 2 ARGS`` through click's runner."""
    import torch
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    r = CliRunner().invoke(cli, [*EVAL, *map(str, args)])
    torch.set_num_threads(1)  # Numba's OpenMP pool resets the shared thread count
    return r


@pytest.fixture(scope="session")
def report(tmp_path_factory):
    """A finished evaluate folder; tests copy it before they change anything in it (one per session, not per
    module: three files read it)."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("rep") / "out"
    r = run_evaluate("--out", out)
    assert r.exit_code == 0, r.output
    return out


def pytest_configure(config):
    """Keep the order below under pytest-xdist: by default it reorders files by their number of
    tests, which sends the files of one or two long training tests (test_essm_learning.py, ...)
    last, each then running alone on one worker while the other has finished."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Files that hold a `slow` test run first, then the others by their number of tests, most
    first (the order within each file is kept). Under pytest-xdist (`-n auto --dist loadfile`,
    the README's command) each file goes whole to one worker, in this order: the files that
    train for minutes start at once, and the many short files fill in behind them, instead of
    a long file starting last while the other worker has nothing left to do. A test of half a
    minute or more sits in a file of its own or of few (test_evaluate_jobs.py,
    test_s4_learning.py, ...), so two of them can run at once."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    count = collections.Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in slow_files, -count[item.path]))  # stable: slow files first


def _compile(name):
    """Draw two rows of task ``name`` (one sample of a task whose rows vary in length), which compiles (or
    loads from Numba's cache) the kernels every test of it meets; a parallel filler (a Chomsky task's large
    batch) is left to the few tests that ask for one."""
    import longsynth
    from longsynth.errors import LongsynthError

    try:
        longsynth.batch(name, 0, 2)
    except LongsynthError:  # variable-length rows (ListOps)
        longsynth.sample(name, 0)


SLOWEST_FIRST = ("pathfinder-seg", "chomsky-binary-multiplication", "chomsky-binary-addition", "mad-fuzzy-recall",
                 "repeat-copy")


def _compile_order(names):
    """The tasks in the order the pool compiles them: the slowest compiles first, then one task of each
    generator module (its tasks share kernels: Repeat After Me's four share one), then the rest, so that two
    processes seldom compile the same kernel at once (the second would not find it in the cache yet)."""
    from longsynth import registry

    def module(name):
        t = registry.get(name)
        return getattr(t.fill or t.block, "__module__", name)

    first, seen = {}, set()
    for name in names:
        m = module(name)
        first[name] = m not in seen
        seen.add(m)
    return sorted(names, key=lambda t: (t not in SLOWEST_FIRST, not first[t]))


def pytest_sessionstart(session):
    """Under pytest-xdist (the README's command), compile every generator's kernels once, spread over the
    cores, before the workers start: two workers that meet a kernel not yet in Numba's cache both compile
    it (minutes on a clean checkout, where the cache is empty). A full cache costs a few seconds here."""
    config = session.config
    n = getattr(config.option, "numprocesses", None) or 0
    if hasattr(config, "workerinput") or n < 2:
        return
    import longsynth

    names = _compile_order(longsynth.tasks())
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile, names))  # one task at a time: a process that finishes early takes the next
