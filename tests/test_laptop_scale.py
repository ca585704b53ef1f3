"""The laptop scale (docs/evaluate.md, "Scales"): the papers' lengths, test lengths, widths and batch
with the steps of about an hour a run, for the recall, state-tracking, selective-copying,
induction-heads, Chomsky and RegBench suites; each row's source says what was cut."""
import pytest

from longsynth.models_ref.protocols.registry import ARCHITECTURES, PROTOCOLS, SUITES, protocol_row

LAPTOP_SUITES = ("mqar", "h3-synthetics", "state-tracking", "selective-copying", "induction-heads", "chomsky",
                 "regbench")
MEMBERS = sorted({p for suite in LAPTOP_SUITES for p, _ in SUITES[suite]})
# what a laptop row may change beside the steps and their schedule (the sources say why)
CHANGED = {"selective-copying": {"data", "lr"}, "induction-heads": {"test_sets"}}  # its lr: 400K steps' is 1e-4
CHOMSKY_CHANGES = {"lr", "lrs", "eval_batches", "model_options"}  # the sweeps of the columns: the preset
SCHEDULE = {"steps", "warmup_steps", "eval_every", "source"}


def _test_lengths(protocol, scale):
    from longsynth.models_ref.evaluation.dry_run import _set_length
    from longsynth.models_ref.evaluation.protocol import resolve

    p = resolve(protocol, scale)
    return sorted(_set_length(p, change) for change in (p.test_sets or {}).values())


@pytest.mark.parametrize("protocol", MEMBERS)
def test_a_laptop_row_is_the_papers_with_fewer_steps(protocol):
    _, paper = protocol_row(protocol, "paper")
    _, laptop = protocol_row(protocol, "laptop")
    allowed = SCHEDULE | CHANGED.get(protocol, set()) | (CHOMSKY_CHANGES if protocol.startswith("chomsky") else set())
    changed = {k for k in paper if paper[k] != laptop[k]}
    assert changed <= allowed, changed - allowed
    assert laptop["batch_size"] == paper["batch_size"] and laptop["widths"] == paper.get("widths") \
        if "widths" in paper else laptop["batch_size"] == paper["batch_size"]
    assert 1 <= laptop["steps"] <= paper["steps"]
    assert laptop["source"].startswith(paper["source"]) and "laptop scale: " in laptop["source"]
    assert f"{laptop['steps']:,} of the paper's {paper['steps']:,} steps" in laptop["source"]
    assert laptop["steps"] // laptop["eval_every"] <= 10  # evaluations bounded: a paper's 100 would outweigh training
    for (p, scale, model), row in ARCHITECTURES.items():  # every built-in of the paper's runs there at its sizes
        if p == protocol and scale == "paper":
            assert ARCHITECTURES[(protocol, "laptop", model)]["arch"] == row["arch"]


def test_the_papers_test_lengths_are_kept():
    """Chomsky tasks tested to 500, parity and modular arithmetic to 256 (the task's test split), selective
    copying at 256 and beyond, induction heads to 8 times their training length."""
    assert _test_lengths("chomsky-even-pairs", "laptop") == _test_lengths("chomsky-even-pairs", "paper")
    assert _test_lengths("chomsky-even-pairs", "laptop")[-1] == 501  # 500 symbols and the answer's place
    parity = protocol_row("parity", "laptop")[1]
    assert parity["data"] == protocol_row("parity", "paper")[1]["data"] == {}  # the task's test lengths 40-256
    from longsynth import registry

    cfg = registry.get("parity").make_config()
    assert cfg.test_max_sequence_length == 256 and cfg.max_sequence_length == 40
    copying = protocol_row("selective-copying", "laptop")[1]["data"]
    assert copying["L"] + 2 * copying["M"] >= 256
    heads = protocol_row("induction-heads", "laptop")[1]
    assert max(int(k) for k in heads["test_sets"]) >= 8 * 256
    assert protocol_row("chomsky-reverse-string", "laptop")[1]["lr"] == 1e-3
    assert ARCHITECTURES[("chomsky-reverse-string", "laptop", "lstm")]["lr"] == 1e-3  # the built-ins train at it


def test_laptop_is_a_scale_of_evaluate_and_other_suites_have_none(tmp_path):
    from click.testing import CliRunner

    from longsynth.cli.main import cli

    assert {s for _, s in PROTOCOLS} == {"tiny", "laptop", "paper"}
    r = CliRunner().invoke(cli, ["evaluate", "gru", "--suite", "h3-synthetics", "--scale", "laptop", "--steps", "20",
                                 "--dry-run", "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert "plan: 2 runs on 2 tasks, 40 training steps in all" in r.output
    r = CliRunner().invoke(cli, ["evaluate", "dlr", "--suite", "cumsum", "--scale", "laptop", "--dry-run",
                                 "--out", str(tmp_path / "rep2")])
    assert r.exit_code == 1 and "--scale: atomic has no laptop scale; it has tiny and paper" in r.output
    r = CliRunner().invoke(cli, ["evaluate", "dlr", "--suite", "atomic", "--scale", "laptop", "--dry-run",
                                 "--out", str(tmp_path / "rep3")])
    assert r.exit_code == 1 and r.output.startswith("Error: --scale: atomic has no laptop scale"), r.output
