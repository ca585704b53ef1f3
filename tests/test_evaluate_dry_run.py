"""evaluate --dry-run (docs/evaluate.md, "Dry run"): the plan and an estimate of its wall time
from a few timed steps, nothing trained and nothing written; the plan line counts a task run
under several protocols by its cells; a paper-scale sweep on a CPU warns before it starts."""
import os
import re

import pytest
from click.testing import CliRunner

from longsynth.cli.main import cli

torch = pytest.importorskip("torch")


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    torch.set_num_threads(1)  # Numba's OpenMP pool resets the shared thread count
    return r


def test_dry_run_prints_the_plan_and_an_estimate_and_writes_nothing(tmp_path, monkeypatch):
    from longsynth.models_ref.evaluation import sweep as evaluate
    from longsynth.models_ref.training import trainer

    def no_training(*args, **kwargs):
        raise AssertionError("--dry-run trained a run")

    monkeypatch.setattr(evaluate, "execute", no_training)
    monkeypatch.setattr(trainer, "train", no_training)
    forwards = []
    real = trainer._forward
    monkeypatch.setattr(trainer, "_forward", lambda *a: forwards.append(1) or real(*a))
    out = tmp_path / "nested" / "rep"
    r = invoke("evaluate", "dlr", "--suite", "cumsum,select", "--steps", "50", "--dry-run", "--out", out)
    assert r.exit_code == 0, r.output
    assert "plan: 2 runs on 2 tasks, 100 training steps in all, one after another on cpu" in r.output
    for task in ("cumsum", "select"):
        assert f"timing {task}: up to 3 training steps after a warm-up step" in r.output
        assert re.search(rf"^  {task}\s+1 run x 50 steps, [\d.]+ m?s/step: \d+ s$", r.output, re.M), r.output
    assert re.search(r"^estimate: about \d+ s on cpu, one run after another", r.output, re.M), r.output
    assert "warning" not in r.output  # minutes, at the tiny scale
    assert r.output.rstrip().endswith("nothing written (--dry-run)")
    # per task and timing batch (8 and 16 rows of 512 positions): a warm-up step, 1 to 3 timed ones and an
    # evaluation forward; no more
    assert 2 * 2 * 3 <= len(forwards) <= 2 * 2 * 5, len(forwards)
    assert not out.exists() and not (tmp_path / "nested").exists()


def test_dry_run_warns_of_days_and_of_the_paper_scale_on_a_cpu(tmp_path, monkeypatch):
    from longsynth.models_ref.training import trainer
    from longsynth.models_ref.evaluation.dry_run import duration
    from longsynth.models_ref.evaluation.protocol import resolve

    monkeypatch.setattr(trainer, "step_seconds", lambda *a, **k: (2.5, 0.5))  # a paper-scale step on a CPU
    r = invoke("evaluate", "dlr", "--suite", "cumsum", "--scale", "paper", "--dry-run", "--out", tmp_path / "rep")
    assert r.exit_code == 0, r.output
    assert "plan: 1 run on 1 task, 40,000 training steps in all" in r.output
    # 40,000 steps of 2.5 s, and the evaluations (and the test) of eval_batches batches of 0.5 s
    cfg = resolve("atomic", "paper", task="cumsum").train_config(lr=1e-3, seed=0)
    evaluations = -(-cfg.steps // cfg.eval_every) + 1
    want = duration(cfg.steps * 2.5 + evaluations * cfg.eval_batches * 0.5)
    assert want.endswith(" h") and float(want[:-2]) > 24, want
    assert f"  cumsum  1 run x 40,000 steps, 2.5 s/step: {want}\n" in r.output, r.output
    assert f"\nwarning: that is {want}: a GPU (--device cuda)" in r.output, r.output
    assert "warning: --scale paper on a CPU" in r.output
    assert not (tmp_path / "rep").exists()


def test_dry_run_leaves_out_the_runs_already_finished(report):
    before = sorted((p, os.stat(os.path.join(p, f)).st_mtime_ns) for p, _, fs in os.walk(report) for f in fs)
    r = invoke("evaluate", "dlr", "--suite", "cumsum", "--steps", "2", "--dry-run", "--out", report)
    assert r.exit_code == 0, r.output
    assert "all 1 run(s) already finished" in r.output and "plan:" not in r.output
    after = sorted((p, os.stat(os.path.join(p, f)).st_mtime_ns) for p, _, fs in os.walk(report) for f in fs)
    assert after == before  # no lock, no report, nothing touched


def test_dry_run_counts_finished_runs_without_hashing_their_files(report, monkeypatch):
    """A dry run only estimates what is left: it reads the certificates, not every byte of the checkpoints."""
    from longsynth.models_ref.evaluation import finished as evaluate_finished

    def no_hashing(run_dir):
        raise AssertionError("the dry run hashed a run's files")

    monkeypatch.setattr(evaluate_finished, "changed_files", no_hashing)
    r = invoke("evaluate", "dlr", "--suite", "cumsum", "--steps", "2", "--dry-run", "--out", report)
    assert r.exit_code == 0, r.output
    assert "all 1 run(s) already finished" in r.output


def _paper_sweep(suite):
    from longsynth.models_ref.evaluation.plan import Settings, suite_tasks, sweep
    from longsynth.models_ref.evaluation.harness import Job
    from longsynth.models_ref.evaluation.protocol import resolve

    settings = Settings(scale="paper")
    todo = []
    for proto, task in suite_tasks(suite, "paper"):
        protocol = resolve(proto, "paper", task=task)
        probe = Job(model="dlr", protocol=proto, task=task, scale="paper")
        todo += [(job, None) for job, _ in sweep(probe, protocol, settings, protocol.lrs or (1e-3,))]
    return todo, settings


def test_the_plan_line_counts_the_cells_of_mqar():
    from longsynth.models_ref.evaluation.sweep import Settings, cpu_warning, plan_line

    todo, settings = _paper_sweep("mqar")  # Figure 2: 4 cells x 4 learning rates x 4 widths
    line = plan_line(todo, settings)
    # 64 * 100,000 / B steps per run at B 512, 512, 256, 128, 16 runs a cell
    assert line.startswith("plan: 64 runs on 4 cells of mqar (mqar-64, mqar-128, mqar-256, mqar-512), "
                           "1,600,000 training steps in all, one after another on cpu"), line
    warning = cpu_warning(todo, settings)
    assert warning.startswith("warning: paper scale on a CPU: 1,600,000 training steps in total") and \
        "--dry-run estimates the time" in warning
    assert cpu_warning(todo, Settings(scale="paper", device="cuda")) is None
    todo, settings = _paper_sweep("state-tracking")  # one task under two protocols, and another task
    assert plan_line(todo, settings).startswith("plan: 3 runs on 3 cells of 2 tasks, ")
    todo, settings = _paper_sweep("h3-synthetics")
    assert plan_line(todo, settings).startswith("plan: 2 runs on 2 tasks, ")


def test_evaluate_warns_before_a_paper_scale_sweep_on_a_cpu(tmp_path, monkeypatch):
    from longsynth.models_ref.evaluation import sweep as evaluate

    def stop(*args, **kwargs):
        raise KeyboardInterrupt  # the plan and its warning are out; nothing trains

    monkeypatch.setattr(evaluate, "execute", stop)
    r = invoke("evaluate", "dlr", "--suite", "cumsum", "--scale", "paper", "--out", tmp_path / "rep")
    assert r.exit_code == 130, r.output
    plan = r.output.index("plan: 1 run on 1 task, 40,000 training steps")
    warning = r.output.index("warning: paper scale on a CPU: 40,000 training steps in total")
    assert plan < warning < r.output.index("interrupted")


def test_durations_read_in_words():
    from longsynth.models_ref.evaluation.dry_run import duration

    assert [duration(s) for s in (42, 720, 5.25 * 3600, 3.1 * 86400, 77 * 86400)] == \
        ["42 s", "12 min", "5.2 h", "3.1 days", "11 weeks (77 days)"]


@pytest.mark.parametrize("model,suite,steps", [("gru", "parity", 200), ("lstm", "chomsky-even-pairs", 150)])
def test_the_estimate_is_within_twice_a_short_real_run(tmp_path, model, suite, steps):
    """The dry run's estimate of one run, timed at batches 16 and 32 and scaled to the protocol's 64 (parity)
    or at the protocol's 32 over spread lengths (the Chomsky task, whose test sets it counts too), against
    the same run trained: within a factor of 2 of its training time (the certificate's wall time), and
    of the whole evaluate's time where test sets follow the training."""
    import json
    import time

    from longsynth.models_ref.evaluation.dry_run import dry_run
    from longsynth.models_ref.evaluation.sweep import Settings, evaluate

    settings = Settings(steps=steps)
    found = []
    for attempt in range(2):  # a second try where a neighbour's burst on the 2-core machine skewed the first timing
        out = str(tmp_path / f"rep{attempt}")
        estimate = dry_run(model, suite, out=out, settings=settings).seconds
        t0 = time.perf_counter()
        evaluate(model, suite, out=out, settings=settings, progress=False)
        whole = time.perf_counter() - t0
        torch.set_num_threads(1)
        (cert,) = [json.load(open(os.path.join(d, "metrics.json"))) for d, _, fs in os.walk(os.path.join(out, "runs"))
                   if "metrics.json" in fs]
        trained = cert["wall_time_s"]
        most = whole if suite.startswith("chomsky") else trained
        found.append((estimate, trained, whole))
        if trained / 2 <= estimate <= 2 * most:
            return
    raise AssertionError(f"estimate outside 2x of the real run twice: (estimate, trained, whole) {found}")


def test_past_the_timing_budget_one_batch_is_timed_and_the_estimate_holds(monkeypatch):
    """Once the dry run's timing budget is spent, each further shape is timed by one step at one batch (the
    smaller) and scaled to the protocol's, here through the origin (no shape was timed at two batches): an
    estimate within 2x of the two-batch one. Steps cost a known line in the batch (1 ms fixed, 0.1 ms a row),
    so that a neighbour's burst on a shared machine cannot decide the test (the real timing is checked
    against real runs above)."""
    from longsynth.models_ref.evaluation import dry_run as dr
    from longsynth.models_ref.evaluation.sweep import Settings
    from longsynth.models_ref.training import trainer

    def line_cost(build, cfg, train_batch, val_batches=None, **kwargs):
        rows = train_batch(1)[0].shape[0]
        seconds = 1e-3 * (1 + 0.1 * rows)
        return seconds, (seconds / 3 if val_batches is not None else 0.0)

    monkeypatch.setattr(trainer, "step_seconds", line_cost)
    settings = Settings(steps=50)
    lines = []
    two = dr.dry_run("gru", "parity", out="/nonexistent-dry", settings=settings, notify=lines.append).seconds
    assert any(" and " in line for line in lines if line.startswith("timing "))
    monkeypatch.setattr(dr, "TIMING_BUDGET_S", 0.0)
    lines.clear()
    one = dr.dry_run("gru", "parity", out="/nonexistent-dry", settings=settings, notify=lines.append).seconds
    timing = [line for line in lines if line.startswith("timing ")]
    assert timing and all(" and " not in line.split("at batch")[1] for line in timing), timing
    assert two / 2 <= one <= 2 * two, (one, two)


def test_one_batch_is_scaled_with_the_fixed_share_of_a_two_batch_timing():
    """A step of 1 s fixed and 0.1 s a row, timed at 8 and 16 rows: its fixed share at 16 is 1/2.6; a later
    shape timed at 16 alone and scaled with that share gives the line's cost at 64, where scaling through
    the origin would give it 2.1 times over."""
    from longsynth.models_ref.evaluation.dry_run import at_batch, fixed_share

    cost = lambda b: 1.0 + 0.1 * b  # noqa: E731
    share = fixed_share([cost(8), cost(16)], [8, 16])
    assert share == pytest.approx(1 / 2.6)
    assert at_batch([cost(16)], [16], 64, share) == pytest.approx(cost(64))
    assert at_batch([cost(16)], [16], 64) == pytest.approx(4 * cost(16))  # through the origin, erring high
    assert at_batch([cost(8), cost(16)], [8, 16], 64) == pytest.approx(cost(64))
    assert fixed_share([2.0, 1.0], [8, 16]) == 1.0  # noise that makes more rows cheaper: all of it fixed


class _Slow(torch.nn.Module):
    """A causal model whose forward takes ``coef`` * T^1.5 s a row (a cost between a recurrence's and
    attention's), or with ``pair``, ``coef`` * T + ``pair`` * T^2 s (a part per position and one per pair of
    positions, attention's), and that fails past ``limit`` positions, as one sized by its training length would."""

    def __init__(self, spec, limit=None, coef=2e-5, pair=None):
        super().__init__()
        self.spec, self.limit, self.coef, self.pair = spec, limit, coef, pair
        self.w = torch.nn.Parameter(torch.zeros(spec.d_output))

    def cost(self, T):
        return self.coef * T ** 1.5 if self.pair is None else self.coef * T + self.pair * T * T

    def forward(self, x):
        import time

        B, T = x.shape[:2]
        if self.limit is not None and T > self.limit:
            raise ValueError(f"positions past {self.limit}")
        time.sleep(B * self.cost(T))
        return self.w.expand(B, T, -1) + 0 * x[..., None].float()


def test_test_sets_past_the_timing_length_are_extrapolated_by_a_part_per_position_and_per_pair(monkeypatch):
    """Test sets longer than the dry run times (induction heads to 2^20) are costed from one row of the two
    longest that fit, as a part per position and a part per pair of positions fitted to those two: here the
    model's own cost of every set to within 1.5x, said in a line with the pairs' share; nothing runs at the
    longest length. A power of the length fitted to the same two rows (1.48) puts the longest set 1.8x too low."""
    from longsynth.models_ref.evaluation import dry_run as dr
    from longsynth.models_ref.evaluation.harness import Job, prepare

    monkeypatch.setattr(dr, "TIMING_TOKENS", 129)
    job = Job(model="x", protocol="induction-heads", task="induction-head", scale="tiny", device="cpu")
    prepared = prepare(job, fresh=True)
    protocol, spec = prepared.protocol, prepared.spec
    lengths = [dr._set_length(protocol, change) for change in protocol.test_sets.values()]
    assert max(lengths) >= 8 * 128  # sets to extrapolate to
    cfg = protocol.train_config(lr=1e-3, seed=0, steps=10, amp=False, weight_decay=0.0)
    lines = []
    model = _Slow(spec, limit=129, coef=1e-4, pair=1e-6)  # pairs: over half of a row's cost at 129 positions
    got = dr._time_test_sets(lambda: model, protocol, 4, cfg, "cpu", lines.append)
    want = sum(model.cost(n) for n in lengths) * protocol.eval_batches * 4
    assert want / 1.5 <= got <= 1.5 * want, (got, want)
    (line,) = lines
    share = float(re.search(r"pair of positions \((\d+)% of it", line).group(1)) / 100
    n2 = max(n for n in lengths if n <= 129)
    assert abs(share - 1e-6 * n2 * n2 / model.cost(n2)) < 0.15, line


def test_the_longest_input_check_is_left_out_where_it_would_take_too_long(monkeypatch):
    """A model that fails past its training length is refused before training where the forward at the
    longest test input is affordable, and is said to be unchecked there (not refused, not run) where the
    forward's cost, scaled by the square of the lengths, passes LONGEST_CHECK_S."""
    from longsynth.errors import LongsynthError
    from longsynth.models_ref.evaluation import checks
    from longsynth.models_ref.evaluation.harness import Job, prepare

    prepared = prepare(Job(model="x", protocol="induction-heads", task="induction-head", scale="tiny",
                           device="cpu"), fresh=True)
    spec = prepared.spec
    x = prepared.sources[0](0)[0][:2]
    assert spec.max_seq_len > x.shape[1]
    with pytest.raises(LongsynthError, match="forward at the longest input"):
        checks.check_model(_Slow(spec, limit=x.shape[1]), spec, x)
    monkeypatch.setattr(checks, "LONGEST_CHECK_S", 0.0)
    lines = []
    checks.check_model(_Slow(spec, limit=x.shape[1]), spec, x, notify=lines.append)
    (line,) = lines
    assert f"T = {spec.max_seq_len:,}) is not tried before training" in line


def test_timing_batches_count_the_positions_a_step_computes():
    """Parity's rows are laid out at the longest test length, but the trainer cuts each batch after its last
    scored position (training strings of at most 40 symbols): the dry run sizes its timing batches by those
    positions, so they hold many more rows than the layout's length allows; an atomic row is all computed."""
    from longsynth.models_ref.evaluation import dry_run as dr
    from longsynth.models_ref.evaluation.harness import Job, prepare

    parity = prepare(Job(model="x", protocol="parity", task="parity", scale="paper", device="cpu", batch_size=2),
                     fresh=True)
    n = dr._positions(parity)
    assert parity.protocol.trims and 20 <= n <= 45 < parity.spec.seq_len, (n, parity.spec.seq_len)
    assert dr.timing_batches(256, n)[1] > dr.timing_batches(256, parity.spec.seq_len)[1]
    atomic = prepare(Job(model="x", protocol="atomic", task="cumsum", scale="tiny", device="cpu", batch_size=2),
                     fresh=True)
    assert not atomic.protocol.trims and dr._positions(atomic) == atomic.spec.seq_len



def test_a_step_is_scaled_past_the_cut_by_the_line_or_the_power_of_two_lengths():
    """A fixed part plus a part that grows with the length is recovered exactly from rows of l and 4l; a cost
    that grows faster than the length (attention's square) by its power; noise that makes the longer rows
    cheaper leaves the cost flat, never below the longer timing."""
    from longsynth.models_ref.evaluation.dry_run import at_length

    line = lambda n: 1.0 + 2e-5 * n  # noqa: E731
    cost, how = at_length([line(16384), line(65536)], [16384, 65536], 2 ** 20)
    assert cost == pytest.approx(line(2 ** 20)) and how == "the line through them"
    square = lambda n: 3e-9 * n * n  # noqa: E731
    cost, how = at_length([square(16384), square(65536)], [16384, 65536], 2 ** 20)
    assert cost == pytest.approx(square(2 ** 20)) and "power 2.00" in how
    assert at_length([2.0, 1.5], [16384, 65536], 2 ** 20)[0] == 1.5


def test_rows_past_the_cut_are_timed_cut_and_their_estimate_holds(monkeypatch):
    """Rows longer than CUT_POSITIONS (Table 2's, to 2^20) are timed cut to it and to 4 times it, and the step
    scaled to the whole row: a line says so, and where a step's cost is a fixed part plus a part per position the
    estimate from the cut rows is the whole rows' own (an evaluation batch costs a share of a step: the dry run
    scales it with the step). The cost is a model of one (seconds from the shape of the
    batch the timing draws), so the check reads the dry run's arithmetic, not this machine's noise (a timed
    comparison failed under a neighbour's load)."""
    from longsynth.models_ref.evaluation import dry_run as dr
    from longsynth.models_ref.evaluation.sweep import Settings
    from longsynth.models_ref.training import trainer

    seen = set()

    def modelled(build, cfg, train_batch, val_batches=None, **kw):
        x = train_batch(1)[0]
        x = x["x"] if isinstance(x, dict) else x
        B, T = x.shape[:2]
        seen.add(T)
        step = 1e-3 + 1e-6 * B * T
        return step, 0.3 * step if val_batches is not None else 0.0  # an evaluation batch: a share of a step

    monkeypatch.setattr(trainer, "step_seconds", modelled)
    settings = Settings(scale="tiny", steps=50)
    whole = dr.dry_run("dlr", "shift", out="/nonexistent-dry", settings=settings).seconds
    assert seen == {512}
    monkeypatch.setattr(dr, "CUT_POSITIONS", 64)
    lines = []
    cut = dr.dry_run("dlr", "shift", out="/nonexistent-dry", settings=settings, notify=lines.append).seconds
    assert seen == {512, 64, 256}  # the whole rows, then rows cut to 64 and to 4 x 64
    assert any(line.startswith("timing ") and "of rows cut to 64 positions (of 512)" in line for line in lines)
    assert any("rows of 512 positions: a step's cost at 64 scaled by" in line for line in lines), lines
    assert cut == pytest.approx(whole, rel=1e-6), (cut, whole)


def test_the_dry_run_checks_a_built_in_once_whatever_the_length():
    """Table 2's shift rows at 256 and 2^20 positions give one check of a built-in (its causality and shapes
    at every length are the layer tests'), but two of a user's model, which evaluate checks at each."""
    from longsynth.models_ref.evaluation.plan import _check_key
    from longsynth.models_ref.evaluation.protocol import resolve
    from longsynth.models_ref.models import factories
    from longsynth.spec import ModelSpec

    def key(factory, proto, L):
        protocol = resolve(proto, "paper", task="shift")
        spec = ModelSpec(task="shift", protocol=proto, scale="paper", objective="regression", readout="rightmost",
                         d_output=8, seq_len=L, target_len=L, causal=True, d_input=3, max_seq_len=L)
        return _check_key(factory, spec, protocol, torch.zeros(2, L, 3))

    dlr = factories.Reference("dlr")
    assert key(dlr, "shift-256", 256) == key(dlr, "shift-1m", 2 ** 20)
    assert key(dlr, "shift-256", 256) != key(factories.Reference("dss"), "shift-256", 256)
    mine = lambda spec: None  # noqa: E731
    assert key(mine, "shift-256", 256) != key(mine, "shift-1m", 2 ** 20)
