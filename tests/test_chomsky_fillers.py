"""The two batch fillers of every Chomsky task (generators/chomsky/_common.py, "Batch fillers"):
the serial one (``Filler.rows``) and the parallel one over chunks of CHUNK rows (``Filler.fill``)
write the same bytes, at counts on both sides of CHUNK and of SERIAL_WORK / max_length; and
``longsynth.batch`` takes the serial one for a small batch or on one thread, the parallel one
for a large batch on several threads."""
import numpy as np
import pytest

import longsynth
from longsynth import registry
from longsynth.generators.chomsky import _common
from longsynth.generators.chomsky._common import CHUNK, SERIAL_WORK, Filler
from longsynth.rng import split_code

# per task: parameters beyond the lengths that change what the fillers get (args(cfg))
PARAMS = {
    "chomsky-modular-arithmetic": [{}, {"modulus": 7, "operators": "*-_"}],
    "chomsky-modular-arithmetic-brackets": [{}, {"modulus": 11, "mult": False}],
    "chomsky-solve-equation": [{}, {"modulus": 9}],
    "chomsky-reverse-string": [{}, {"vocab_size": 300}],
    "chomsky-duplicate-string": [{}, {"vocab_size": 7}],
    "chomsky-odds-first": [{}, {"vocab_size": 3}],
    "chomsky-bucket-sort": [{}, {"vocab_size": 17}],
    "chomsky-stack-manipulation": [{}, {"score_padding": True}],
    "chomsky-binary-addition": [{}, {"score_padding": True}],
    "chomsky-binary-multiplication": [{}, {"score_padding": True}],
}
TASKS = [t for t in longsynth.tasks() if t.startswith("chomsky-")]
COUNTS = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]
SEED, SPLIT, START = 5, "val", 1000


def test_every_chomsky_task_has_both_fillers():
    assert len(TASKS) == 15
    for name in TASKS:
        f = registry.get(name).fill
        assert isinstance(f, Filler), name
        assert f.rows.__name__.endswith("_rows") and f.fill.__name__.endswith("_fill"), name
        assert f.rows.__name__[:-5] == f.fill.__name__[:-5], name  # the pair of one task


def _run(which, name, count, params):
    """The rows of ``which`` ("rows" or "fill") of the task, called directly."""
    t = registry.get(name)
    cfg = t.make_config(**params)
    out = t.allocate(cfg, count)
    f = t.fill
    getattr(f, which)(SEED, split_code(SPLIT), START, cfg.min_length, cfg.max_length, *f.args(cfg),
                      out["inputs"], out["targets"])
    return out


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and np.array_equal(a[k], b[k]), k


@pytest.mark.parametrize("name", TASKS)
def test_serial_and_parallel_fillers_write_the_same_rows(name):
    for extra in PARAMS.get(name, [{}]):
        for lengths in ({"min_length": 1, "max_length": 40}, {"length": 3}, {"min_length": 41, "max_length": 90}):
            params = {**lengths, **extra}
            for count in COUNTS:
                serial = _run("rows", name, count, params)
                _same(serial, _run("fill", name, count, params))
                if count:  # and what longsynth.batch returns (one of the two, by the batch's size)
                    _same(serial, longsynth.batch(name, START, count, seed=SEED, split=SPLIT, **params))
            # the last row alone: a row does not depend on the batch it is drawn in
            one = longsynth.batch(name, START + count - 1, 1, seed=SEED, split=SPLIT, **params)
            _same({k: v[-1:] for k, v in serial.items()}, one)


def _refuse(*args):
    raise AssertionError("this filler must not run")


@pytest.mark.parametrize("name", TASKS)
def test_batch_takes_the_serial_filler_for_a_small_batch(name, monkeypatch):
    f = registry.get(name).fill
    params = {"min_length": 1, "max_length": 32}
    large = SERIAL_WORK // 32 + 1  # (large - 1) * 32 == SERIAL_WORK
    want_small = _run("rows", name, 128, params)
    want_large = _run("rows", name, large, params)
    monkeypatch.setattr(_common, "get_num_threads", lambda: 2)  # as on a machine of several threads
    monkeypatch.setattr(f, "fill", _refuse)
    _same(want_small, longsynth.batch(name, START, 128, seed=SEED, split=SPLIT, **params))
    _same({k: v[:large - 1] for k, v in want_large.items()},  # count * max_length == SERIAL_WORK
          longsynth.batch(name, START, large - 1, seed=SEED, split=SPLIT, **params))
    with pytest.raises(AssertionError, match="must not run"):  # one row more: the parallel one
        longsynth.batch(name, START, large, seed=SEED, split=SPLIT, **params)
    monkeypatch.setattr(_common, "get_num_threads", lambda: 1)  # one thread: serial whatever the size
    _same(want_large, longsynth.batch(name, START, large, seed=SEED, split=SPLIT, **params))


@pytest.mark.parametrize("name", TASKS)
def test_batch_takes_the_parallel_filler_for_a_large_batch_on_several_threads(name, monkeypatch):
    f = registry.get(name).fill
    params = {"min_length": 1, "max_length": 32}
    large = SERIAL_WORK // 32 + 1  # (large - 1) * 32 == SERIAL_WORK
    want = _run("rows", name, large, params)
    monkeypatch.setattr(_common, "get_num_threads", lambda: 2)
    monkeypatch.setattr(f, "rows", _refuse)
    _same(want, longsynth.batch(name, START, large, seed=SEED, split=SPLIT, **params))
    with pytest.raises(AssertionError, match="must not run"):
        longsynth.batch(name, START, 128, seed=SEED, split=SPLIT, **params)
