"""flipflop (docs/tasks/flipflop.md): the kernel against its twin, and the language checked against its
definition on generated rows: every read answers the last write, the first instruction writes and the last
reads, and the instructions between come at their probabilities."""
import numpy as np
import pytest
from scipy import stats

import longsynth
import naive
from longsynth.store import sample_digest

CASES = [dict(T=2, p_ignore=0.5), dict(T=3, p_ignore=0.0), dict(T=7, p_ignore=1.0), dict(T=256, p_ignore=0.8),
         dict(T=256, p_ignore=0.98), dict(T=1000, p_ignore=0.1)]
KEYS = [(0, "train", 0), (7, "val", 3), (2**40 + 1, "test", 12345)]


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"T{p['T']}-p{p['p_ignore']}")
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{k[2]}")
def test_kernel_matches_twin(params, key):
    seed, split, index = key
    got = longsynth.sample("flipflop", index, seed=seed, split=split, **params)
    want = naive.flipflop(seed, split, index, **params)
    for k in ("inputs", "targets"):
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def _reads_answer_the_last_write(ops, bits):
    """Whether every read's bit in a string (ops [T], bits [T]) is the bit of the last write before it."""
    last = None
    for op, bit in zip(ops, bits):
        if op == 0:
            last = bit
        elif op == 1 and bit != last:
            return False
    return True


def _layout(x, y):
    """(ops [n, T], bits [n, T]) of rows: the last read's bit is only a target."""
    return x[:, 0::2], np.concatenate([x[:, 1::2], y[:, -1:]], axis=1) - 3


@pytest.mark.parametrize("p", [0.8, 0.1, 0.98])
def test_the_language_law_on_generated_rows(p):
    """2,000 strings of FFL(256, p): the first instruction writes and the last reads; every read's bit (the input
    after it, and its target) is the last bit written; the ops between are ignore / write / read at p, (1-p)/2,
    (1-p)/2 (binomial two-sided p-values above 1e-4 for 508,000 draws); written and ignored bits are fair."""
    b = longsynth.batch("flipflop", 0, 2000, seed=5, p_ignore=p)
    x, y = b["inputs"].astype(np.int64), b["targets"].astype(np.int64)
    assert x.shape == (2000, 511) and b["inputs"].dtype == np.int8
    ops, bits = _layout(x, y)  # [2000, 256] each
    assert np.all(ops[:, 0] == 0) and np.all(ops[:, -1] == 1)
    assert np.all((bits == 0) | (bits == 1))
    assert all(_reads_answer_the_last_write(ops[r], bits[r]) for r in range(0, 2000, 20))
    read = ops == 1
    assert np.array_equal(y[:, 0::2] != -100, read) and np.all(y[:, 1::2] == -100)
    assert np.array_equal(y[:, 0::2][read] - 3, bits[read])
    middle = ops[:, 1:-1].ravel()
    n = middle.size
    for op, prob in ((2, p), (0, (1 - p) / 2), (1, (1 - p) / 2)):
        assert stats.binomtest(int((middle == op).sum()), n, prob).pvalue > 1e-4, (op, prob)
    free = bits[ops != 1]
    assert stats.binomtest(int(free.sum()), free.size, 0.5).pvalue > 1e-4


def test_the_read_check_fails_on_a_flipped_read():
    """The read check above fails on a row whose first read's bit is flipped (a check that cannot fail is a
    defect), and passes on the row as made."""
    b = longsynth.batch("flipflop", 0, 4, seed=5)
    x, y = b["inputs"].astype(np.int64), b["targets"].astype(np.int64)
    ops, bits = _layout(x, y)
    assert _reads_answer_the_last_write(ops[0], bits[0])
    r = int(np.flatnonzero(ops[0] == 1)[0])
    bits[0, r] = 1 - bits[0, r]
    assert not _reads_answer_the_last_write(ops[0], bits[0])


GOLDEN = ["88580bcedfc5579e9f3b02c2d599bfc152fb7441f4229a1e276fd465e3b2fd29",
          "9f9df836e4db2ece04fc70b909f7cce70ab5b8ffce32a6e4a7505310b0d7c355"]


def test_golden_digests():
    got = [sample_digest(longsynth.sample("flipflop", i, seed=2023)).hex() for i in (0, 9)]
    assert got == GOLDEN


def test_the_flipflop_suite_reports_the_reads_by_split(tmp_path, monkeypatch):
    """evaluate --suite flipflop: tested on FFL(0.8) and on the dense (0.1) and sparse (0.98) splits; the report
    tabulates each set's accuracy and errors beside the 1-in-2 chance of a read, report.png draws each set, and a
    set's label reaches the certificate's schema (a name, not only a length)."""
    import json

    from longsynth.models_ref.evaluation.sweep import Settings, evaluate
    from longsynth.models_ref.protocols import registry

    row = registry.PROTOCOLS[("flipflop", "tiny")]
    assert row["eval_batches"] == 32  # the sparse set's ~1,700 reads (docs/tasks/flipflop.md)
    monkeypatch.setitem(registry.PROTOCOLS, ("flipflop", "tiny"), {**row, "eval_batches": 4})  # 4 s, not 24
    evaluate("gru", "flipflop", out=str(tmp_path), settings=Settings(steps=5), progress=False)
    text = (tmp_path / "report.md").read_text()
    assert "| test set | test | dense | sparse |" in text and "| errors |" in text
    rep = json.loads((tmp_path / "report.json").read_text())
    (run,) = rep["runs"]
    test, dense, sparse = rep["rows"][0]["by_set"]  # the task's own test split, then the protocol's sets
    assert (test["set"], test["count"], test["correct"]) == ("test", run["test"]["exact"]["count"],
                                                          run["test"]["exact"]["correct"])
    assert (dense["set"], sparse["set"]) == ("dense", "sparse")
    assert rep["rows"][0]["length_param"] is None and rep["rows"][0]["trained_at"] is None  # p_ignore: no length
    assert sparse["count"] < dense["count"]  # FFL(0.98) reads far fewer times than FFL(0.1)
    from longsynth.certificate import read_report
    from longsynth.models_ref.reports.report import Report

    data = read_report(str(tmp_path))
    items, _, _ = Report(identity=data["model"], suite=data["suite"], scale=data["scale"], settings={},
                         runs=data["runs"])._bars()
    assert [it["value"] for it in items[1:]] == [dense["accuracy"], sparse["accuracy"]]  # report.png's bars
    assert "sparse test set" in items[2]["label"] and f"of {sparse['count']:,}" in items[2]["label"]
    row = next(line for line in text.splitlines() if line.startswith("| flipflop | accuracy |"))
    assert "| 0.500 |" in row and "1 of 2 bits" in text
    import os

    from longsynth import certificate

    (path,) = [os.path.join(d, "metrics.json") for d, _, fs in os.walk(tmp_path / "runs") if "metrics.json" in fs]
    raw = json.load(open(path))
    assert set(raw["test_sets"]) == {"dense", "sparse"}
    for bad in ("Dense", "a|b", "x" * 40, "../up"):  # what a stranger's certificate could put in a report's table
        raw["test_sets"] = {bad: raw["test_sets"].get("dense") or next(iter(raw["test_sets"].values()))}
        json.dump(raw, open(path, "w"))
        with pytest.raises(certificate.CertificateError, match="test_sets"):
            certificate.read(os.path.dirname(path))


def test_a_strangers_string_accuracy_must_be_a_fraction(tmp_path):
    """The certificate's schema checks the get_score fields a report reads: a string accuracy of 2 or a list of
    rows is refused in one line, never multiplied into a table."""
    import json

    from longsynth import certificate
    from longsynth.models_ref.evaluation.sweep import Settings, evaluate

    evaluate("gru", "repeat-copy", out=str(tmp_path), settings=Settings(steps=3), progress=False)
    (path,) = list((tmp_path / "runs").rglob("metrics.json"))
    raw = json.loads(path.read_text())
    assert 0 <= raw["test_sets"]["30"]["exact"]["string_accuracy"] <= 1
    for field, bad in (("string_accuracy", 2.0), ("rows", [1, 2]), ("char_accuracy", "x")):
        broken = json.loads(json.dumps(raw))
        broken["test_sets"]["30"]["exact"][field] = bad
        path.write_text(json.dumps(broken))
        with pytest.raises(certificate.CertificateError, match=field):
            certificate.read(path.parent)


def test_presets_draw_the_hubs_splits_laws(tmp_path):
    """--preset names a Hub split's law: the same rows as its p_ignore given alone; a p_ignore that disagrees with
    it is one line, and nothing is written."""
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    for preset, p in (("train", 0.8), ("val", 0.8), ("val_dense", 0.1), ("val_sparse", 0.98)):
        a = longsynth.batch("flipflop", 0, 16, seed=3, T=32, preset=preset)
        b = longsynth.batch("flipflop", 0, 16, seed=3, T=32, p_ignore=p)
        assert all(np.array_equal(a[k], b[k]) for k in a), preset
    assert np.array_equal(longsynth.batch("flipflop", 0, 4, seed=3)["inputs"],
                          longsynth.batch("flipflop", 0, 4, seed=3, p_ignore=0.8)["inputs"])  # the default: 0.8
    r = CliRunner().invoke(cli, ["gen", "flipflop", "--preset", "val_dense", "--p-ignore", "0.8", "-n", "10", "--out",
                                 str(tmp_path / "d")])
    lines = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert r.exit_code != 0 and len(lines) == 1 and "disagrees with --preset val_dense" in lines[0], r.output
    assert not (tmp_path / "d").exists()
