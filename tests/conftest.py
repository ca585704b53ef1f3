"""Fixtures shared by test files: one finished evaluate folder (a two-step cumsum run of the
built-in dlr), which the certificate and confinement tests copy before they edit or plant
links in it."""
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


def pytest_collection_modifyitems(config, items):
    """Files that hold a `slow` test run first (the order within each file is kept). Under
    pytest-xdist (`-n auto --dist loadfile`, the README's command) each file goes whole to
    one worker, in this order: the files that train for minutes start at once, and the many
    short files fill in behind them, instead of a long file starting last while the other
    worker has nothing left to do."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # a stable sort: False (slow files) first
