"""What got in a new user's way with evaluate and validate: a plan up front, a resume line
and hint, checkpoints at every evaluation, one thread policy, an exit code for a FAILED
certificate."""
import json
import os
import re

import pytest
from click.testing import CliRunner

from longsynth.cli.main import cli

torch = pytest.importorskip("torch")


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    torch.set_num_threads(1)
    return r


def test_evaluate_plans_up_front_and_says_when_it_resumes(tmp_path):
    out = tmp_path / "rep"
    r = invoke("evaluate", "dlr", "--suite", "cumsum,select", "--steps", "2", "--threads", "2", "--out", out)
    assert r.exit_code == 0, r.output
    assert "plan: 2 runs on 2 tasks, 4 training steps in all, one after another on cpu" in r.output
    assert re.search(r"\[1/2\] cumsum lr 0.002 seed 0: test r2 -?\d\.\d{4} \(\d+ s\); about \d+ s left for the other "
                     r"1 run\(s\)", r.output), r.output
    rep = json.loads((out / "report.json").read_text())
    assert [run["torch_threads"] for run in rep["runs"]] == [2, 2]
    (metrics,) = [os.path.join(dp, "metrics.json") for dp, _, fs in os.walk(out / "runs" / "cumsum")
                  if "metrics.json" in fs]
    os.remove(metrics)
    r = invoke("evaluate", "dlr", "--suite", "cumsum,select", "--steps", "2", "--out", out)
    assert r.exit_code == 0, r.output
    assert "1 of 2 runs already finished" in r.output and "plan: 1 run on 1 task, 2 training steps" in r.output
    assert f"resuming {os.path.dirname(metrics)}/checkpoints/last.pt at step 2 of 2" in r.output
    r = invoke("evaluate", "dlr", "--suite", "cumsum,select", "--steps", "2", "--out", out)
    assert r.exit_code == 0 and "plan:" not in r.output, r.output  # not "plan: 0 runs on 0 tasks"
    assert f"all 2 run(s) already finished in {out}; nothing to train: the report is rebuilt" in r.output


def test_an_interrupted_evaluate_says_how_to_resume(tmp_path, monkeypatch):
    from longsynth.models_ref.evaluation import sweep as evaluate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate, "evaluate", interrupted)
    r = invoke("evaluate", "dlr", "--suite", "cumsum", "--steps", "2", "--out", tmp_path / "rep")
    assert r.exit_code == 130 and "rerun the same command to resume" in r.output
    assert "saved at every evaluation" in r.output


def test_last_checkpoint_is_written_at_every_evaluation(tmp_path):
    from longsynth.models_ref.models.stack import ModelConfig
    from longsynth.models_ref.training.trainer import TrainConfig, load_checkpoint, train

    cfg = ModelConfig(d_input=1, d_output=2, H=4, N=4, n_layers=1)
    tc = TrainConfig(steps=10, lr=1e-3, eval_every=3, seed=0, checkpoint_every=100)

    def data(step):
        if step == 4:
            raise KeyboardInterrupt  # an interrupt during step 5, after the evaluation at step 3
        return torch.randn(2, 8, 1), torch.randn(2, 8, 2)

    with pytest.raises(KeyboardInterrupt):
        train(cfg, tc, data, lambda: [(torch.randn(2, 8, 1), torch.randn(2, 8, 2))], checkpoint_dir=str(tmp_path))
    assert load_checkpoint(str(tmp_path / "last.pt"))["step"] == 3


def test_a_failed_certificate_exits_with_3(tmp_path):
    r = invoke("validate", "cumsum", "--steps", "2", "--threads", "1", "--report-dir", tmp_path / "v")
    assert "certificate FAILED" in r.output and r.exit_code == 3, r.output
    assert json.loads((tmp_path / "v" / "metrics.json").read_text())["torch_threads"] == 1


def test_a_float_model_on_a_token_task_gets_the_token_hint():
    from longsynth.errors import LongsynthError
    from longsynth.models_ref.evaluation.harness import build
    from longsynth.spec import ModelSpec

    spec = ModelSpec(task="listops-subtrees", protocol="listops-subtrees", scale="tiny", objective="tokens",
                     readout="positions", d_output=10, seq_len=64, target_len=64, causal=False, vocab_size=16)

    def float_only(spec):
        return torch.nn.Linear(spec.d_input, 8)

    with pytest.raises(LongsynthError, match=r"listops-subtrees is a token task: inputs are int64 token ids \[B, T\] "
                                             r"and spec.d_input is None; embed them with torch.nn.Embedding"):
        build(float_only, spec)


def _run(task, test, paper_columns, steps=100, length=512):
    return {"task": task, "protocol": "atomic", "scale": "tiny", "model": "/home/me/models/mygru.py:build", "lr": 1e-3,
            "seed": 0, "primary_metric": "r2", "test": {"r2": test}, "best": {"r2": test}, "wall_time_s": 1.0,
            "train_tokens_per_s": 1.0, "steps": steps, "spec": {"seq_len": length}, "paper_columns": paper_columns}


def test_the_report_text_is_made_from_the_numbers_of_its_table():
    from longsynth.models_ref.reports.report import Report

    figures = {"dlr": {"r2": 0.5}, "local-attention": {"r2": 0.8}, "not-a-column": {"r2": 0.99}}
    rep = Report(identity={"model": "/home/me/models/mygru.py:build", "sha256": None}, suite="cumsum", scale="tiny",
                 settings={"seeds": 1}, runs=[_run("cumsum", 0.7, figures)])
    (row,) = rep.rows()
    # read on validation as Table 1's figures are; 100 of the tiny protocol's 600 steps is no verdict
    assert row["verdict"] == "validation 0.700: budget cut to 17% of the protocol's 600 steps: not a verdict"
    # the figures are the tables' own (models_ref/protocols/), whatever copy a certificate carries, each
    # named as the paper names it
    assert row["paper"] == {"dlr": 1, "dss": 1, "attention": 1} and row["paper_names"]["dlr"] == "DLR (1 layer, L 2^12)"
    md = rep.to_markdown()
    tiny = next(line for line in md.splitlines() if line.startswith("The tiny scale"))
    assert "0.99" not in md and "cumsum at L = 512, 100 steps" in tiny and "600 steps" not in tiny
    assert rep.table().splitlines()[0].split()[2] == "mygru.py:build"  # the name, not the path's tail


def test_show_out_makes_its_folder_and_wants_a_png_name(tmp_path):
    r = invoke("show", "cumsum", "--L", "32", "--out", tmp_path / "new" / "figs" / "c.png")
    assert r.exit_code == 0 and (tmp_path / "new" / "figs" / "c.png").is_file(), r.output
    r = invoke("show", "cumsum", "--L", "32", "--out", tmp_path / "c")
    assert r.exit_code == 2 and "give a name ending in .png, got" in r.output and not list(tmp_path.glob("c*"))


def test_a_module_name_beside_a_file_suggests_the_file(tmp_path, monkeypatch):
    (tmp_path / "mygru.py").write_text("def build(spec):\n    raise ValueError\n")
    monkeypatch.chdir(tmp_path)
    r = invoke("evaluate", "mygru:build", "--suite", "cumsum", "--out", tmp_path / "rep")
    assert r.exit_code == 1 and "mygru.py is here: name it as mygru.py:build" in r.output, r.output


def test_a_suite_says_it_checks_the_model_first_and_cache_generation_shows_progress(tmp_path, monkeypatch):
    from longsynth import store
    from longsynth.models_ref.evaluation import plan as evaluate

    monkeypatch.setenv("LONGSYNTH_CACHE", str(tmp_path / "cache"))
    seen = {}

    def generate(root, task, params, **kw):  # what dataset_for asks of gen, without generating
        seen.update(kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "generate", generate)
    proto = evaluate.resolve("listops-subtrees", "tiny", task="listops-subtrees")
    with pytest.raises(KeyboardInterrupt):
        evaluate.dataset_for(proto, None, lambda line: None, progress=True)
    assert callable(seen["progress"])
    lines = []
    evaluate.plan("dlr", "cumsum,select", evaluate.Settings(steps=1), str(tmp_path / "o"), lines.append)
    assert lines[0] == "checking dlr on the 2 tasks of cumsum,select before anything trains"
