"""A report read without the docs must not mislead (docs/evaluate.md, "Reading a report"): a run cut
short is not a verdict, chance and known plateaus are said and drawn, an incomparable task stays out of
the means with its caveat beside it, every paper column carries its paper's name and source, and no
title holds the path of the user's machine."""
import json

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from longsynth.models_ref.protocols import mad, registry  # noqa: E402
from longsynth.models_ref.reports.report import Report  # noqa: E402


def _cert(protocol, acc, *, scale="tiny", steps=None, protocol_steps=None, task=None, count=1024, width=None):
    """A finished run's certificate as the harness writes it, with what a report reads."""
    row = registry.PROTOCOLS[(protocol, scale)]
    protocol_steps = protocol_steps or row["steps"]
    steps = protocol_steps if steps is None else steps
    return {"task": task or row["task"], "family": "tokens", "protocol": protocol, "model": "m", "scale": scale,
            "lr": row["lr"], "weight_decay": None, "width": width, "seed": 0, "primary_metric": "accuracy",
            "best": {"accuracy": acc}, "test": {"accuracy": acc, "exact": {"accuracy": acc, "count": count}},
            "paper_columns": registry.PAPER.get(protocol, {}), "wall_time_s": 1.0, "train_tokens_per_s": 1.0,
            "spec": {"seq_len": 64}, "steps": steps, "data": {"params": dict(row["data"])},
            "schedule": {"steps": steps, "protocol": {"steps": protocol_steps}}}


def _report(runs, model="m", suite="s", sha=None, scale="tiny"):
    return Report(identity={"model": model, "sha256": sha}, suite=suite, scale=scale, settings={}, runs=runs)


def _close(fig):
    plt.close(fig)


# ---------------------------------------------------------------- budgets, chance, plateaus


def test_a_run_cut_short_with_steps_is_not_a_verdict_and_never_differs():
    """s6 at 200 of the tiny protocol's 2,000 steps on selective copying: 0.078, chance 1/14."""
    rep = _report([_cert("selective-copying", 0.078, steps=200)], model="s6")
    (row,) = rep.rows()
    assert row["budget"] == pytest.approx(0.1) and row["protocol_steps"] == 2000
    assert row["verdict"].startswith("budget cut to 10% of the protocol's 2,000 steps: not a verdict")
    assert "at chance (0.07)" in row["verdict"]
    md, text = rep.to_markdown(), rep.table()
    assert "**Budget cut**: selective-copying trained 200 of its protocol's 2,000 steps (10%)" in md
    for shown in (md, text, json.dumps(rep.to_json()["rows"])):
        assert "not a verdict" in shown and "differs" not in shown
    fig = rep.figure()
    try:
        assert "not a verdict" in fig.axes[0].get_yticklabels()[0].get_text()
    finally:
        _close(fig)
    # the same figure over the whole budget is a verdict, at chance; far from it and from the paper: differs
    full = _report([_cert("selective-copying", 0.078)], model="s6").rows()[0]["verdict"]
    assert full.startswith("at chance (0.07); tiny setting: below the paper's Mamba (Mamba arch., S6 layer): 1.00")
    assert "differs" not in full and "not a verdict" not in full
    half = _report([_cert("selective-copying", 0.5)], model="s6").rows()[0]["verdict"]
    assert half == "tiny setting: below the paper's Mamba (Mamba arch., S6 layer): 1.00 (at the paper's own setting)"
    # at the paper's scale the same number is a verdict against the paper
    paper = _report([_cert("selective-copying", 0.5)], model="s6", scale="paper").rows()[0]["verdict"]
    assert paper == "differs from the paper's Mamba (Mamba arch., S6 layer): 1.00"


def test_evaluate_with_fewer_steps_than_the_protocol_reports_no_verdict(tmp_path):
    import torch

    import longsynth

    def factory(spec):
        return torch.nn.Linear(spec.d_input, spec.d_output)

    rep = longsynth.evaluate(factory, "cumsum", out=str(tmp_path / "r"), steps=3, progress=False)
    verdict = json.loads((tmp_path / "r" / "report.json").read_text())["rows"][0]["verdict"]
    assert verdict.startswith("validation ") and "budget cut to 0.5% of the protocol's 600 steps: not a verdict" \
        in verdict
    assert "differs" not in (tmp_path / "r" / "report.md").read_text() and rep.rows()[0]["chance"] == 0.0


def test_mqar_on_its_copy_plateau_says_so_rather_than_differs():
    verdict = _report([_cert("mqar-64", 0.253, width=64)], model="dlr").rows()[0]["verdict"]
    assert verdict.startswith("on the copy plateau (0.25") and "differs" not in verdict
    verdict = _report([_cert("mqar-64", 0.60, width=64)], model="dlr").rows()[0]["verdict"]
    assert verdict.startswith("-0.38 against the paper's best (Attention (every width): 0.98)")


@pytest.mark.parametrize("protocol, level", [("selective-copying", 1 / 14), ("mqar-64", 1 / 64), ("parity", 1 / 2),
                                             ("modular-arithmetic", 1 / 5), ("h3-recall", 1 / 4),
                                             ("mad-selective-copying", 1 / 14)])
def test_chance_is_in_the_json_the_markdown_and_drawn_as_a_line(protocol, level):
    rep = _report([_cert(protocol, 0.9, width=64 if protocol == "mqar-64" else None)])
    (row,) = rep.to_json()["rows"]
    assert row["chance"] == pytest.approx(level) and row["chance_why"]
    md = rep.to_markdown()
    head, cells = [line for line in md.splitlines() if line.startswith("| ")][:2]
    assert head.split(" | ")[3] == "chance" and cells.split(" | ")[3] == f"{level:.3f}"
    fig = rep.figure()
    try:
        lines = [c for c in fig.axes[0].collections if str(c.get_label()).startswith("chance")]
        assert len(lines) == 1
        # one dashed line across the row's bars at its chance level (MAD: its task score, then their mean)
        segments = lines[0].get_segments()
        assert len(segments) == (2 if protocol in mad.GROUPS else 1)
        assert all(x == pytest.approx(level) for segment in segments for x, _ in segment)
    finally:
        _close(fig)


def test_the_lengths_figure_draws_the_chance_of_one_answer():
    cert = {**_cert("word-problem-a5", 0.26), "depth": 1,
            "test": {"accuracy": 0.26, "by_position": {"0": {"accuracy": 1.0, "count": 8},
                                                       "4": {"accuracy": 0.02, "count": 8}}}}
    rep = _report([cert], model="gru")
    (row,) = rep.rows()
    assert row["chance"] == pytest.approx((1 + 8 / 60) / 9)  # BOS right, each of 8 products 1 of 60
    fig = rep.lengths_figure()
    try:
        chance = [ln for ln in fig.axes[0].lines if str(ln.get_label()).startswith("chance")]
        assert len(chance) == 1 and chance[0].get_ydata()[0] == pytest.approx(1 / 60)
    finally:
        _close(fig)


def test_a_suite_of_many_tasks_gets_a_lengths_panel_each_with_its_own_chance():
    """Fifteen lines on one axes tangle (their legend covers them): from five rows, one panel a row."""
    from longsynth.models_ref.protocols.chomsky import TASKS

    params = {n: {"min_length": int(n), "max_length": int(n)} for n in ("41", "100")}
    sets = {"41": {"accuracy": 0.9, "exact": {"count": 8}}, "100": {"accuracy": 0.5, "exact": {"count": 8}}}
    runs = [{**_cert(t, 0.6), "test_set_params": params, "test_sets": sets} for t in TASKS[:6]]
    rep = _report(runs, model="lstm")
    fig = rep.lengths_figure()
    try:
        drawn = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
        assert [ax.get_title() for ax in drawn] == list(TASKS[:6])
        for ax, row in zip(drawn, rep.rows()):
            chance = [ln for ln in ax.lines if ln.get_linestyle() != "-" and ln.get_color() == "#d62728"]
            assert len(chance) == 1 and chance[0].get_ydata()[0] == pytest.approx(row["answer_chance"])
            assert list(ax.lines[0].get_ydata()) == [0.9, 0.5]
    finally:
        _close(fig)


# ---------------------------------------------------------------- MAD: an incomparable task, paper bars


def _mad(scores):
    return [_cert(task, acc) for task, acc in scores.items()]


def test_the_mad_mean_leaves_compression_out_and_the_report_says_why():
    scores = {"mad-recall": 0.9, "mad-noisy-recall": 0.8, "mad-fuzzy-recall": 0.2, "mad-selective-copying": 0.5,
              "mad-compression": 1.0, "mad-memorization": 0.7}
    rep = _report(_mad(scores), suite="mad")
    summary = {s["group"]: s for s in rep.summary()}
    fair = [v for t, v in scores.items() if t != "mad-compression"]
    assert summary["mean"]["score"] == pytest.approx(sum(fair) / 5) and summary["mean"]["tasks"] == 5
    assert summary["mean"]["excluded"] == ["mad-compression"] and summary["mad-compression"]["caveat"]
    # the papers' mean is taken over the same five tasks; their own six-task MAD score is said beside it
    t = {g: mad.GROUP_PAPER[g]["transformer"] for g in scores if g != "mad-compression"}
    assert summary["mean"]["paper"]["transformer"] == pytest.approx(sum(t.values()) / 5)
    md = rep.to_markdown()
    assert "| mad-compression (not comparable: see Caveats; not in the mean) | 1 of 11 |" in md
    assert "| mean of 5 task(s) (mad-compression apart) | 5 of 55 |" in md
    caveats = md.split("## Caveats")[1]
    assert "AutoEncoder" in caveats and "position-wise copy" in caveats
    assert "fewer settings than MAD averages" in md and "mad-recall 1 of 11" in md
    text = rep.table()
    assert "MAD score: mean over the 5 comparable task(s) here (mad-compression apart: not comparable)" in text
    assert "[not comparable with the paper's" in text.split("task score mad-compression")[1].splitlines()[0]


def test_the_mad_figure_draws_the_papers_task_scores_and_chance():
    rep = _report(_mad({"mad-recall": 0.9, "mad-compression": 1.0}), suite="mad")
    fig = rep.figure()
    try:
        ax = fig.axes[0]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels[0].startswith("mad-recall\n(1 of MAD's 11 settings)")
        assert "not comparable" in labels[1] and labels[2].startswith("mean of 1 task(s)")
        bars = {c.get_label(): c for c in ax.containers}
        for name in mad.GROUP_NAMES.values():  # every paper column drawn, as many bars as task scores
            assert len(bars[f"paper: {name}"]) == 3
        assert bars["paper: Transformer"][0].get_width() == pytest.approx(.941)
        (chance,) = [c for c in ax.collections if str(c.get_label()).startswith("chance")]
        assert len(chance.get_segments()) == 3
    finally:
        _close(fig)


# ---------------------------------------------------------------- the papers' names and sources


def test_every_paper_column_has_its_papers_name_and_a_source():
    for protocol, figures in registry.PAPER.items():
        for column in figures:
            assert registry.PAPER_NAMES[protocol][column], (protocol, column)
            source = registry.column_source(protocol, column)
            assert source and ("a table" in source or "read off the plot (+-0.03)" in source
                               or "a figure its text states" in source), (protocol, column)


def test_columns_are_named_as_the_papers_name_the_row_with_their_sources():
    rep = _report([_cert("selective-copying", 0.998), _cert("parity", 0.51)], model="s6")
    md = rep.to_markdown()
    head = md.split("\n| task")[1].splitlines()[0]
    assert "paper: Mamba (Mamba arch., S6 layer)" in head and "paper: Mamba \\[0, 1\\]" in head  # escaped: [0, 1]
    assert "paper: Hyena (H3 arch., Hyena layer)" in head and "paper: Mamba arch., Hyena layer" in head
    assert "paper: s6" not in head and "paper: hyena" not in head
    assert "Mamba paper Table 1 (a table)" in md and "Grazzi et al. Table 3" in md
    rows = {r["task"]: r for r in rep.rows()}
    # the built-in s6 is judged against its own column in each paper, under that paper's name
    assert rows["selective-copying"]["verdict"] == ("tiny setting: near the paper's Mamba (Mamba arch., S6 layer): "
                                                    "1.00 (at the paper's own setting)")
    assert rows["parity"]["verdict"] == ("at chance (0.50); tiny setting: near the paper's Mamba [0, 1]: 0.50 (at "
                                         "the paper's own setting)")
    assert rows["selective-copying"]["paper_names"]["hyena"] == "Hyena (H3 arch., Hyena layer)"
    columns = rep.to_json()["paper_columns"]
    assert {"column": "s6", "name": "Mamba [0, 1]", "source": registry.PAPER_FROM["parity"]["s6"]} in columns
    assert all(c["name"] and c["source"] for c in columns)
    mqar = _report([_cert("mqar-64", 0.99, width=64)], model="attention").to_markdown()
    assert "Attention (every width), H3, d\\_model 64" in mqar and "read off the plot (+-0.03)" in mqar


def test_the_corrected_paper_figures():
    """Mamba Table 1: the Hyena model (H3 arch., Hyena layer) 30.1, Mamba arch. with Hyena 28.4, H3 with S6
    99.7; Table 11: Hyena is perfect at 2^9 and 44.1% at 2^10."""
    copying = registry.PAPER["selective-copying"]
    assert copying["hyena"]["accuracy"] == .301 and copying["mamba hyena"]["accuracy"] == .284
    assert copying["h3 s6"]["accuracy"] == .997 and copying["s6"]["accuracy"] == .998
    assert "Hyena 100% at 2^9, 44.1% at 2^10" in registry.PAPER_SOURCE["induction-heads"]


# ---------------------------------------------------------------- no path of the user's machine


def test_titles_and_headers_name_the_file_and_its_hash_not_its_path():
    path = "/home/someone/private/tinytf.py:build"
    cert = {**_cert("parity", 0.9), "model": path,
            "test": {"accuracy": 0.9, "by_length": {"20": {"accuracy": 0.9, "count": 4}}}}
    rep = _report([cert], model=path, sha="1a2b3c4d" + "0" * 56)
    assert rep.name == "tinytf.py:build (sha256 1a2b3c4d)"
    md = rep.to_markdown()
    assert md.splitlines()[0] == "# tinytf.py:build (sha256 1a2b3c4d) on `s` (tiny scale)"
    assert "/home/someone" not in md and "/home/someone" not in rep.table()
    for fig in (rep.figure(), rep.lengths_figure()):
        try:
            texts = [fig.axes[0].get_title()] + [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
            assert not any("/home/someone" in t for t in texts) and any("tinytf.py:build" in t for t in texts)
        finally:
            _close(fig)
    assert _report([_cert("parity", 0.9)], model="gru").name == "gru"  # a built-in keeps its name


# ---------------------------------------------------------------- seeds, rows and in-distribution accuracy


def _chomsky_cert(score, in_dist, seed=0, sets=11, rows=128):
    """A Chomsky certificate scored on its test sets (mean over them), with the in-distribution test split."""
    cert = _cert("chomsky-cycle-navigation", score)
    each = {"accuracy": score, "batches": rows // 32, "batch_size": 32,
            "exact": {"accuracy": score, "count": rows}}
    cert.update(seed=seed, scored_on="test sets", score={"accuracy": score}, family="tokens",
                test={"accuracy": in_dist, "batches": 4, "batch_size": 32,
                      "exact": {"accuracy": in_dist, "count": 128}},
                test_sets={str(41 + 6 * i): dict(each) for i in range(sets)})
    return cert


def test_a_seed_far_above_chance_denies_at_chance():
    """Seeds that solve or fail: 1.000, 0.320, 1.000 on a five-way task was read "0.773 ± 0.392, at chance" when the
    noise took two standard deviations over seeds; chance is a claim about every seed."""
    runs = [_chomsky_cert(s, 1.0, seed=i) for i, s in enumerate((1.0, 0.32, 1.0))]
    row = _report(runs).rows()[0]
    assert "at chance" not in row["verdict"], row["verdict"]
    assert row["per_seed"] == [1.0, 0.32, 1.0] and row["best_run"] == 1.0
    runs = [_chomsky_cert(s, 0.21, seed=i) for i, s in enumerate((0.205, 0.195, 0.21))]
    assert "at chance (0.20)" in _report(runs).rows()[0]["verdict"]  # every seed at it


def test_the_noise_counts_the_rows_every_test_set_scored():
    """A GRU at 0.237 on a five-way Chomsky task over 11 sets x 128 rows (1,408 rows: 2 SE 0.021) is above chance;
    the noise once came from the in-distribution split's 128 rows (2 SE 0.071) and called it at chance."""
    row = _report([_chomsky_cert(0.237, 0.9)]).rows()[0]
    assert row["noise"] == pytest.approx(max(0.02, 2 * (0.2 * 0.8 / 1408) ** 0.5))
    assert "at chance" not in row["verdict"], row["verdict"]
    assert "at chance" in _report([_chomsky_cert(0.237, 0.9, sets=1)]).rows()[0]["verdict"]  # 128 rows: within


def test_the_table_shows_in_distribution_accuracy_and_one_seed_without_a_spread():
    report = _report([_chomsky_cert(0.5, 0.97)])
    md = report.to_markdown()
    header = next(line for line in md.splitlines() if line.startswith("| task |"))
    assert "| in-distribution |" in header
    row = next(line for line in md.splitlines() if line.startswith("| chomsky-cycle-navigation |"))
    assert "| 0.500 (n = 1, no spread) | 0.970 |" in row
    assert "± 0.000" not in md and "± 0.000" not in report.table()
    assert "In-distribution: the test split at the training lengths" in md
    many = _report([_chomsky_cert(s, 0.97, seed=i) for i, s in enumerate((0.5, 0.6))]).to_markdown()
    # Table 2's Transformer figure on cycle navigation is a best-of: the cell sets our best run beside the mean
    assert "0.550 ± 0.071 (n = 2; best of 2 runs 0.600)" in many
    assert "chomsky-cycle-navigation 0.500, 0.600 (best run 0.600)" in many


def test_a_learning_rate_set_by_lr_is_said_beside_the_one_the_run_would_have_taken():
    """s6-nogate at the laptop scale of selective copying takes 3e-3 unless --lr sets another (here the paper's)."""
    cert = dict(_cert("selective-copying", 0.9, scale="laptop"), model="s6-nogate", lr=1e-4,
                model_identity={"model": "s6-nogate", "sha256": None})

    def markdown(lrs, **change):
        return Report(identity={"model": "s6-nogate", "sha256": None}, suite="selective-copying", scale="laptop",
                      settings={"lrs": lrs}, runs=[dict(cert, **change)]).to_markdown()

    assert "**Learning rate set by `--lr`**: 0.0001, in place of what this model takes at this protocol and scale: " \
           "0.003 on selective-copying." in markdown([1e-4])
    assert "--lr" not in markdown(None, lr=3e-3)
    assert "--lr" not in markdown([3e-3], lr=3e-3)  # the laptop scale's own lr: nothing set in its place


def test_a_laptop_report_says_what_its_scale_cut_from_the_papers_recipe():
    """A laptop run's verdict sits beside the whole recipe's figure: the report names the cut and an lr that is not
    the paper's, from the run's own certificate."""
    cert = dict(_cert("selective-copying", 0.926, scale="laptop"), model="s6-nogate", lr=3e-3)
    cert["protocol_source"] = "Mamba paper appendix E.1; laptop scale: 2,500 of the paper's 400,000 steps; length 256"
    md = Report(identity={"model": "s6-nogate", "sha256": None}, suite="selective-copying", scale="laptop",
                settings={}, runs=[cert]).to_markdown()
    assert ("**Laptop scale**: the paper's protocol at about an hour a run on one CPU core, what it cuts from the "
            "recipe named (selective-copying: "
            "2,500 of the paper's 400,000 steps; length 256; lr 0.003 where the paper's recipe has 0.0001; ") in md
    assert "not a reproduction" in md
    tiny = _report([_cert("selective-copying", 0.9)]).to_markdown()
    assert "Laptop scale" not in tiny
    longer = dict(_cert("selective-copying", 0.9, scale="laptop", steps=10_000), model="s6-nogate", lr=3e-3,
                  protocol_source=cert["protocol_source"])
    md = Report(identity={"model": "s6-nogate", "sha256": None}, suite="selective-copying", scale="laptop",
                settings={}, runs=[longer]).to_markdown()
    assert "length 256; lr 0.003 where the paper's recipe has 0.0001; this run trained 10,000 steps (--steps)" in md


def test_several_seeds_by_length_show_each_seed_beside_the_pooled_line():
    """Three seeds that hold to 500 and one that fails pool into a curve that merely sags: the table and
    lengths.png give each seed's own line beside the pooled one."""
    def run(seed, accs):
        cert = dict(_cert("chomsky-reverse-string", 0.9, scale="laptop"), seed=seed, scored_on="test sets")
        cert["test_sets"] = {str(L): {"accuracy": a, "exact": {"accuracy": a, "count": 100}}
                             for L, a in zip((41, 250, 500), accs)}
        return cert

    rep = Report(identity={"model": "stack-rnn", "sha256": None}, suite="chomsky-reverse-string", scale="laptop",
                 settings={"seeds": 2}, runs=[run(0, (0.7, 0.55, 0.52)), run(1, (1.0, 1.0, 0.98))])
    md = rep.to_markdown()
    assert "| accuracy, 2 seeds pooled | 0.850 | 0.775 | 0.750 |" in md
    assert "| seed 0 | 0.700 | 0.550 | 0.520 |" in md and "| seed 1 | 1.000 | 1.000 | 0.980 |" in md
    fig = rep.lengths_figure()
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any("each seed (2)" in label for label in labels) and any("2 seeds pooled" in label for label in labels)
    _close(fig)
    one = Report(identity={"model": "stack-rnn", "sha256": None}, suite="chomsky-reverse-string", scale="laptop",
                 settings={}, runs=[run(0, (0.7, 0.55, 0.52))]).to_markdown()
    assert "| accuracy | 0.700 | 0.550 | 0.520 |" in one and "seed 0 |" not in one
