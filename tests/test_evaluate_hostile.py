"""evaluate under a hostile retest: a killed sweep, diverging runs, absurd options, a full
disk and edited run files. Each attack ends in one line, a recorded result, or a run redone;
never a traceback, a process left behind, or an edited figure reported as a result."""
import errno
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from click.testing import CliRunner

from longsynth.cli.main import cli

torch.set_num_threads(1)

LINEAR = '''from torch import nn


def build(spec):  # pointwise: causal; a huge learning rate sends it to inf within a step or two
    return nn.Linear(spec.d_input, spec.d_output)
'''


def _model(tmp_path, text=LINEAR, name="lin.py"):
    path = tmp_path / name
    path.write_text(text)
    return f"{path}:build"


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    torch.set_num_threads(1)  # Numba's OpenMP pool resets the shared thread count
    return r


def one_error_line(result):
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code not in (0, None) and len(lines) == 1, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.output
    return lines[0]


# ---------------------------------------------------------------- A. workers die with evaluate


def _children(pid):
    """PIDs of the live processes whose parent is ``pid`` (from /proc: psutil may be missing)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, ...
        if int(fields[1]) == pid and fields[0] not in "ZX":
            found.append(int(name))
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"  # a zombie has stopped: only its exit status is left


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_evaluate_jobs_takes_its_workers_with_it(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, "-m", "longsynth", "evaluate", _model(tmp_path), "--suite", "cumsum",
                          "--lr", "1e-3,2e-3", "--steps", "1000000", "--jobs", "2", "--out", str(out)],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, workers = time.time() + 120, []
        while time.time() < deadline and p.poll() is None:  # both workers training: a checkpoint each
            workers = [c for c in _children(p.pid) if "spawn_main" in _cmdline(c)]
            if len(workers) == 2 and len(list(out.glob("runs/cumsum/*/checkpoints/last.pt"))) == 2:
                break
            time.sleep(0.1)
        assert p.poll() is None and len(workers) == 2, "the workers did not start training"
        everyone = _children(p.pid)  # the workers and multiprocessing's resource tracker
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(c) for c in everyone):
            time.sleep(0.1)
        left = [c for c in everyone if _alive(c)]
        assert not left, f"processes outlived the killed evaluate: {[_cmdline(c) for c in left]}"
    finally:  # whatever is left of the sweep's process group (the workers, should they have outlived it)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


DIES_IN_A_WORKER = '''import multiprocessing
import os
import signal

from torch import nn


def build(spec):  # the parent's check builds it; a --jobs worker dies as an out-of-memory kill would end it
    if multiprocessing.parent_process() is not None:
        os.kill(os.getpid(), signal.SIGKILL)
    return nn.Linear(spec.d_input, spec.d_output)
'''


def test_a_worker_that_dies_is_one_line_and_the_finished_runs_stay(tmp_path):
    out = tmp_path / "out"
    line = one_error_line(invoke("evaluate", _model(tmp_path, DIES_IN_A_WORKER), "--suite", "cumsum", "--lr",
                                 "1e-3,2e-3", "--steps", "2", "--jobs", "2", "--out", out))
    assert "a worker process of --jobs 2 died" in line and "rerun the same command" in line, line


EDITS_ITSELF = '''import pathlib

from torch import nn

_me = pathlib.Path(__file__)
_me.write_text(_me.read_text() + "# edited while it was imported\\n")


def build(spec):
    return nn.Linear(spec.d_input, spec.d_output)
'''


def test_a_model_file_is_hashed_as_it_was_run_not_as_it_is_after():
    """The bytes a process runs are the bytes it hashes: a file edited between its import and its hash (here by
    its own import) records the code that built the model."""
    import hashlib
    import tempfile

    from longsynth.models_ref.models import factories

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "edits.py")
        with open(path, "w") as f:
            f.write(EDITS_ITSELF)
        factory, identity = factories.load(f"{path}:build")
        with open(path, "rb") as f:
            now = f.read()
    assert identity["sha256"] == hashlib.sha256(EDITS_ITSELF.encode()).hexdigest() != hashlib.sha256(now).hexdigest()
    assert identity["model"] == "edits.py:build" and callable(factory)


# ---------------------------------------------------------------- B. non-finite options, diverged runs


@pytest.mark.parametrize("lr", ["nan", "inf", "1e309", "1e-3,-inf", "1e-3,NaN"])
def test_a_non_finite_learning_rate_is_one_line(tmp_path, lr):
    out = tmp_path / "out"
    line = one_error_line(invoke("evaluate", "dlr", "--suite", "cumsum", "--lr", lr, "--out", out))
    assert "'--lr'" in line and "finite numbers > 0" in line
    assert not out.exists()


def test_the_python_api_refuses_a_non_finite_learning_rate_before_planning(tmp_path):
    from longsynth.errors import LongsynthError
    from longsynth.models_ref.evaluation.sweep import Settings, evaluate

    for lrs in ((float("inf"),), (1e-3, float("nan")), (0.0,)):
        with pytest.raises(LongsynthError, match="--lr: learning rates must be finite numbers > 0"):
            evaluate("dlr", "cumsum", out=tmp_path / "out", settings=Settings(lrs=lrs), progress=False)
    assert not (tmp_path / "out").exists()


def test_a_diverged_run_is_reported_as_diverged_and_not_redone(tmp_path):
    from longsynth.certificate import read_report

    model, out = _model(tmp_path), tmp_path / "out"
    r = invoke("evaluate", model, "--suite", "cumsum", "--steps", "4", "--lr", "1e-3,1e20", "--out", out)
    assert r.exit_code == 0, r.output
    assert "cumsum lr 1e+20 seed 0: diverged at step" in r.output
    rep = read_report(out)  # the report is written, and it reads back against its schema
    assert rep["rows"][0]["best_lr"] == 1e-3 and rep["rows"][0]["diverged"] == 1
    assert rep["rows"][0]["test_mean"] is not None
    wild = next(run for run in rep["runs"] if run["lr"] == 1e20)
    assert wild["diverged"]["where"] in ("training loss", "validation", "test") and wild["test"] is None
    tame = next(run for run in rep["runs"] if run["lr"] == 1e-3)
    assert tame["diverged"] is None and tame["test"]["r2"] is not None
    md = (out / "report.md").read_text()
    assert "## Diverged runs" in md and "- cumsum lr 1e+20 seed 0: diverged at step" in md
    from longsynth.models_ref.reports.report import summary

    assert "test R^2: none: diverged at step" in summary(wild)  # what validate prints of such a run
    certs = sorted(out.glob("runs/cumsum/*/metrics.json"))
    when = [c.stat().st_mtime_ns for c in certs]
    r = invoke("evaluate", model, "--suite", "cumsum", "--steps", "4", "--lr", "1e-3,1e20", "--out", out)
    assert r.exit_code == 0 and "all 2 run(s) already finished" in r.output, r.output
    assert [c.stat().st_mtime_ns for c in certs] == when  # nothing was trained again


def test_a_row_whose_every_run_diverged_says_so(tmp_path):
    out = tmp_path / "out"
    r = invoke("evaluate", _model(tmp_path), "--suite", "cumsum", "--steps", "3", "--lr", "1e20", "--out", out)
    assert r.exit_code == 0, r.output
    row = json.loads((out / "report.json").read_text())["rows"][0]
    assert row["test_mean"] is None and row["best_lr"] is None and row["val"] is None and row["diverged"] == 1
    assert row["verdict"] == "diverged: every learning rate"
    table = r.output.split("task ")[1]
    assert "diverged" in table.splitlines()[1]  # the model's cell of the row


def test_the_trainer_stops_at_a_non_finite_training_loss():
    from longsynth.models_ref.training.trainer import TrainConfig, train

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 4, 2, generator=g), torch.randn(8, 1, 1, generator=g)
    cfg = TrainConfig(steps=20, lr=1e30, eval_every=100)  # no evaluation before the end: the loss tells
    res = train(lambda: torch.nn.Linear(2, 1), cfg, lambda step: (x, y), lambda: [(x, y)], lambda: [(x, y)])
    d = res["diverged"]
    assert d["where"] == "training loss" and 1 < d["step"] < 20 and res["steps"] == d["step"] - 1
    assert res["test"] is None and res["val"] is None
    assert len(res["history"]["train"]) == res["steps"]
    assert all(torch.isfinite(torch.tensor(h["loss"])) for h in res["history"]["train"])
    assert all(torch.isfinite(p).all() for p in res["model"].parameters())  # the last finite weights


# ---------------------------------------------------------------- C. options bounded before planning


@pytest.mark.parametrize("option,value", [("--seeds", "100000000"), ("--jobs", "100000"), ("--steps", "10000000000"),
                                          ("--threads", "1000000"), ("--lr", ",".join(["1e-3"] * 65))])
def test_a_count_past_its_bound_is_one_line_before_any_planning(tmp_path, option, value):
    out = tmp_path / "out"
    start = time.monotonic()
    line = one_error_line(invoke("evaluate", "dlr", "--suite", "cumsum", option, value, "--out", out))
    assert f"'{option}'" in line and time.monotonic() - start < 5
    assert not out.exists()


def test_a_sweep_of_too_many_runs_is_refused_before_planning(tmp_path):
    from longsynth.models_ref.evaluation import limits

    out = tmp_path / "out"
    lrs = ",".join(f"{i}e-4" for i in range(1, 21))
    start = time.monotonic()
    line = one_error_line(invoke("evaluate", "dlr", "--suite", "atomic", "--seeds", "1000", "--lr", lrs,
                                 "--out", out))
    assert "the sweep plans 220,000 runs" in line and f"at most {limits.MAX_RUNS:,}" in line
    assert time.monotonic() - start < 10 and not out.exists()


def test_the_python_api_bounds_its_counts(tmp_path):
    from longsynth.errors import LongsynthError
    from longsynth.models_ref.evaluation.sweep import Settings, evaluate

    for settings, match in ((Settings(seeds=10 ** 8), "--seeds: must be an integer from 1 to"),
                            (Settings(jobs=0), "--jobs: must be an integer from 1 to"),
                            (Settings(steps=10 ** 10), "--steps: must be an integer from 1 to"),
                            (Settings(lrs=(1e-3,) * 65), "--lr: at most 64 learning rates")):
        with pytest.raises(LongsynthError, match=match):
            evaluate("dlr", "cumsum", out=tmp_path / "out", settings=settings, progress=False)


@pytest.mark.parametrize("option,value", [("--steps", "0"), ("--steps", "10000000000"), ("--batch-size", "0"),
                                          ("--batch-size", "-3"), ("--threads", "1000000")])
def test_validate_bounds_its_counts(tmp_path, option, value):
    line = one_error_line(invoke("validate", "cumsum", option, value, "--report-dir", tmp_path / "r"))
    assert option in line
    assert not (tmp_path / "r").exists()


# ---------------------------------------------------------------- D. a full disk


@pytest.mark.parametrize("victim", ["last.pt", "best.pt", "metrics.json", "report.json"])
def test_a_full_disk_is_one_line_that_says_how_to_resume(tmp_path, monkeypatch, victim):
    from longsynth.outdir import Folder

    real = Folder.write_bytes

    def full(self, name, data):
        if name == victim:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, name, data)

    monkeypatch.setattr(Folder, "write_bytes", full)
    out = tmp_path / "out"
    line = one_error_line(invoke("evaluate", _model(tmp_path), "--suite", "cumsum", "--steps", "2", "--out", out))
    assert "the disk is full" in line and "rerun the same command" in line, line
    if victim.endswith(".pt"):
        assert f"checkpoints/{victim}: the disk is full (writing the checkpoint of step" in line, line
    assert not list(out.rglob(".*.tmp"))  # no partial file left under a temporary name
    monkeypatch.setattr(Folder, "write_bytes", real)
    r = invoke("evaluate", _model(tmp_path), "--suite", "cumsum", "--steps", "2", "--out", out)
    assert r.exit_code == 0, r.output  # once there is room, the same command finishes


# ---------------------------------------------------------------- E. edited run files

EVAL = ["evaluate", "--suite", "cumsum", "--steps", "4", "--lr", "1e-3"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """(model, a finished evaluate folder of one run); tests copy the folder before they edit it."""
    where = tmp_path_factory.mktemp("finished")
    model, out = _model(where), where / "out"
    r = invoke(EVAL[0], model, *EVAL[1:], "--out", out)
    assert r.exit_code == 0, r.output
    return model, out


@pytest.fixture
def copied(finished, tmp_path):
    import shutil

    model, out = finished
    shutil.copytree(out, tmp_path / "out")
    (run,) = (tmp_path / "out" / "runs" / "cumsum").iterdir()
    return model, tmp_path / "out", run


def _rerun(model, out, *more):
    return invoke(EVAL[0], model, *EVAL[1:], "--out", out, *more)


def _test_r2(out):
    return json.loads((out / "report.json").read_text())["runs"][0]["test"]["r2"]


def test_a_finished_run_records_the_sha256_of_its_files(copied):
    from longsynth.files import file_sha256

    _, _, run = copied
    record = json.loads((run / "files.json").read_text())["sha256"]
    assert {"metrics.json", "history.json", "curves.png", "checkpoints/last.pt"} <= set(record)
    assert all(record[name] == file_sha256(str(run / name)) for name in record)


def test_a_forged_result_is_never_reported(copied):
    model, out, run = copied
    good = _test_r2(out)
    cert = json.loads((run / "metrics.json").read_text())
    cert["test"]["r2"] = 1.0  # within the schema: only the record of the run's files tells
    (run / "metrics.json").write_text(json.dumps(cert))
    report = (out / "report.json").read_bytes()
    line = one_error_line(_rerun(model, out, "--edited", "refuse"))
    assert "metrics.json changed since the run finished" in line and "--edited refuse" in line
    assert (out / "report.json").read_bytes() == report  # nothing was rebuilt from it
    r = _rerun(model, out)
    assert r.exit_code == 0, r.output
    said = [s for s in r.output.splitlines() if "changed since the run finished" in s]
    assert len(said) == 1 and said[0].endswith("the run is redone"), r.output
    assert _test_r2(out) == good != 1.0  # re-tested from its last checkpoint: the run's own figure
    assert json.loads((run / "metrics.json").read_text())["test"]["r2"] == good


@pytest.mark.parametrize("edit", ["spec null", "steps text", "protocol_source list", "seq_len text"])
def test_a_certificate_with_an_edited_record_field_is_one_line(copied, edit):
    from longsynth import certificate

    model, out, run = copied
    cert = json.loads((run / "metrics.json").read_text())
    {"spec null": lambda c: c.update(spec=None), "steps text": lambda c: c.update(steps="20"),
     "protocol_source list": lambda c: c.update(protocol_source=["x"]),
     "seq_len text": lambda c: c["spec"].update(seq_len="abc")}[edit](cert)
    if edit != "spec null":  # a null spec is a certificate without one; the record of the files tells
        with pytest.raises(certificate.CertificateError):
            certificate.check(cert, "metrics.json")
    good = _test_r2(out)
    (run / "metrics.json").write_text(json.dumps(cert))
    r = _rerun(model, out)
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    assert sum("the run is redone" in s for s in r.output.splitlines()) == 1, r.output
    assert _test_r2(out) == good


def _edit_checkpoint(path, change):
    ck = torch.load(path, weights_only=True)
    change(ck)
    torch.save(ck, path)


def _foreign_optimizer(ck):
    state = ck["optimizer"]["state"]
    state[0]["exp_avg"] = torch.zeros(7, 7)


def _foreign_lr(ck):
    ck["optimizer"]["param_groups"][0]["base_lr"] = 1e9


CHECKPOINT_EDITS = {
    "wrong shape": (lambda ck: ck["model"].update(weight=torch.zeros(5, 5)), "its weights do not fit the model"),
    "text step": (lambda ck: ck.update(step="4"), "step: expected an integer, got a string"),
    "negative step": (lambda ck: ck.update(step=-1), "step: must be at least 0, got -1"),
    "huge step": (lambda ck: ck.update(step=10 ** 12), "step: 1,000,000,000,000 is not a step of this run"),
    "short history": (lambda ck: ck["history"]["train"].pop(), "one training record per step"),
    "bad RNG state": (lambda ck: ck["rng"].update(torch=torch.zeros(3, dtype=torch.uint8)), "RNG state"),
    "foreign optimizer state": (_foreign_optimizer, "optimizer state is not this run's"),
    "foreign optimizer settings": (_foreign_lr, "optimizer state is not this run's"),
    "not a checkpoint": (lambda ck: ck.clear(), "model_config: missing"),
    "a tensor in the history": (lambda ck: ck["history"]["train"][0].update(lr=torch.zeros(3)),
                                "something other than numbers and text"),
    "a tensor in a val record": (lambda ck: ck["history"]["val"][0].update(extra={"x": torch.ones(1)}),
                                 "something other than numbers and text"),
}


@pytest.mark.parametrize("edit", sorted(CHECKPOINT_EDITS))
def test_a_damaged_checkpoint_is_one_line_and_the_run_starts_over(copied, edit):
    model, out, run = copied
    good = _test_r2(out)
    for name in ("metrics.json", "files.json"):  # an unfinished run: the rerun resumes from last.pt
        (run / name).unlink()
    change, said = CHECKPOINT_EDITS[edit]
    _edit_checkpoint(run / "checkpoints" / "last.pt", change)
    line = one_error_line(_rerun(model, out, "--edited", "refuse"))
    assert said in line and "last.pt" in line and "--edited refuse" in line, line
    r = _rerun(model, out)
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    told = [s for s in r.output.splitlines() if "the run starts over" in s]
    assert len(told) == 1 and said in told[0], r.output
    assert _test_r2(out) == good  # trained again from step 0: the same run


def test_an_edited_checkpoint_of_a_finished_run_retrains_it_from_the_start(copied):
    model, out, run = copied
    good = _test_r2(out)
    _edit_checkpoint(run / "checkpoints" / "last.pt", lambda ck: ck["model"].update(weight=ck["model"]["weight"] + 1))
    r = _rerun(model, out)
    assert r.exit_code == 0, r.output
    said = [s for s in r.output.splitlines() if "changed since the run finished" in s]
    assert len(said) == 1 and "checkpoints/last.pt" in said[0] and "from the start" in said[0], r.output
    assert "resuming" not in r.output and _test_r2(out) == good
