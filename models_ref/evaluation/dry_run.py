"""``evaluate --dry-run``: the plan of a sweep and an estimate of its wall time, from a few timed
training steps and evaluation batches of a throwaway model per suite member and grid point
(docs/evaluate.md, "Dry run"); nothing is written into the output folder.
"""
from __future__ import annotations

import dataclasses
import time

import torch

from longsynth import registry, safe
from longsynth.errors import LongsynthError
from longsynth.escape import visible
from longsynth.outdir import Folder
from longsynth.models_ref.evaluation.finished import _finished
from longsynth.models_ref.evaluation.plan import (Settings, _plural, _steps_of, plan, plan_line, run_key,
                                                  suite_tasks)
from longsynth.models_ref.evaluation.checks import build
from longsynth.models_ref.evaluation.protocol import resolve
from longsynth.models_ref.reports.records import member_name


def duration(seconds):
    """A wall time in words: 40 s, 12 min, 5.2 h, 3.1 days, 11 weeks."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    hours = seconds / 3600
    if hours < 48:
        return f"{hours:.1f} h"
    days = hours / 24
    if days < 28:
        return f"{days:.1f} days"
    return f"{days / 7:.0f} weeks ({days:,.0f} days)"


DAY_S = 86_400.0


@dataclasses.dataclass
class DryRun:
    """``evaluate --dry-run``'s answer: the plan, a line per suite member with its estimate,
    the total in seconds (None when nothing is left to run) and warnings."""

    plan: str | None
    members: list
    seconds: float | None
    total: str
    warnings: list

    def text(self):
        lines = ([self.plan] if self.plan else []) + self.members + [self.total] + self.warnings
        return "\n".join(lines + ["nothing written (--dry-run)"])


TIMING_TOKENS = 2048  # the dry run times steps of at most this many positions (batch x length), and scales them
TIMING_BUDGET_S = 5.0  # seconds of timed steps a whole dry run aims at, shared by its suite members
CUT_POSITIONS = 16384  # rows longer than this are timed cut to it and to 4 times it, and scaled (at_length)


def timing_batches(B, L):
    """(b1, b2): the two batch sizes the dry run times a protocol's global batch B of rows of L
    positions at, b2 of at most ``TIMING_TOKENS`` positions and b1 half of it (B itself, once, where
    B is 2 or less); a step's cost at B is the line through the two (``at_batch``)."""
    if B <= 2:
        return (B,)
    b2 = max(2, min(B, TIMING_TOKENS // max(1, L)))
    return b2 // 2, b2


def _line(times, sizes):
    """(intercept, slope) of the line through two timings (both at least 0: noise never makes a
    bigger batch cheaper)."""
    (t1, t2), (b1, b2) = times, sizes
    slope = max(0.0, (t2 - t1) / (b2 - b1))
    return max(0.0, t2 - slope * b2), slope


def at_batch(times, sizes, B, share=0.0):
    """The cost at batch B of the costs ``times`` timed at batch ``sizes``: the line through two
    points (``_line``), or from one point, the part ``share`` of it taken as a cost per step and
    the rest as a cost per row."""
    if len(sizes) == 1:
        return times[0] * (share + (1 - share) * B / sizes[0])
    base, slope = _line(times, sizes)
    return base + slope * B


def fixed_share(times, sizes, at=None):
    """The part of the cost at batch ``at`` (the larger timing batch by default) that does not grow with
    the batch (the line's intercept over its value there), from a two-batch timing."""
    base, slope = _line(times, sizes)
    value = base + slope * (sizes[1] if at is None else at)
    return min(1.0, base / value) if value > 0 else 0.0


def _spread(source, protocol, steps):
    """Timing batches of a protocol that draws one length a batch (the Chomsky hierarchy's): step i
    at the i-th of ``steps`` lengths spread evenly over the training range, so that a few steps
    average over the lengths as a run's do (rather than over a few random draws)."""
    if not protocol.length_per_batch:
        return source
    lo, hi = source.lo, source.hi
    lengths = [round(lo + (hi - lo) * (i + 0.5) / steps) for i in range(steps)]
    return lambda i: source.at(i, lengths[(i - 1) % steps])  # step 0 is the warm-up


def _cut(batch, n):
    """A batch with its rows cut to their first ``n`` positions: every tensor of it (inputs, targets,
    extras) that runs along the positions past ``n``; a row's single label stays."""
    def cut(t):
        return t[:, :n] if isinstance(t, torch.Tensor) and t.dim() >= 2 and t.shape[1] > n else t

    return tuple({k: cut(v) for k, v in part.items()} if isinstance(part, dict) else cut(part) for part in batch)


def _cut_spec(spec, n):
    """The spec of rows cut to ``n`` positions (``_cut``): the model a cut timing builds is sized by them."""
    short = {f: min(getattr(spec, f), n) for f in ("seq_len", "target_len", "max_seq_len")
             if getattr(spec, f) is not None}
    return dataclasses.replace(spec, **short)


def at_length(times, lengths, n):
    """(cost, how) at rows of ``n`` positions of the costs ``times`` of one batch timed at rows of
    ``lengths`` l1 < l2: the line through the two (a fixed part and a part that grows with the length,
    as a recurrence's or a convolution's up to its log) where the cost grew by at most l2/l1; where it
    grew more, the length to the power it grew by (at most 2, attention's) from the longer, erring low
    for a cost with a large fixed part."""
    import math

    (t1, t2), (l1, l2) = times, lengths
    if t1 <= 0 or t2 <= t1 * l2 / l1:
        return t2 + max(0.0, t2 - t1) / (l2 - l1) * (n - l2), "the line through them"
    power = min(2.0, math.log(t2 / t1) / math.log(l2 / l1))
    return t2 * (n / l2) ** power, f"the length to the power {power:.2f}"


def _time_test_sets(make, protocol, B, cfg, device, notify=lambda line: None):
    """Seconds of the protocol's test sets at batch ``B`` (a forward pass over each set's batches).
    Where every set fits ``TIMING_TOKENS`` positions, from one timed batch of the longest, each set's
    cost taken as that batch's times its share of the length (a conservative guess for a cost that
    grows faster than the length). Past it (induction heads to 2^20), from one row of each of the two
    longest sets that fit, a longer row's cost taken as a part per position and a part per pair of
    positions (a recurrence's and attention's) fitted to those two (``per_position_and_pair``), said
    through ``notify``."""
    sets = protocol.test_sets or {}
    if not sets:
        return 0.0
    lengths = {label: _set_length(protocol, change) for label, change in sets.items()}
    model = make().to(device)
    model.eval()
    fit = sorted((n, label) for label, n in lengths.items() if n <= TIMING_TOKENS)
    if max(lengths.values()) <= TIMING_TOKENS or len(fit) < 2:
        longest = max(lengths, key=lengths.get)
        one = _row_seconds(model, protocol, sets[longest], lengths[longest], B, cfg, device)
        return sum(one * n / lengths[longest] for n in lengths.values()) * protocol.eval_batches * B
    (n1, l1), (n2, l2) = fit[-2:]
    _row_seconds(model, protocol, sets[l1], n1, B, cfg, device)  # a warm-up: the first forward allocates
    t1 = _row_seconds(model, protocol, sets[l1], n1, B, cfg, device, repeats=3)  # extrapolation magnifies noise
    t2 = _row_seconds(model, protocol, sets[l2], n2, B, cfg, device, repeats=3)
    a, b = per_position_and_pair([t1, t2], [n1, n2])
    notify(f"  the test sets past {n2:,} positions (to {max(lengths.values()):,}): their forward's cost taken as a "
           f"part per position and a part per pair of positions ({b * n2 * n2 / max(t2, 1e-12):.0%} of it at "
           f"{n2:,}), fitted to one row at {n1:,} and {n2:,} (a guess past them)")
    return sum(a * n + b * n * n if n > n2 else t2 * n / n2 for n in lengths.values()) * protocol.eval_batches * B


def per_position_and_pair(times, lengths):
    """(a, b): the cost a*n + b*n^2 of a row of n positions, both parts at least 0, through the costs
    ``times`` of rows of two ``lengths`` (through the longer alone, with one part, where the two would
    need a negative part)."""
    (t1, t2), (n1, n2) = times, lengths
    b = (t2 / n2 - t1 / n1) / (n2 - n1)
    if b <= 0:
        return t2 / n2, 0.0
    a = t1 / n1 - b * n1
    if a <= 0:
        return 0.0, t2 / (n2 * n2)
    return a, b


def _row_seconds(model, protocol, change, n, B, cfg, device, repeats=1):
    """Seconds of a forward pass per row of a test set of rows of ``n`` positions, from one batch of
    at most ``TIMING_TOKENS`` positions (the fastest of ``repeats`` forwards)."""
    from longsynth.models_ref.evaluation.protocol import OnTheFly, _task_params
    from longsynth.models_ref.training.forward import _autocast, _forward, _unpack

    b = max(1, min(B, TIMING_TOKENS // n))
    x, y, _ = _unpack(OnTheFly(protocol.task, _task_params(protocol, change), 0, b, "test")(0), device, cfg.trim)
    best = float("inf")
    with torch.no_grad(), _autocast(device, cfg):
        for _ in range(repeats):
            t0 = time.perf_counter()
            _forward(model, x, y, cfg)
            best = min(best, time.perf_counter() - t0)
    return best / b


def _set_length(protocol, change):
    """The input length of a test set's rows, from the task's key shapes (nothing generated)."""
    from longsynth.models_ref.evaluation.protocol import _task_params

    task = registry.get(protocol.task)
    return int(task.keys(task.make_config(**_task_params(protocol, change)))["inputs"].shape[0])


def _shape_key(prepared, factory, job, B, n):
    """What a step's cost at rows of ``n`` positions depends on: suite members with the same key share
    one timing (the atomic tasks at one length, whose channels and generators differ by little beside
    the model's cost; Table 2's rows past ``CUT_POSITIONS``, all timed cut to it)."""
    import json

    from longsynth.models_ref.models import factories
    from longsynth.models_ref.protocols.registry import architecture

    protocol, spec = prepared.protocol, prepared.spec
    arch = architecture(job.protocol, job.scale, factory.name) if isinstance(factory, factories.Reference) else None
    return json.dumps([getattr(factory, "name", None), arch and arch.get("arch"), n, min(spec.seq_len, n),
                       spec.vocab_size, job.width, job.depth, B, protocol.steps if job.steps is None else job.steps,
                       protocol.eval_every, protocol.eval_batches, protocol.trims, protocol.length_per_batch,
                       protocol.test_sets], sort_keys=True, default=str)


def _positions(prepared, probes=8):
    """The positions of a training row that a step computes: the row's length, or where the trainer cuts
    each batch after its last scored position (a protocol that ``trims``: parity's rows are laid out at
    255 for the test lengths and trained on at most 40), the most that ``probes`` batches reach."""
    from longsynth.models_ref.training.forward import trimmed

    if not prepared.protocol.trims:
        return prepared.spec.seq_len
    ends = []
    for i in range(probes):
        batch = prepared.sources[0](i)
        ends.append(trimmed(batch[0], batch[1], {})[0].shape[1])
    return max(ends)


def _time_member(prepared, factory, jobs, settings, timing_steps, notify, timed, budget):
    """Seconds of each job of one suite member (training steps, evaluations and the test sets),
    from a few timed steps of a throwaway model per grid point (width, depth) at two small batches,
    scaled to the protocol's (``at_batch``): the learning rate, weight decay and seed do not change a
    step's cost, and members of one shape share a timing (``budget``: {"s": seconds left for timing,
    "members": members left, "shapes": {key: costs}, "lengths": {key: steps at cut rows}, "share": the
    fixed share at a number of positions and "eval": an evaluation batch's cost over a step's, both of
    the first shape timed at two batches}). Past the budget a shape is timed at its smaller batch alone,
    scaled with the first shape's fixed share there and its evaluation cost (a sweep's shapes are mostly
    one model at other widths or lengths). Rows past ``CUT_POSITIONS`` (Table 2's, to 2^20) are timed
    cut to it, their costs scaled to the whole row by a step's growth from rows cut to it to rows cut to
    4 times it, at the batch timed last (``at_length``). Adds (job, seconds, s/step) to ``timed``."""
    from numba import set_num_threads

    from longsynth.models_ref.evaluation.harness import prepare, resolve_lr
    from longsynth.models_ref.training.trainer import step_seconds

    protocol, dev = prepared.protocol, torch.device(settings.device)
    B = jobs[0].batch_size or protocol.batch_size
    positions = _positions(prepared)
    n = min(positions, CUT_POSITIONS)
    sizes = timing_batches(B, n)
    small = {}
    old = torch.get_num_threads()
    torch.set_num_threads(settings.threads)  # as execute runs each job
    set_num_threads(1)
    each_s = max(0.2, budget["s"] / max(1, budget["members"]) / len(sizes))

    def timing(job, cfg, b, length, evaluate, past):
        """(s/step, s/evaluation batch) at batch b of rows cut to ``length`` positions (whole at ``positions``)."""
        if b not in small:
            small[b] = prepare(dataclasses.replace(job, batch_size=b), fresh=True)
        train, val = small[b].sources[:2]
        spec = dataclasses.replace(prepared.spec, d_model=job.width, n_layers=job.depth)
        if length < positions:
            spec, whole, rows = _cut_spec(spec, length), train, val
            train = lambda i: _cut(whole(i), length)  # noqa: E731
            val = rows and (lambda: (_cut(batch, length) for batch in rows()))
        return step_seconds(lambda: build(factory, spec), cfg, _spread(train, protocol, timing_steps),
                            val if evaluate else None, device=settings.device, steps=timing_steps,
                            budget_s=0.0 if past else each_s)

    try:
        for job in jobs:
            key = _shape_key(prepared, factory, job, B, n)
            spec = dataclasses.replace(prepared.spec, d_model=job.width, n_layers=job.depth)
            cfg = protocol.train_config(lr=resolve_lr(job, factory, spec, protocol), seed=0, steps=job.steps,
                                        amp=dev.type == "cuda", weight_decay=job.weight_decay)
            past = budget["s"] <= 0
            t0 = time.perf_counter()
            if key not in budget["shapes"]:
                grid = "".join(f" {k} {v}" for k, v in (("width", job.width), ("depth", job.depth)) if v is not None)
                # past the budget, one step at the smaller timing batch (a warm-up, erring high) and no
                # evaluation batch where the first shape's are known: a later shape costs one step, not four
                at = sizes[:1] if past else sizes
                ratio = budget.get("eval") if past else None
                cut = f" of rows cut to {n:,} positions (of {positions:,})" if n < positions else ""
                notify(f"timing {member_name(job.protocol, job.task, registry.get(job.task).family)}{grid}: "
                       + (f"up to {timing_steps} training steps after a warm-up step at batch "
                          f"{' and '.join(map(str, at))}" if not past else
                          f"one training step at batch {at[0]} (past the timing budget)")
                       + f"{cut} (the protocol's {B}), on {settings.device}")
                steps, evals = [], []
                for b in at:
                    step_s, eval_s = timing(job, cfg, b, n, ratio is None, past)
                    steps.append(step_s)
                    evals.append(eval_s if ratio is None else ratio * step_s)
                if len(at) == 2 and "share" not in budget:
                    budget["share"] = lambda cells, line=(steps, at, n): fixed_share(*line[:2], at=cells / line[2])
                    budget["eval"] = evals[-1] / steps[-1] if steps[-1] > 0 else 0.0
                # the first two-batch shape's fixed share at as many positions as timed here (its line's
                # rows of its length); through the origin, erring high, where no shape was timed at two batches
                share = budget["share"](at[0] * n) if "share" in budget else 0.0
                tests = _time_test_sets(lambda: build(factory, spec), protocol, B, cfg, settings.device, notify)
                budget["shapes"][key] = (at_batch(steps, at, B, share), at_batch(evals, at, B, share), tests,
                                         steps[-1], at[-1])
            step_s, eval_s, tests, last, b = budget["shapes"][key]
            scale = 1.0
            if n < positions:  # a step at the batch timed last, at rows cut to n and to 4n
                cuts = (n, min(positions, 4 * n))
                if (key, cuts) not in budget.setdefault("lengths", {}):
                    budget["lengths"][key, cuts] = (last, timing(job, cfg, b, cuts[1], False, past)[0])
                times = budget["lengths"][key, cuts]
                whole, how = at_length(times, cuts, positions)
                scale = whole / times[0]
                if job is jobs[0]:
                    notify(f"  rows of {positions:,} positions: a step's cost at {n:,} scaled by {scale:.3g}, "
                           f"{how} of a step at batch {b} at {cuts[0]:,} and {cuts[1]:,} positions (a guess past "
                           f"them)")
            budget["s"] -= time.perf_counter() - t0
            evaluations = cfg.steps // cfg.eval_every + (cfg.steps % cfg.eval_every != 0) + 1  # + the test
            timed.append((job, (cfg.steps * step_s + evaluations * cfg.eval_batches * eval_s) * scale + tests,
                          step_s * scale))
    finally:
        torch.set_num_threads(old)
        budget["members"] -= 1


def dry_run(model, suite, *, out, settings=None, notify=None, timing_steps=3):
    """``evaluate --dry-run``: the plan of ``evaluate(model, suite, out=out, settings=settings)``
    and an estimate of its wall time on ``settings.device``, from ``timing_steps`` training steps
    (after a warm-up step) and a few evaluation batches of a throwaway model per suite member and
    grid point, times each run's steps and evaluations. The model is checked on every member as
    evaluate checks it; runs already finished in ``out`` are left out. Nothing is written into
    ``out`` (nor is it made); a suite on stored datasets generates them into the cache as evaluate
    would. Returns a DryRun (``.text()``: what the command prints)."""
    settings = settings or Settings()
    notify = notify or (lambda line: None)
    if isinstance(timing_steps, bool) or not isinstance(timing_steps, int) or not 1 <= timing_steps <= 100:
        raise LongsynthError(f"timing_steps: must be an integer from 1 to 100, got {timing_steps!r}")
    out = Folder.of(safe.check_out_path(out))
    timed = []
    budget = {"s": TIMING_BUDGET_S, "members": len(suite_tasks(suite, settings.scale)), "shapes": {}}
    planned, _, _ = plan(model, suite, settings, out, notify, on_member=lambda prepared, factory, jobs: _time_member(
        prepared, factory, jobs, settings, timing_steps, notify, timed, budget))
    seconds = {run_key(job.to_dict()): (s, per) for job, s, per in timed}
    todo = []
    for job, run_dir in planned:
        try:
            done = _finished(job, run_dir, lambda line: None, "refuse", hash_files=False) is not None
        except LongsynthError:  # an edited run: evaluate would train it again
            done = False
        if not done:
            todo.append((job, run_dir))
    finished = len(planned) - len(todo)
    if finished:
        notify(f"{finished} of {len(planned)} runs already finished in {visible(out)}; the estimate is for the other "
               f"{len(todo)}")
    if not todo:
        return DryRun(None, [], None, f"all {len(planned)} run(s) already finished in {visible(out)}; nothing to train",
                      [])
    members = {}
    for job, _ in todo:
        name = member_name(job.protocol, job.task, registry.get(job.task).family)
        members.setdefault(name, []).append((job, *seconds[run_key(job.to_dict())]))
    parallel = 1 if settings.dask else settings.jobs
    lines, total = [], 0.0
    width = max(len(n) for n in members)
    for name, rows in members.items():
        s = sum(r[1] for r in rows)
        total += s
        steps = sorted({_steps_of(r[0]) for r in rows})
        per = sorted(r[2] for r in rows)
        each = f"{steps[0]:,}" if len(steps) == 1 else f"{steps[0]:,}-{steps[-1]:,}"
        lines.append(f"  {name:{width}s}  {_plural(len(rows), 'run')} x {each} steps, {_rates(per, rows)}: "
                     f"{duration(s)}")
    how = ("one run after another on each Dask worker: divide by the workers" if settings.dask
           else f"{settings.jobs} runs at a time" if parallel > 1 else "one run after another")
    wall = total / parallel
    tested = " and the test sets beyond the training lengths" if any(
        resolve(job.protocol, job.scale, task=job.task).test_sets for job, _ in todo) else ""
    text = (f"estimate: about {duration(wall)} on {settings.device}, {how}; training steps, evaluations, the "
            f"test{tested}, from up to {timing_steps} timed steps per task and grid point at small batches, scaled "
            f"to the protocol's (a guide, not a promise)")
    warnings = []
    if wall > DAY_S:
        warnings.append(f"warning: that is {duration(wall)}: a GPU (--device cuda), fewer steps (--steps), fewer "
                        f"--lr or --seeds, --jobs, or --scale tiny shorten it")
    if settings.scale == "paper" and settings.device == "cpu":
        warnings.append("warning: --scale paper on a CPU: the papers trained these protocols on GPUs")
    return DryRun(plan_line(todo, settings), lines, wall, text, warnings)


def _rate(seconds):
    return f"{seconds:.3g} s" if seconds >= 0.01 else f"{seconds * 1000:.3g} ms"


def _rates(per, rows):
    """Seconds per step of a member's runs: "0.12 s/step", or "5.64-16.6 s/step (by width)"
    where its grid points differ."""
    lo, hi = _rate(per[0]), _rate(per[-1])
    if lo == hi:
        return f"{lo}/step"
    varies = [name for name in ("width", "depth") if len({getattr(r[0], name) for r in rows}) > 1]
    by = " and ".join(varies) or "grid point"
    same = lo.split()[1] == hi.split()[1]
    return (f"{lo.split()[0]}-{hi}" if same else f"{lo}-{hi}") + f"/step (by {by})"
