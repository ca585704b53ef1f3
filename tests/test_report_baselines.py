"""A report judges a result against what a content-free guess scores (the majority answer, the most frequent
answer at each position of each length), sets a paper's best-of figure beside our best run, says what the
model read (the whole row, a grid it ignored), and draws lengths and spreads that read true
(docs/evaluate.md, "Reading a report")."""
import itertools

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from longsynth.models_ref.training.metrics import IGNORE_INDEX, content_free  # noqa: E402
from test_report_honesty import _cert, _chomsky_cert, _report  # noqa: E402


def _twin(batches):
    """content_free from its definition, a row at a time: rows alternate between two halves (among the rows with a
    scored position); each half's guesses are the other half's most frequent answers (ties: the smallest), overall
    and per (length, position), the length being the last scored position plus one."""
    rows = [row for b in batches for row in np.asarray(b[1]).reshape(len(b[1]), -1).tolist()]
    rows = [r for r in rows if any(v != IGNORE_INDEX for v in r)]
    cells = [[(max(t for t, v in enumerate(r) if v != IGNORE_INDEX) + 1, t, v) for t, v in enumerate(r)
              if v != IGNORE_INDEX] for r in rows]

    def most(values):
        counts = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        return min(counts, key=lambda v: (-counts[v], v))

    hit_m = hit_p = n = 0
    for half in (0, 1):
        fit = [c for i, r in enumerate(cells) if i % 2 != half for c in r]
        common = most([v for _, _, v in fit])
        for i, r in enumerate(cells):
            if i % 2 != half:
                continue
            for length, t, v in r:
                same = [w for lw, tw, w in fit if (lw, tw) == (length, t)]
                hit_m += v == common
                hit_p += v == (most(same) if same else common)
                n += 1
    return hit_m / n, hit_p / n


@pytest.mark.parametrize("seed,rows,width,classes", [(0, 6, 5, 3), (1, 17, 9, 2), (2, 40, 12, 5), (3, 3, 4, 7)])
def test_content_free_equals_its_definition_row_by_row(seed, rows, width, classes):
    g = np.random.default_rng(seed)
    batches = []
    for _ in range(2):
        y = g.integers(0, classes, (rows, width))
        y[g.random((rows, width)) < 0.3] = IGNORE_INDEX  # unscored positions, some rows with none
        y[0] = IGNORE_INDEX
        batches.append((torch.zeros(rows, width), torch.from_numpy(y)))
    got = content_free(batches)
    assert (got["majority"], got["position"]) == pytest.approx(_twin(batches), abs=1e-12)


def test_content_free_sees_the_position_prior_of_bucket_sort():
    """Sorted outputs are predictable from the position alone: about 0.83 on bucket sort's test lengths, where
    uniform chance is 0.2 and the majority answer about as much; reverse string's halves stay at 0.5."""
    from longsynth.models_ref.evaluation.baselines import levels
    from longsynth.models_ref.evaluation.protocol import resolve, test_set_sources

    p = resolve("chomsky-bucket-sort", "tiny", task="chomsky-bucket-sort")
    got = levels({k: b() for k, b in itertools.islice(test_set_sources(p, 32).items(), 3)})
    assert got["position"] > 0.8 and got["majority"] < 0.3 and got["sets"] == 3
    p = resolve("chomsky-reverse-string", "tiny", task="chomsky-reverse-string")
    got = levels({k: b() for k, b in itertools.islice(test_set_sources(p, 32).items(), 2)})
    assert abs(got["position"] - 0.5) < 0.1


def test_content_free_is_none_without_token_targets():
    assert content_free([(torch.zeros(1, 3), torch.tensor([[1, 2, 0]]))]) is None  # one row: no half to fit on
    assert content_free([]) is None


def _bucket(score, position=0.837, majority=0.204, seed=0):
    cert = _chomsky_cert(score, 0.9, seed=seed)
    cert.update(task="chomsky-bucket-sort", protocol="chomsky-bucket-sort",
                baselines={"majority": majority, "position": position, "rows": 1408, "sets": 11})
    return cert


def test_a_result_below_the_position_prior_is_no_better_than_a_content_free_guess():
    """The committed tiny LSTM on bucket sort: 0.569, far above chance 0.2, below the 0.837 its position alone
    gives: once "far above chance", now said to be no better than a content-free guess."""
    rep = _report([_bucket(0.569)])
    row = rep.rows()[0]
    assert row["position_prior"] == 0.837 and row["majority"] == 0.204
    assert "no better than a content-free guess (0.84: the most frequent answer at each position of each length)" \
        in row["verdict"] and "at chance" not in row["verdict"]
    md = rep.to_markdown()
    assert "| chance | majority | position prior |" in md and "| 0.200 | 0.204 | 0.837 |" in md
    assert "content-free" not in _report([_bucket(0.95)]).rows()[0]["verdict"]
    # without the levels (an older certificate) the verdict is the old one, and no column is shown
    old = _chomsky_cert(0.569, 0.9)
    assert "content-free" not in _report([old]).rows()[0]["verdict"]
    assert "position prior" not in _report([old]).to_markdown()


def test_a_best_of_paper_figure_is_read_beside_our_best_run():
    """Grazzi et al.'s Table 3 is the best of 3 runs: three seeds 0.55, 0.60, 0.98 on parity are read as their
    best, 0.98 (consistent with Mamba [-1, 1]'s 1.0), not their mean 0.71."""
    runs = [{**_cert("parity", v), "seed": i} for i, v in enumerate((0.55, 0.60, 0.98))]
    rep = _report(runs, scale="tiny")
    row = rep.rows()[0]
    assert row["best_of"] == 0.98 and row["best_of_runs"] == 3 and row["reads_best_of"]
    assert row["verdict"].startswith("best of 3 runs 0.980: ")
    assert "+0.00 against the paper's best" in row["verdict"] or "-0.02 against" in row["verdict"]
    md = rep.to_markdown()
    assert "(n = 3; best of 3 runs 0.980)" in md and "the best of 3 runs" in md
    one = _report([_cert("parity", 0.55)]).rows()[0]  # one run: nothing to take the best of
    assert not one["reads_best_of"] and not one["verdict"].startswith("best of")


def test_the_recipe_is_said_once_with_the_training_lengths():
    """Two step budgets of one recipe once gave the recipe twice and named rows "L = 41"; now each row says its
    training lengths and steps, and the recipe is said once."""
    a = _chomsky_cert(0.5, 0.9)
    a["protocol_source"] = "Recipe X: train lengths 1-40, batch 32, 1,000 steps at lr 0.001: shrunk"
    b = {**_chomsky_cert(0.5, 0.9), "task": "chomsky-even-pairs", "protocol": "chomsky-even-pairs", "steps": 2000,
         "protocol_source": "Recipe X: train lengths 1-40, batch 32, 2,000 steps at lr 0.001: shrunk"}
    b["data"] = {"params": {"min_length": 1, "max_length": 40}}
    a["data"] = {"params": {"min_length": 1, "max_length": 40}}
    md = _report([a, b]).to_markdown()
    assert md.count("Recipe X") == 1 and "the steps above: shrunk" in md
    assert "train lengths 1-40, 2,000 steps" in md and "L = " not in md


def test_error_bars_stop_at_one():
    runs = [{**_cert("parity", v), "seed": i} for i, v in enumerate((0.7, 1.0, 1.0))]
    fig = _report(runs).figure()
    try:
        ends = [seg[:, 0].max() for coll in fig.axes[0].collections for seg in getattr(coll, "get_segments",
                                                                                         lambda: [])()
                if len(seg)]
        assert ends and max(ends) <= 1.0 + 1e-9
    finally:
        plt.close(fig)


def test_lengths_figure_marks_parity_training_lengths_and_reads_plain_ticks():
    """A parity-only plot had no "trained at" line (its breakdown is by length, not test sets), a log axis over
    41-100 had one tick label, the legend sat on the data, and two chance levels looked alike."""
    cert = {**_cert("parity", 0.6), "data": {"params": {"min_sequence_length": 3, "max_sequence_length": 16}},
            "test": {"accuracy": 0.6, "exact": {"count": 64},
                     "by_length": {str(n): {"accuracy": 0.5, "count": 8} for n in range(16, 65, 8)}}}
    fig = _report([cert]).lengths_figure()
    try:
        ax = fig.axes[0]
        assert any(t.get_text() == "trained to 16" for t in ax.texts)
        legend = ax.get_legend()
        fig.canvas.draw()
        box, area = legend.get_window_extent(), ax.get_window_extent()
        assert box.x0 >= area.x1 - 1  # beside the axes, not over the data
    finally:
        plt.close(fig)
    chomsky = _chomsky_cert(0.5, 0.9)
    chomsky["data"] = {"params": {"min_length": 1, "max_length": 40}}
    chomsky["test_set_params"] = {k: {"min_length": int(k), "max_length": int(k)} for k in chomsky["test_sets"]}
    two = {**chomsky, "task": "chomsky-even-pairs", "protocol": "chomsky-even-pairs"}
    fig = _report([chomsky, two]).lengths_figure()
    try:
        ax = fig.axes[0]
        assert ax.get_xscale() == "linear"  # 40-101: no log axis of one label
        chance = [line for line in ax.get_lines() if line.get_label().startswith("chance")]
        assert len(chance) == 2 and chance[0].get_linestyle() != chance[1].get_linestyle()
    finally:
        plt.close(fig)


def test_a_model_that_reads_the_whole_row_is_run_and_said():
    """An encoder of the user's on a Chomsky task was refused ("not causal ... unidirectional") though the paper's
    Transformer is one; its rows hold no target among the inputs: the run goes on and the report says it."""
    cert = {**_chomsky_cert(0.6, 0.9), "causal": False}
    md = _report([cert]).to_markdown()
    assert "read the whole row" in md and "chomsky-cycle-navigation" in md.split("Direction:")[1]
    assert "Direction:" not in _report([{**cert, "causal": True}]).to_markdown()


def test_an_encoder_trains_on_a_chomsky_protocol(tmp_path):
    from longsynth.models_ref.evaluation.harness import Job, run

    class Encoder(torch.nn.Module):
        def __init__(self, spec):
            super().__init__()
            self.emb = torch.nn.Embedding(spec.vocab_size, 16)
            self.out = torch.nn.Linear(32, spec.d_output)

        def forward(self, x):
            h = self.emb(x)  # [B, T, 16]
            return self.out(torch.cat([h, h.mean(1, keepdim=True).expand_as(h)], -1))  # [B, T, d]: sees all

    cert = run(Job(model="enc", protocol="chomsky-parity-check", task="chomsky-parity-check", steps=2),
               tmp_path / "run", factory=Encoder)
    assert cert["causal"] is False and cert["score"]["accuracy"] is not None
    assert 0.3 < cert["baselines"]["majority"] < 0.7 and cert["parameters"] > 0  # parity: two answers
    with pytest.raises(Exception, match="not causal"):  # a protocol whose rows hold targets: still refused
        run(Job(model="enc", protocol="parity", task="parity", steps=2), tmp_path / "run2", factory=Encoder)


def test_a_grid_the_model_ignores_is_warned_and_said():
    from longsynth.models_ref.evaluation.plan import _check_grid
    from longsynth.models_ref.evaluation.protocol import resolve
    from longsynth.spec import ModelSpec

    proto = resolve("mqar-128", "tiny", task="mqar")
    assert proto.widths and len(proto.widths) > 1
    spec = ModelSpec(task="mqar", protocol="mqar-128", scale="tiny", objective="tokens", readout="positions",
                     d_output=8, seq_len=16, target_len=16, causal=True, d_input=None, vocab_size=8)
    said = []
    _check_grid(lambda s: torch.nn.Linear(4, 4), spec, proto, "fixed.py:build", said.append)
    assert len(said) == 1 and "ignores spec.d_model" in said[0] and "20 parameters" in said[0]
    said.clear()
    _check_grid(lambda s: torch.nn.Linear(s.d_model, 4), spec, proto, "sized.py:build", said.append)
    assert said == []
    runs = [{**_cert("mqar-128", 0.5, width=w), "parameters": 20} for w in proto.widths[:2]]
    md = _report(runs).to_markdown()
    assert "are one model: 20 parameters at every width, so it ignores spec.d_model" in md
    runs[1]["parameters"] = 40
    assert "are one model" not in _report(runs).to_markdown()


def test_a_laptop_scale_report_passes_its_schema(tmp_path):
    """The schema knew the tiny and paper scales only: a laptop-scale report was refused by its own writer."""
    from longsynth.certificate import read_report

    rep = _report([_cert("parity", 0.6, scale="laptop")], scale="laptop")
    rep.write(tmp_path)
    assert read_report(str(tmp_path))["scale"] == "laptop"


def test_a_model_that_gives_one_answer_is_flagged():
    """Many tiny Chomsky cells were a constant predictor (the same per-length vector for every model); the evaluation
    counts the answers given at the scored positions and a report flags a model that gives one nearly everywhere."""
    from longsynth.models_ref.training.config import TrainConfig
    from longsynth.models_ref.training.eval_pass import evaluate

    class Constant(torch.nn.Module):
        def __init__(self, answer, d=5):
            super().__init__()
            self.answer, self.d, self.w = answer, d, torch.nn.Parameter(torch.zeros(1))

        def forward(self, x):  # [B, T] -> [B, T, d]: the same answer everywhere
            return torch.nn.functional.one_hot(torch.full_like(x, self.answer), self.d).float() + 0 * self.w

    y = torch.tensor([[1, 2, IGNORE_INDEX], [3, 2, 2]])
    cfg = TrainConfig(steps=1, lr=1e-3, objective="tokens", readout="positions", eval_batches=None)
    res = evaluate(Constant(2), [(torch.zeros(2, 3, dtype=torch.long), y)], cfg)
    assert res["exact"]["top_share"] == 1.0 and res["exact"]["accuracy"] == pytest.approx(3 / 5)
    cert = _chomsky_cert(0.3, 0.3)
    for record in cert["test_sets"].values():
        record["exact"]["top_share"] = 0.97
    assert "[one answer at 97% of the scored positions]" in _report([cert]).rows()[0]["verdict"]
    for record in cert["test_sets"].values():
        record["exact"]["top_share"] = 0.5
    assert "one answer" not in _report([cert]).rows()[0]["verdict"]
