"""A protocol's grid of a built-in's options (``Protocol.model_options``): the Chomsky paper's Tape-RNN column is the
best over computation tokens {0, l, 2l} x tapes {1, 4} (its appendices A.4-A.5); each point is a run of the sweep,
its model built with those options, told apart in runs/ and in the report, which reads the best of them."""
import pytest
import torch

from longsynth.errors import LongsynthError
from longsynth.models_ref.evaluation.plan import Settings, plan, run_key, sweep
from longsynth.models_ref.evaluation.protocol import resolve
from longsynth.models_ref.models import factories
from test_report_honesty import _report


def test_the_paper_scale_sweeps_the_tape_rnns_grid_and_nothing_else(tmp_path):
    proto = resolve("chomsky-reverse-string", "paper", task="chomsky-reverse-string")
    assert len(proto.model_options["tape-rnn"]) == 6
    todo, _, _ = plan("tape-rnn", "chomsky-reverse-string", Settings(scale="paper", seeds=1), tmp_path, lambda m: None)
    assert len(todo) == 6 * 3  # six configurations x the paper's three learning rates
    points = {tuple(sorted(job.options.items())) for job, _ in todo}
    assert len(points) == 6 and len({run_key(job.to_dict()) for job, _ in todo}) == 18
    assert all("n_tapes" in d.path for _, d in todo)
    lstm, _, _ = plan("lstm", "chomsky-reverse-string", Settings(scale="paper", seeds=1), tmp_path, lambda m: None)
    assert len(lstm) == 3 and all(job.options is None for job, _ in lstm)
    laptop = resolve("chomsky-reverse-string", "laptop", task="chomsky-reverse-string")
    assert laptop.model_options is None and "best of six and of five" in laptop.source
    assert len(proto.model_options["chomsky-transformer"]) == 5


def test_an_option_reaches_the_model():
    from longsynth.models_ref.evaluation.harness import Job, prepare

    p = prepare(Job(model="tape-rnn", protocol="chomsky-reverse-string", task="chomsky-reverse-string"))
    plain = factories.BUILTIN["tape-rnn"]
    four = factories.with_options(plain, {"n_tapes": 4, "computation_steps_mult": 1})
    m = four(p.spec)
    assert m.core.n == 4 and m.cfg.computation_steps_mult == 1 and plain(p.spec).core.n == 1
    assert sum(t.numel() for t in m.parameters()) > sum(t.numel() for t in plain(p.spec).parameters())
    x = p.sources[0](0)[0][:2]
    assert m(x).shape == (*x.shape, p.spec.d_output)
    with pytest.raises(LongsynthError, match="built-ins only"):
        factories.with_options(lambda spec: torch.nn.Linear(1, 1), {"n_tapes": 4})


def test_the_report_picks_the_best_configuration_by_validation():
    from test_report_honesty import _chomsky_cert

    runs = []
    for i, (opts, val, test) in enumerate((({"n_tapes": 1}, 0.7, 0.6), ({"n_tapes": 4}, 0.9, 0.8))):
        cert = _chomsky_cert(test, val)
        cert.update(options=opts, best={"accuracy": val}, model="tape-rnn")
        runs.append(cert)
    rep = _report(runs)
    row = rep.rows()[0]
    assert row["best_options"] == {"n_tapes": 4} and row["options_tried"] == 2 and row["test_mean"] == 0.8
    assert "2 configurations of m tried" in rep.to_markdown() and "n\\_tapes 4" in rep.to_markdown()  # n_tapes 4


def test_sweep_without_a_grid_is_as_before():
    proto = resolve("chomsky-reverse-string", "tiny", task="chomsky-reverse-string")
    from longsynth.models_ref.evaluation.harness import Job

    probe = Job(model="tape-rnn", protocol=proto.name, task=proto.task)
    jobs = list(sweep(probe, proto, Settings(), (1e-3,)))
    assert [p for _, p in jobs] == ["lr0.001-seed0-"] and jobs[0][0].options is None
