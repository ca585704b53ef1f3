"""info's statistics per split (a test split of other lengths is not pooled with train), the
sequence lengths of parity and modular arithmetic read back from stored rows
(docs/tasks/state-tracking.md), show DIR --stats for token tasks, and a parameter of the
wrong type told apart from one out of range."""
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

import longsynth
from longsynth import store
from longsynth.cli.main import cli
from longsynth.errors import LongsynthError

SPLITS = {"train": 120, "val": 30, "test": 40}


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    base = tmp_path_factory.mktemp("info")
    out = {}
    for name, task, params in (("parity", "parity", {}),
                               ("modular", "modular-arithmetic", {}),
                               ("brackets", "modular-arithmetic", {"brackets": True}),
                               ("mqar", "mqar", {"input_seq_len": 32, "num_kv_pairs": 4, "vocab_size": 100})):
        root = base / name
        store.generate(str(root), task, params, seed=3, splits=SPLITS, workers=1)
        out[name] = root
    return out


def _lengths_from_tokens(ds, split):
    x = np.stack([s["inputs"] for s in ds[split]]).astype(np.int64)
    if getattr(ds.config, "brackets", False):
        # e, '=', the answer hidden as 0 (also the number 0), then [PAD] (V - 1) to the end:
        # n - 1 tokens are not [PAD], and n counts the [PAD] after the answer
        return (x != ds.config.vocab_size - 1).sum(axis=1) + 1
    # the word's n - 1 tokens are nonzero (parity bits 1..V-1; numbers >= 5, operators 1-3,
    # '=' 4), then the answer hidden as 0 and zeros: n = nonzero tokens + 1
    return (x != 0).sum(axis=1) + 1


@pytest.mark.parametrize("name", ["parity", "modular", "brackets"])
def test_info_gives_lengths_per_split_as_the_rows_hold_them(made, name):
    ds = store.open(str(made[name]))
    s = store.info(str(made[name]))
    assert list(s["lengths"]) == list(s["splits"]) == ["train", "val", "test"]
    for split in s["splits"]:
        n = _lengths_from_tokens(ds, split)
        values, counts = np.unique(n, return_counts=True)
        assert s["lengths"][split]["counts"] == dict(zip(values.tolist(), counts.tolist())), split
        assert (s["lengths"][split]["min"], s["lengths"][split]["max"]) == (n.min(), n.max())
    lo = 5 if name == "brackets" else 3  # brackets: n = max(length, 5)
    assert lo <= s["lengths"]["train"]["min"] and s["lengths"]["train"]["max"] <= 40
    test_lo = 39 if name == "modular" else 40  # n = 2r - 1 with r from (40 + 1) // 2 = 20
    assert test_lo <= s["lengths"]["test"]["min"] and s["lengths"]["test"]["max"] <= 256
    assert s["lengths"]["train"]["max"] < s["lengths"]["test"]["min"] + 5  # apart: 3-40 against 40-256
    if name == "modular":
        assert all(k % 2 for k in s["lengths"]["train"]["counts"])  # n = 2r - 1
    text = run("info", made[name])
    train = s["lengths"]["train"]
    assert f"  train min {train['min']} median {train['median']:g} mean {train['mean']:.1f} max {train['max']} " \
        in text, text


def test_info_statistics_are_per_split(made):
    root = made["parity"]
    ds = store.open(str(root))
    s = json.loads(run("info", root, "--json"))
    assert list(s["stats"]) == list(s["tokens"]) == ["train", "val", "test"]
    for split in s["splits"]:
        x = np.stack([r["inputs"] for r in ds[split]]).astype(np.float64)
        st = s["stats"][split]["inputs"]
        assert (st["min"], st["max"]) == (x.min(), x.max())
        assert st["mean"] == pytest.approx(x.mean()) and st["std"] == pytest.approx(x.std())
        tk = s["tokens"][split]
        assert tk["scored_per_sample"] == {"min": 1, "max": 1, "mean": 1.0, "total": SPLITS[split]}
        share0 = float(np.mean(x == 0))
        assert dict(tk["inputs"]["top"])[0] == pytest.approx(share0)
    # train's short words are mostly padding, test's long ones mostly bits: pooled, neither
    assert s["stats"]["train"]["inputs"]["mean"] < 0.5 < s["stats"]["test"]["inputs"]["mean"]
    text = run("info", root)
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("inputs"))
    for i, split in enumerate(s["splits"]):
        st = s["stats"][split]["inputs"]
        assert lines[at + i].endswith(f"{split:5s} min {st['min']:.4g} max {st['max']:.4g} mean {st['mean']:.4g} "
                                      f"std {st['std']:.4g}"), lines[at + i]


def test_info_of_a_token_task_without_lengths(made):
    s = store.info(str(made["mqar"]))
    assert "lengths" not in s and "balance" not in s
    assert s["tokens"]["test"]["scored_per_sample"]["total"] == 4 * SPLITS["test"]


def test_show_stats_draws_token_tasks_per_split(made, tmp_path):
    text = run("show", made["parity"], "--stats", "--out", tmp_path / "parity.png")
    s = store.info(str(made["parity"]))
    for split in s["splits"]:
        ln = s["lengths"][split]
        assert f"{split}: {SPLITS[split]} rows, 1.00 scored targets per row, lengths {ln['min']}-{ln['max']}" in text
    assert f"wrote {tmp_path / 'parity.png'}" in text
    from PIL import Image

    with Image.open(tmp_path / "parity.png") as im:
        assert im.size[0] == 1200 and im.size[1] >= 4 * 200  # four rows of panels: with the lengths
    text = run("show", made["mqar"], "--stats", "--out", tmp_path / "mqar.png")
    assert "train: 120 rows, 4.00 scored targets per row; val: 30 rows" in text and "lengths" not in text
    with Image.open(tmp_path / "mqar.png") as im:
        assert 3 * 200 <= im.size[1] < 4 * 200  # no lengths row


def test_show_stats_of_a_family_without_a_figure_is_one_line(tmp_path):
    root = tmp_path / "c"
    store.generate(str(root), "cumsum", {"L": 16}, seed=0, splits={"train": 4, "val": 2, "test": 2}, workers=1)
    r = CliRunner().invoke(cli, ["show", str(root), "--stats", "--out", str(tmp_path / "c.png")])
    assert r.exit_code == 1 and r.output.strip().splitlines()[-1] == "Error: cumsum has no dataset figure", r.output


@pytest.mark.parametrize("value, said", [("64", "must be an integer in [4, 1048576], got the string '64'"),
                                         (64.0, "must be an integer in [4, 1048576], got the float 64.0"),
                                         (True, "must be an integer in [4, 1048576], got the bool True"),
                                         (2, "must be in [4, 1048576], got 2")])
def test_a_wrong_type_is_not_read_as_a_range_error(value, said):
    with pytest.raises(LongsynthError) as e:
        longsynth.sample("mqar", 0, input_seq_len=value)
    assert str(e.value) == f"input_seq_len: {said}"


def test_a_wrong_type_of_a_flag_or_a_number():
    with pytest.raises(LongsynthError, match=re.escape("brackets: must be true or false, got the string 'yes'")):
        longsynth.sample("modular-arithmetic", 0, brackets="yes")
    with pytest.raises(LongsynthError, match=re.escape("power_a: must be a finite number in [1e-06, 1.0], got the "
                                                       "string '0.5'")):
        longsynth.sample("mqar", 0, power_a="0.5")
    with pytest.raises(LongsynthError, match=re.escape("power_a: must be a finite number in [1e-06, 1.0], got nan")):
        longsynth.sample("mqar", 0, power_a=float("nan"))
    with pytest.raises(LongsynthError, match=re.escape("power_a: must be in [1e-06, 1.0], got 2.0")):
        longsynth.sample("mqar", 0, power_a=2.0)


def test_a_token_preview_has_a_colour_key(tmp_path):
    """`show` on a token task draws a key of the ids' colours beside the rows: the right edge of the picture
    holds the colour scale (many colours), where without it there is only white."""
    import numpy as np
    from PIL import Image

    import longsynth
    from longsynth import registry

    t = registry.get("mqar")
    samples = [longsynth.sample("mqar", i) for i in range(3)]
    t.show(samples, t.make_config(), str(tmp_path / "p.png"))
    img = np.asarray(Image.open(tmp_path / "p.png").convert("RGB"))
    edge = img[img.shape[0] // 3: 2 * img.shape[0] // 3, int(img.shape[1] * 0.92):]
    colours = {tuple(p) for p in edge.reshape(-1, 3) if max(p) - min(p) > 60}  # saturated: not grey or white
    assert len(colours) > 20, len(colours)
