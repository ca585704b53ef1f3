"""The field's token suites in the harness (models_ref/protocols/ recall.py, state.py, mad.py; docs/evaluate.md
suites"): their protocols, fixed training sets, accuracy by length, sweeps and reports."""
import json
import math
import os

import pytest

torch = pytest.importorskip("torch")

from longsynth import certificate  # noqa: E402
from longsynth.models_ref.protocols import mad, recall, registry, state  # noqa: E402
from longsynth.models_ref.evaluation.plan import Settings, plan, suite_tasks  # noqa: E402
from longsynth.models_ref.evaluation.protocol import fixed_train, groups, resolve  # noqa: E402
from longsynth.models_ref.reports.report import Report  # noqa: E402
from longsynth.models_ref.reports.records import binned, by_length  # noqa: E402
from longsynth.models_ref.training.trainer import TrainConfig, lr_factor  # noqa: E402
from longsynth.torch import IGNORE_INDEX  # noqa: E402

TOKEN_PROTOCOLS = {**recall.PROTOCOLS, **state.PROTOCOLS, **mad.PROTOCOLS}  # the field's token families


class Embed(torch.nn.Module):
    """Position-wise token model (causal by construction): embedding -> logits."""

    def __init__(self, spec):
        super().__init__()
        self.emb = torch.nn.Embedding(spec.vocab_size, 16)
        self.out = torch.nn.Linear(16, spec.d_output)

    def forward(self, x):  # x [B, T] int64
        return self.out(self.emb(x))  # [B, T, V]


# ---------------------------------------------------------------- protocols


def test_every_field_protocol_resolves_and_its_suites_have_the_papers_members():
    for (name, scale) in TOKEN_PROTOCOLS:
        p = resolve(name, scale)
        assert p.objective == "tokens" and p.readout == "positions" and not p.stored, name
        assert p.task in ("mqar", "associative-recall", "induction-head", "selective-copying", "parity",
                          "modular-arithmetic", "word-problem") + tuple(mad.MAD_TRAIN)
    assert len(suite_tasks("mad", "paper")) == 66  # MAD's grid
    assert suite_tasks("mad", "tiny") == [(t, t) for t in mad.MAD_TRAIN]  # the six baselines
    assert [p for p, _ in suite_tasks("mqar", "paper")] == ["mqar-64", "mqar-128", "mqar-256", "mqar-512"]
    mqar = resolve("mqar-512", "paper")
    assert (mqar.batch_size, mqar.steps, mqar.train_samples, mqar.widths) == (128, 50_000, 100_000, (64, 128, 256, 512))
    assert mqar.lrs == pytest.approx((1e-4, 4.6416e-4, 2.1544e-3, 1e-2), rel=1e-4)  # numpy.logspace(-4, -2, 4)
    mem = resolve("mad-memorization-v8192", "paper")
    assert mem.data == {"vocab_size": 8192} and mem.train_samples == 256 and mem.steps == 400  # 200 epochs of 2
    small = resolve("mad-recall-n800", "paper")
    assert small.data == {} and small.train_samples == 800 and small.steps == 200 * 6
    assert len({r["task"] for r in TOKEN_PROTOCOLS.values()}) == 7 + 6  # MAD's six tasks beside the field's seven


def test_grazzi_table_3_is_stored_as_accuracy_from_its_scaled_figures():
    # scaled = (acc - chance) / (1 - chance): Mamba [-1, 1] parity 1.0 -> 1.0, DeltaNet [0, 1] 0.017 -> 0.5085
    assert registry.PAPER["parity"]["s6-signed"]["accuracy"] == 1.0
    assert registry.PAPER["parity"]["s6"]["accuracy"] == 0.5
    assert registry.PAPER["modular-arithmetic"]["deltanet [-1,1]"]["accuracy"] == pytest.approx(0.2 + 0.8 * 0.971)


def test_a_group_with_no_member_at_a_scale_and_an_unknown_member_are_one_line(tmp_path):
    from longsynth.errors import LongsynthError

    with pytest.raises(LongsynthError, match="^--scale: mad-recall-v32 has no tiny scale; it has paper$"):
        resolve("mad-recall-v32", "tiny")  # MAD's settings other than the baselines are paper scale only
    with pytest.raises(LongsynthError, match="unknown suite"):
        suite_tasks("mqar-1024")


# ---------------------------------------------------------------- breakdown by length


def test_groups_give_each_scored_token_its_sequences_length_or_its_position():
    I = IGNORE_INDEX  # noqa: E741
    y = torch.tensor([[I, I, 1, I, I], [I, 2, I, I, I], [3, 4, I, 5, I]])
    assert groups(y, "length").tolist() == [[-1, -1, 4, -1, -1], [-1, 3, -1, -1, -1], [5, 5, -1, 5, -1]]
    assert groups(y, "position").tolist() == [[-1, -1, 2, -1, -1], [-1, 1, -1, -1, -1], [0, 1, -1, 3, -1]]
    from longsynth import batch

    # parity: n tokens (the word and its answer), n drawn in the test range; the group is n
    b = batch("parity", 0, 64, split="test", context_length=16, test_min_sequence_length=3,
              test_max_sequence_length=9, max_sequence_length=9)
    y = torch.from_numpy(b["targets"].astype("int64"))
    n = (torch.from_numpy(b["inputs"].astype("int64")) != 0).sum(1) + 1  # the word's bits, then its answer
    assert groups(y, "length").amax(1).tolist() == n.tolist() and 3 <= int(n.min()) and int(n.max()) <= 9
    # with brackets the authors' n also counts the [PAD] after the answer: the target sits at n - 3
    from longsynth.models_ref.protocols.registry import PROTOCOLS
    from longsynth.models_ref.evaluation.protocol import length_offset, resolve

    params = dict(brackets=True, context_length=32, min_sequence_length=6, max_sequence_length=14,
                  test_min_sequence_length=6, test_max_sequence_length=14)
    b = batch("modular-arithmetic", 0, 256, split="test", **params)
    x, y = (torch.from_numpy(b[k].astype("int64")) for k in ("inputs", "targets"))
    offset = length_offset(resolve("modular-arithmetic-brackets", "tiny", task="modular-arithmetic"))
    n = groups(y, "length", offset).amax(1)
    assert offset == 3 and int(n.min()) == 6 and int(n.max()) == 14  # the drawn range exactly, both ends
    assert n.tolist() == ((x != 11).sum(1) + 1).tolist()  # its tokens before the padding [PAD] (11), and that one
    assert PROTOCOLS[("parity", "tiny")]["breakdown"] == "length"


def test_by_length_sums_correct_answers_over_seeds_and_bins_many_lengths():
    runs = [{"test": {"by_length": {"10": {"accuracy": 1.0, "count": 3}, "20": {"accuracy": 0.0, "count": 1}}},
             "test_sets": {"64": {"accuracy": 0.5, "exact": {"count": 10}}}},
            {"test": {"by_length": {"10": {"accuracy": 0.0, "count": 1}}},
             "test_sets": {"64": {"accuracy": 1.0, "exact": {"count": 30}}}}]
    cells = {(c["kind"], c["at"]): (c["accuracy"], c["count"]) for c in by_length(runs)}
    assert cells[("length", 10)] == (0.75, 4) and cells[("length", 20)] == (0.0, 1)
    assert cells[("test length", 64)] == pytest.approx((35 / 40, 40))
    many = [{"kind": "length", "at": n, "accuracy": float(n % 2), "count": 1} for n in range(40, 257)]
    bins = binned(many)
    assert len(bins) == 8 and bins[0][0] == 40 and bins[-1][1] == 256
    assert sum(b[3] for b in bins) == len(many)  # every length in exactly one range
    assert all(abs(b[2] - 0.5) < 0.05 for b in bins)


def test_parity_test_split_is_grouped_by_its_test_lengths_after_a_short_run(tmp_path):
    rep = pytest.importorskip("longsynth").evaluate(Embed, "parity", out=str(tmp_path / "p"), steps=3,
                                                   progress=False)
    row = rep.rows()[0]
    lengths = [c["at"] for c in row["by_length"] if c["kind"] == "length"]
    assert lengths and min(lengths) >= 16 and max(lengths) <= 64 and max(lengths) > 40  # tiny: test lengths 16-64
    assert sum(c["count"] for c in row["by_length"]) == rep.runs[0]["test"]["exact"]["count"]
    assert "## Accuracy by test length" in rep.to_markdown() and (tmp_path / "p" / "lengths.png").exists()


def test_induction_heads_are_tested_at_each_test_length_with_the_trained_model(tmp_path):
    import longsynth

    rep = longsynth.evaluate(Embed, "induction-heads", out=str(tmp_path / "ih"), steps=2, progress=False)
    run = rep.runs[0]
    assert sorted(map(int, run["test_sets"])) == [32, 64, 128, 256, 512, 1024]
    for label, res in run["test_sets"].items():
        assert res["exact"]["count"] == 8 * 16  # one scored token per sequence: eval_batches x batch
    at = [c["at"] for c in rep.rows()[0]["by_length"]]
    assert at == [32, 64, 128, 256, 512, 1024]
    saved = json.loads((tmp_path / "ih" / "report.json").read_text())
    assert saved["rows"][0]["by_length"] == rep.rows()[0]["by_length"]


# ---------------------------------------------------------------- fixed training sets and sweeps


def test_a_fixed_training_set_repeats_its_samples_each_epoch_in_a_new_order():
    src = fixed_train("mqar", {"vocab_size": 64, "input_seq_len": 16, "num_kv_pairs": 2}, 40, 8, seed=0)
    epoch = [src(s) for s in range(5)]  # 40 samples, batches of 8
    again = [src(s) for s in range(5, 10)]
    rows = lambda bs: sorted(tuple(r.tolist()) for b in bs for r in b[0])  # noqa: E731
    assert rows(epoch) == rows(again) and len(set(rows(epoch))) == 40
    assert [tuple(r.tolist()) for r in epoch[0][0]] != [tuple(r.tolist()) for r in again[0][0]]
    from longsynth import batch

    block = batch("mqar", 0, 40, vocab_size=64, input_seq_len=16, num_kv_pairs=2)
    assert sorted(tuple(r) for r in block["inputs"].astype("int64").tolist()) == rows(epoch)


def test_a_protocols_sweep_plans_every_lr_weight_decay_and_width(tmp_path):
    out = tmp_path / "sweep"
    planned, _, _ = plan(Embed, "mad-memorization", Settings(scale="paper"), str(out), lambda line: None)
    assert len(planned) == 3 * 2  # MAD: lr {1e-4, 5e-4, 1e-3} x weight decay {0, 0.1}
    assert {(j.lr, j.weight_decay) for j, _ in planned} == {(lr, wd) for lr in (1e-4, 5e-4, 1e-3) for wd in (0, .1)}
    assert all(os.path.basename(d.path).startswith(f"lr{j.lr:g}-wd{j.weight_decay:g}-seed0-") for j, d in planned)
    planned, _, _ = plan(Embed, "mqar-64", Settings(scale="paper", lrs=(1e-3,)), str(out), lambda line: None)
    assert [j.width for j, _ in planned] == [64, 128, 256, 512]  # --lr replaces the sweep, not the width grid


def test_a_built_in_takes_the_width_the_grid_asks_for():
    from longsynth.models_ref.models.factories import BUILTIN
    from longsynth.spec import ModelSpec

    spec = ModelSpec(task="mqar", protocol="mqar-64", scale="paper", objective="tokens", readout="positions",
                     d_output=8192, seq_len=64, target_len=64, causal=True, vocab_size=8192, d_model=256)
    cfg = BUILTIN["attention"].config(spec)
    assert cfg.H == 256 and cfg.vocab_size == 8192 and cfg.n_layers == 2


def test_linear_schedule_decays_from_the_peak_to_the_floor():
    cfg = TrainConfig(steps=110, lr=1.0, schedule="linear", warmup_steps=10, min_lr_ratio=0.1)
    assert lr_factor(9, cfg) == 1.0 and lr_factor(10, cfg) == pytest.approx(1.0)
    assert lr_factor(60, cfg) == pytest.approx(0.1 + 0.9 * 0.5) and lr_factor(110, cfg) == pytest.approx(0.1)


# ---------------------------------------------------------------- reports and certificates


def _cert(protocol, acc, lr=1e-3, wd=None, width=None, val=None, task=None):
    return {"task": task or TOKEN_PROTOCOLS[(protocol, "paper")]["task"], "family": "tokens", "protocol": protocol,
            "model": "m",
            "scale": "paper", "lr": lr, "weight_decay": wd, "width": width, "seed": 0, "primary_metric": "accuracy",
            "best": {"accuracy": acc if val is None else val}, "test": {"accuracy": acc},
            "paper_columns": registry.PAPER.get(protocol, {}), "wall_time_s": 1.0, "train_tokens_per_s": 1.0,
            "spec": {"seq_len": 8}, "steps": TOKEN_PROTOCOLS[(protocol, "paper")]["steps"]}  # the whole budget


def test_the_mad_summary_averages_settings_per_task_then_tasks():
    runs = [_cert("mad-recall", .9, wd=0.0, val=.9), _cert("mad-recall", .2, wd=0.1, val=.1),
            _cert("mad-recall-v32", .7, wd=0.0), _cert("mad-compression", .4, wd=0.0)]
    rep = Report(identity={"model": "m", "sha256": None}, suite="mad", scale="paper", settings={}, runs=runs)
    rows = {r["task"]: r for r in rep.rows()}
    assert rows["mad-recall"]["test_mean"] == .9 and rows["mad-recall"]["best_weight_decay"] == 0.0
    summary = {s["group"]: s for s in rep.summary()}
    assert summary["mad-recall"]["score"] == pytest.approx(0.8) and summary["mad-recall"]["settings"] == 2
    # compression is not comparable with MAD's (docs/evaluate.md): kept out of the mean, the paper's mean
    # taken over the same tasks
    assert summary["mean"]["score"] == pytest.approx(0.8) and summary["mean"]["excluded"] == ["mad-compression"]
    assert summary["mean"]["paper"]["transformer"] == .941 and summary["mean"]["paper_mad_score"]["transformer"] == .745
    md = rep.to_markdown()
    assert "## Task scores" in md and "| mad-recall | 2 of 11 | 0.094 | 0.800 |" in md


def test_mqar_rows_are_per_protocol_and_width_beside_figure_2():
    runs = [_cert("mqar-64", .99, width=64), _cert("mqar-64", .5, width=128), _cert("mqar-512", .1, width=64)]
    rep = Report(identity={"model": "attention", "sha256": None}, suite="mqar", scale="paper", settings={}, runs=runs)
    assert [r["task"] for r in rep.rows()] == ["mqar-64 d64", "mqar-64 d128", "mqar-512 d64"]
    assert rep.columns[0] == "attention" and "h3 (d 64)" in rep.columns
    assert "consistent with the paper's Attention (every width)" in rep.rows()[0]["verdict"]
    assert "differs from" in rep.rows()[2]["verdict"]


@pytest.mark.parametrize("edit, field_name", [
    (lambda c: c["test"].update(by_length={"abc": {"accuracy": 1.0, "count": 1}}), "test.by_length"),
    (lambda c: c["test"].update(by_length={"12": {"accuracy": math.nan, "count": 1}}), "test.by_length.12"),
    (lambda c: c.update(test_sets={"64": {"accuracy": "high"}}), "test_sets.64.accuracy"),
    (lambda c: c.update(weight_decay=-1.0), "weight_decay"),
])
def test_an_edited_length_table_in_a_certificate_is_one_line(edit, field_name):
    cert = _cert("parity", .5)
    certificate.check(cert, "metrics.json")
    edit(cert)
    with pytest.raises(certificate.CertificateError, match=field_name.replace(".", r"\.")):
        certificate.check(cert, "metrics.json")


# ---------------------------------------------------------------- validate on token tasks


def test_validate_a_token_task_trains_its_positive_control_and_fails_below_the_threshold(tmp_path):
    from click.testing import CliRunner

    from longsynth.cli.main import cli
    from longsynth.models_ref.evaluation.validate import default_model

    assert default_model("mqar") == "attention" and default_model("selective-copying") == "s6"
    assert default_model("mqar-256") == "attention" and default_model("cumsum") == "dlr"
    r = CliRunner().invoke(cli, ["validate", "mqar", "--steps", "2", "--report-dir", str(tmp_path / "v"), "--json"])
    torch.set_num_threads(1)
    assert r.exit_code == 3, r.output  # two steps cannot reach 0.9: the certificate FAILED
    out = json.loads((tmp_path / "v" / "metrics.json").read_text())
    assert out["model"] == "attention" and out["protocol"] == "mqar-64" and out["scale"] == "tiny"
    assert out["certificate"]["threshold"] == 0.9 and out["certificate"]["can_fail"]
    assert out["certificate"]["passed"] is False and "below 0.90" in out["certificate"]["reasons"][0]
    r = CliRunner().invoke(cli, ["validate", "mad-fuzzy-recall", "--steps", "2", "--report-dir", str(tmp_path / "f")])
    assert r.exit_code == 1 and "no positive control" in r.output and "29.8%" in r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "f").exists()


def test_a_token_certificate_passes_at_its_threshold_and_has_no_verdict_without_one():
    from longsynth.models_ref.evaluation.validate import token_certificate

    out = {"protocol": "selective-copying", "scale": "paper", "model": "s6", "test": {"accuracy": 0.9}}
    assert token_certificate(out)["passed"] is True and token_certificate(out)["threshold"] == pytest.approx(.898)
    assert token_certificate({**out, "test": {"accuracy": 0.89}})["passed"] is False
    assert token_certificate({**out, "model": "gru"})["passed"] is None  # no paper figure for it there


def test_the_lengths_figure_marks_the_training_length_of_the_test_sets():
    runs = [{**_cert("induction-heads", .5), "test_set_params": {"64": {"input_seq_len": 64}},
             "data": {"params": {"input_seq_len": 256}},
             "test_sets": {"64": {"accuracy": 1.0, "exact": {"count": 8}}, "512": {"accuracy": .2}}}]
    rep = Report(identity={"model": "m", "sha256": None}, suite="induction-heads", scale="paper", settings={},
                 runs=runs)
    row = rep.rows()[0]
    assert row["trained_at"] == 256 and [c["at"] for c in row["by_length"]] == [64, 512]
    fig = rep.lengths_figure()
    assert any(t.get_text() == "trained to 256" for t in fig.axes[0].texts)


def test_a_dask_sweep_says_where_it_stands_while_no_run_finishes():
    distributed = pytest.importorskip("distributed")
    import time

    from longsynth.models_ref.evaluation.sweep import _as_finished

    lines = []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client, client.as_current():
        futures = [client.submit(time.sleep, s, pure=False) for s in (0.0, 0.6)]
        finished = list(_as_finished(futures, lines.append, every=0.15))
    assert sorted(f.key for f in finished) == sorted(f.key for f in futures)
    assert lines and all(line.startswith("dask: ") and " of 2 runs finished" in line for line in lines)
    assert "1 of 2 runs finished, 1 queued or running" in lines[-1]


def test_the_word_problem_depth_grid_runs_each_depth_as_its_own_row(tmp_path):
    out = tmp_path / "wp"
    planned, _, _ = plan("gru", "word-problem-a5", Settings(scale="tiny"), str(out), lambda line: None)
    assert [j.depth for j, _ in planned] == [1, 2]
    assert all(os.path.basename(d.path).startswith(f"lr0.003-n{j.depth}-seed0-") for j, d in planned)
    from longsynth.models_ref.models.factories import BUILTIN
    from longsynth.models_ref.evaluation.harness import prepare

    spec = prepare(planned[1][0]).spec
    assert spec.n_layers == 2 and BUILTIN["gru"].config(spec).n_layers == 2
    runs = [{**_cert("word-problem-a5", .9), "depth": 1}, {**_cert("word-problem-a5", .4), "depth": 2}]
    rep = Report(identity={"model": "gru", "sha256": None}, suite="word-problem", scale="paper", settings={},
                 runs=runs)
    assert [r["task"] for r in rep.rows()] == ["word-problem-a5, 1 layer", "word-problem-a5, 2 layers"]
