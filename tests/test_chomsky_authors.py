"""The Chomsky tasks' authors' stream as longsynth serves it (docs/tasks/chomsky.md, "The authors'
stream"): ``length``, the refusals, the rows ``gen --authors-stream`` writes. Equality with the authors'
own arrays is tests/test_chomsky_authors_jax.py's and tests/test_chomsky_authors_py.py's."""
import numpy as np
import pytest

import longsynth
from click.testing import CliRunner

from longsynth import api, registry
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError
from longsynth.generators._tokens import IGNORE
from longsynth.generators.chomsky import TASKS
from longsynth.generators.chomsky._common import LAYOUTS
from longsynth.generators.chomsky.authors import END, rows
from longsynth import store

NAMES = [t.name for t in TASKS]


def _raw_of(layout, cfg, law):
    """The authors' arrays a row of ours holds: the input, and the output with the authors' zeros after
    a terminated output's end token (our law writes -100 there)."""
    n, o = layout.in_len(cfg.max_length), layout.out_len(cfg.max_length)
    y = law["targets"][:, n:n + o].astype(np.int64)
    y[y == IGNORE] = 0
    return {"inputs": law["inputs"][:, :n].astype(np.int64), "targets": y[:, 0] if o == 1 else y}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("length", [1, 2, 5, 12])
def test_rows_lay_the_authors_arrays_out_as_our_law_does(name, length):
    t = registry.get(name)
    cfg = t.make_config(length=length)
    law = api.batch(name, 0, 64, seed=3, length=length)
    got = rows(LAYOUTS[name], cfg, _raw_of(LAYOUTS[name], cfg, law))
    assert np.array_equal(got["inputs"], law["inputs"]) and np.array_equal(got["targets"], law["targets"])


def test_rows_score_the_zeros_after_the_end_token_only_with_score_padding():
    t = registry.get("chomsky-binary-addition")
    raw = {"inputs": np.array([[1, 2, 1, 0]]), "targets": np.array([[0, 1, END, 0, 0]])}
    off = rows(LAYOUTS[t.name], t.make_config(length=4), raw)["targets"][0, 4:]
    on = rows(LAYOUTS[t.name], t.make_config(length=4, score_padding=True), raw)["targets"][0, 4:]
    assert off.tolist() == [0, 1, END, IGNORE, IGNORE] and on.tolist() == [0, 1, END, 0, 0]


def test_length_fixes_both_bounds_and_refuses_a_disagreeing_range():
    cfg = registry.get("chomsky-reverse-string").make_config(length=7)
    assert (cfg.min_length, cfg.max_length, cfg.length) == (7, 7, 7)
    assert registry.get("chomsky-reverse-string").make_config(length=7, min_length=7, max_length=7) == cfg
    with pytest.raises(LongsynthError, match="length: 7 sets min_length, max_length, test_min_length and "
                                             "test_max_length to it, but max_length is 9"):
        registry.get("chomsky-reverse-string").make_config(length=7, max_length=9)
    with pytest.raises(LongsynthError, match="length"):
        registry.get("chomsky-compute-sqrt").make_config(length=1 << 14)  # past the quadratic tasks' bound


@pytest.mark.parametrize("params, match", [
    (dict(seed=0), "give length"),
    (dict(seed=1 << 32, length=5), "2\\*\\*32 - 1"),
    (dict(seed=0, length=5, split="test"), "another dataset"),
])
def test_refusals_are_one_line(params, match):
    with pytest.raises(LongsynthError, match=match):
        api.authors_stream("chomsky-parity-check", 4, **params)


@pytest.mark.parametrize("name", ["chomsky-parity-check", "chomsky-stack-manipulation"])
def test_gen_writes_the_authors_arrays_as_rows(tmp_path, name):
    res = CliRunner().invoke(cli, ["gen", name, "--length", "9", "--splits", "train=40", "--seed", "5",
                                   "--authors-stream", "--shard-size", "16", "-o", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    t = registry.get(name)
    cfg = t.make_config(length=9)
    want = rows(LAYOUTS[name], cfg, api.authors_stream(name, 40, seed=5, length=9))
    ds = longsynth.open(tmp_path / "d")
    for k in ("inputs", "targets"):
        assert np.array_equal(np.stack([ds["train"][i][k] for i in range(40)]).astype(np.int64), want[k]), k
    assert store.verify(str(tmp_path / "d"), deep=True, samples=10) == []
