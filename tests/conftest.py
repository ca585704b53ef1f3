"""Fixtures shared by test files: one finished evaluate folder (a two-step cumsum run of the
built-in dlr), which the certificate and confinement tests copy before they edit or plant
links in it."""
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

EVAL = ["evaluate", "dlr", "--suite", "cumsum", "--steps", "2"]


def run_evaluate(*args):
    """``longsynth evaluate dlr --suite cumsum --steps 2 ARGS`` through click's runner."""
    import torch
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    r = CliRunner().invoke(cli, [*EVAL, *map(str, args)])
    torch.set_num_threads(1)  # Numba's OpenMP pool resets the shared thread count
    return r


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A finished evaluate folder; tests copy it before they change anything in it."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("rep") / "out"
    r = run_evaluate("--out", out)
    assert r.exit_code == 0, r.output
    return out


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """The order and grouping of the README's command (`-n auto --dist loadgroup`): each test function
    marked `slow` (it trains for tens of seconds) is a unit of its own, and they run first, spread
    over the workers; every other test, a slow test of a class included (a class shares its fixtures:
    a Dask cluster), is grouped with its file (an xdist_group named by it), so a file's module
    fixtures are built once and its kernels load in one process. A file given whole to one worker made
    its slow tests run one after another while the other worker finished early (a file of four 40 s
    tests held one worker for minutes at the end)."""
    def apart(item):
        return item.get_closest_marker("slow") is not None and item.cls is None

    for item in items:
        if not apart(item):
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    # a stable sort: slow functions, then the files holding a slow test, then the rest
    items.sort(key=lambda item: 0 if apart(item) else 1 if item.path in slow_files else 2)


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


SLOWEST_FIRST = ("pathfinder-seg", "chomsky-binary-multiplication", "chomsky-binary-addition", "mad-fuzzy-recall")


def pytest_sessionstart(session):
    """Under pytest-xdist (the README's command), compile every generator's kernels once, spread over the
    cores, before the workers start: two workers that meet a kernel not yet in Numba's cache both compile
    it (minutes on a clean checkout, where the cache is empty). A full cache costs a few seconds here."""
    config = session.config
    n = getattr(config.option, "numprocesses", None) or 0
    if hasattr(config, "workerinput") or n < 2:
        return
    import longsynth

    names = sorted(longsynth.tasks(), key=lambda t: t not in SLOWEST_FIRST)  # the longest compiles start first
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile, names))  # one task at a time: a process that finishes early takes the next
