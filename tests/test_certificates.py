"""Certificates read back are untrusted input (docs/format.md, "Trust"): an edited
metrics.json in an evaluate folder, or in a dataset's validation/, is one line naming the
field, and evaluate redoes its run; never a traceback, never a value taken on trust."""
import copy
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from longsynth import certificate, store
from longsynth.cli.main import cli
from longsynth.outdir import Folder

from conftest import run_evaluate

torch = pytest.importorskip("torch")

_evaluate = run_evaluate


def _metrics(out):
    (path,) = [os.path.join(dp, "metrics.json") for dp, _, fs in os.walk(out / "runs") if "metrics.json" in fs]
    return path


def _deep(n):
    return "[" * n + "]" * n


# the hostile test's edits (a traceback each before), and what the one line names
EDITS = {
    "lr is text": (lambda c: c.update(lr="abc"), "lr: expected a number, got a string"),
    "test is a list": (lambda c: c.update(test=[1, 2]), "test: expected an object, got a list"),
    "no primary metric": (lambda c: c.pop("primary_metric"), "primary_metric: missing"),
    "best is a number": (lambda c: c.update(best=3), "best: expected an object, got an integer"),
    "seed is a float": (lambda c: c.update(seed=0.5), "seed: expected an integer, got a number"),
    "renamed task": (lambda c: c.update(task="cumsum-renamed"), "task: 'cumsum-renamed' is not a longsynth task"),
    "r2 is NaN": (lambda c: c["test"].update(r2=float("nan")), "test.r2: must be a finite number, got nan"),
    "wall time negative": (lambda c: c.update(wall_time_s=-1), "wall_time_s: must be at least 0.0, got -1"),
    "unknown metric": (lambda c: c.update(primary_metric="bleu"), "primary_metric: must be one of 'r2'"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_certificate_is_one_line_naming_its_field(report, edit):
    cert = json.loads(open(_metrics(report)).read())
    assert certificate.check(copy.deepcopy(cert), "metrics.json") == cert
    change, said = EDITS[edit]
    change(cert)
    with pytest.raises(certificate.CertificateError, match="^metrics.json: ") as e:
        certificate.check(cert, "metrics.json")
    assert said in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("edit", ["lr is text", "renamed task", "r2 is NaN", "deep", "another task's"])
def test_evaluate_redoes_a_run_whose_certificate_was_edited(report, tmp_path, edit):
    out = tmp_path / "out"
    shutil.copytree(report, out)
    path = _metrics(out)
    good = json.loads(open(path).read())
    cert = copy.deepcopy(good)
    if edit == "deep":
        cert["final"] = {"x": json.loads(_deep(30))}  # within the depth bound, and still allowed
        text = json.dumps(cert)[:-1] + ', "nest": ' + _deep(200_000) + "}"
    elif edit == "another task's":
        cert["task"] = "select"
        text = json.dumps(cert)
    else:
        EDITS[edit][0](cert)
        text = json.dumps(cert)
    open(path, "w").write(text)
    r = _evaluate("--out", out)
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    said = [line for line in r.output.splitlines() if "the run is redone" in line]
    assert len(said) == 1 and said[0].startswith(path), r.output
    rep = json.loads((out / "report.json").read_text())
    assert rep["runs"][0]["test"]["r2"] == good["test"]["r2"]  # resumed from its last checkpoint: the same run
    assert json.loads(open(path).read())["test"] == good["test"]


def test_info_checks_a_validation_certificate(tmp_path):
    root = tmp_path / "d"
    store.generate(str(root), "cumsum", {"L": 32}, num_samples=60, workers=1)
    run = Folder(str(root)).sub("validation", "dlr-1").make()
    cert = {"task": "cumsum", "protocol": "atomic", "scale": "tiny", "model": "dlr", "lr": 1e-3, "seed": 0,
            "primary_metric": "r2", "test": {"r2": 0.5}, "best": {"r2": 0.5}, "final": {"r2": 0.5},
            "wall_time_s": 1.0, "train_tokens_per_s": 2.0}
    run.write_json("metrics.json", {**cert, "lr": "abc"})
    r = CliRunner().invoke(cli, ["info", str(root)])
    assert r.exit_code == 1 and r.output.strip().endswith("metrics.json: lr: expected a number, got a string"), r.output
    run.write_json("metrics.json", cert)
    r = CliRunner().invoke(cli, ["info", str(root)])
    assert r.exit_code == 0 and 'validation: {"r2": 0.5}' in r.output, r.output


# report.json read back (longsynth.read_report): the same schema rules, its rows and every run
REPORT_EDITS = {
    "test mean is NaN": (lambda r: r["rows"][0].update(test_mean=float("nan")), "rows[0].test_mean: must be a finite "
                                                                                   "number, got nan"),
    "unknown metric": (lambda r: r["rows"][0].update(metric="bleu"), "rows[0].metric: must be one of 'r2'"),
    "a run's lr is text": (lambda r: r["runs"][0].update(lr="abc"), "runs[0].lr: expected a number, got a string"),
    "a run's task renamed": (lambda r: r["runs"][0].update(task="nope"),
                             "runs[0].task: 'nope' is not a longsynth task"),
    "paper figure is text": (lambda r: r["rows"][0]["paper"].update(dlr="1.0"),
                             "rows[0].paper.dlr: expected a number, got a string"),
    "rows is a dict": (lambda r: r.update(rows={}), "rows: expected a list, got an object"),
    "unknown scale": (lambda r: r.update(scale="huge"),
                      "scale: must be one of 'tiny', 'laptop' or 'paper', got 'huge'"),
}


def test_a_written_report_reads_back(report):
    import longsynth

    want = json.loads((report / "report.json").read_text())
    assert longsynth.read_report(report) == want == longsynth.read_report(report / "report.json")
    assert want["rows"] and want["runs"]


@pytest.mark.parametrize("edit", sorted(REPORT_EDITS))
def test_an_edited_report_is_one_line_naming_its_field(report, tmp_path, edit):
    import longsynth

    rep = json.loads((report / "report.json").read_text())
    change, said = REPORT_EDITS[edit]
    change(rep)
    (tmp_path / "report.json").write_text(json.dumps(rep))
    with pytest.raises(certificate.CertificateError) as e:
        longsynth.read_report(tmp_path)
    assert str(e.value).startswith(str(tmp_path / "report.json") + ": ") and said in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("hostile", ["deep", "link", "missing", "not an object"])
def test_a_hostile_report_is_one_line(report, tmp_path, hostile):
    import longsynth

    path = tmp_path / "report.json"
    if hostile == "deep":
        path.write_text(_deep(200_000))
    elif hostile == "link":
        os.symlink(report / "report.json", path)  # a good report, but through a link planted in the folder
    elif hostile == "not an object":
        path.write_text("[1, 2]")
    with pytest.raises(certificate.CertificateError) as e:
        longsynth.read_report(tmp_path)
    assert "\n" not in str(e.value) and str(e.value).startswith(str(path)), str(e.value)


@pytest.mark.parametrize("name,marked", [("attention", 11), ("dlr", 0)])
def test_the_figure_marks_a_verdicts_figure_that_no_column_shows(name, marked):
    """Table 1's tiny attention is judged against the paper's L = 512 table, which is not a
    column of the report: the figure marks those figures on the model's bars (a diamond per
    task, where the L = 4096 column happens to hold the same value too); DLR's own figures are
    its column, so nothing is marked."""
    import longsynth
    from longsynth.models_ref.reports.report import Report

    d = longsynth.read_report(os.path.join(os.path.dirname(__file__), "..", "docs", "validation", "table1-tiny",
                                           f"{name}.json"))
    fig = Report(d["model"], d["suite"], d["scale"], d["settings"], d["runs"]).figure()
    try:
        dots = [c for c in fig.axes[0].collections if "the verdict's figure" in str(c.get_label())]
        assert sum(len(c.get_offsets()) for c in dots) == marked
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
