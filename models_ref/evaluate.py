"""``longsynth evaluate``: any model factory through the papers' protocols, in sweeps.

``evaluate(model, suite, ...)`` plans one run per (task, learning rate, seed), checks the
model on every task before anything trains, runs the jobs (in this process, in ``jobs``
processes, or as Dask tasks), and writes a report (``report.Report``) to ``out``:
report.json, report.md and report.png, with every run's certificate under
``out/runs/TASK/lr..-seed..-HASH/``. docs/evaluate.md is the user's guide.

``out`` is also the cache of runs: a run whose certificate exists under the same config
hash is not run again, an unfinished one resumes from its last checkpoint, and a run
whose config changed gets a new directory (said in one line).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import pickle
import re
import sys

import matplotlib  # noqa: F401 - report.png needs it: missing, evaluate stops before training
import torch

from longsynth import certificate, registry, safe
from longsynth.errors import LongsynthError
from longsynth.outdir import Folder
from longsynth.store.pool import SpawnableMain, die_with_parent, stop_workers
from longsynth.models_ref import factories, limits
from longsynth.models_ref.harness import (CHECKPOINTS, RECORD, Job, build, changed_files, check_model, prepare,
                                         run)
from longsynth.models_ref.presets import (ATOMIC_TASKS, PROTOCOLS, SUITES, architecture, preset_lr, protocol_of,
                                         suite_members, task_of)
from longsynth.models_ref.protocol import SCALES, resolve
from longsynth.models_ref.report import Report, diverged_text, member_name
from longsynth.models_ref.trainer import CheckpointError

CACHE_ENV = "LONGSYNTH_CACHE"


def cache_dir():
    """Where generated datasets are kept: $LONGSYNTH_CACHE, else ~/.cache/longsynth."""
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "longsynth")


def suite_tasks(suite, scale=None):
    """[(protocol, task)] of a suite: a group, an atomic task, a protocol, or a comma list of them.
    With ``scale``, a group keeps the members that have a protocol at that scale (MAD's tiny
    scale runs each task's baseline setting, its paper scale all 66)."""
    members = []
    for name in (s.strip() for s in suite.split(",")):
        if name in SUITES:
            members += [(p, t) for p, t in SUITES[name] if scale is None or (protocol_of(p), scale) in PROTOCOLS]
        elif name in ATOMIC_TASKS:
            members.append(("atomic", name))
        elif task_of(name) is not None:
            members.append((name, task_of(name)))
        else:
            import difflib

            near = difflib.get_close_matches(name, suite_members(), n=1)
            hint = f"; did you mean {near[0]}?" if near else f"; choose from {', '.join(suite_members())}"
            raise LongsynthError(f"suite: unknown suite {name!r}{hint}")
    return list(dict.fromkeys(members))


def dataset_for(protocol, data, notify, progress=False):
    """The stored dataset of a protocol: ``data`` (a dataset, or a folder of one per protocol),
    else the cache's copy, generated on first use with the protocol's parameters and splits."""
    from longsynth.store import generate
    from longsynth.store import open as open_dataset

    if data is not None:
        root = data if os.path.isfile(os.path.join(data, "manifest.json")) else os.path.join(data, protocol.name)
        if not os.path.isdir(root):
            raise LongsynthError(f"--data: {root} does not exist (one dataset directory per task, named "
                                 f"{protocol.name})")
        ds = open_dataset(root)
        if ds.task.name != protocol.task:
            raise LongsynthError(f"--data: {root} holds {ds.task.name}, but {protocol.name} needs {protocol.task}")
        return ds.root
    root = os.path.join(cache_dir(), "data", f"{protocol.name}-{protocol.scale}")
    try:
        return open_dataset(root).root
    except LongsynthError:
        pass
    notify(f"{protocol.name}: generating its {protocol.scale} dataset into {root} (once; reused after)")
    from longsynth.progress import Samples

    with Samples(f"gen {protocol.task} (cache)") if progress else contextlib.nullcontext() as bar:
        generate(root, protocol.task, protocol.data, seed=0, splits=protocol.splits, notify=notify, progress=bar,
                 command=f"longsynth evaluate (cache of {protocol.name}, scale {protocol.scale})")
    return root


@dataclasses.dataclass(frozen=True)
class Settings:
    """A sweep's options beside the model and the suite."""

    scale: str = "tiny"
    steps: int | None = None  # None: the protocol's
    lrs: tuple | None = None  # None: the model's preset lr (built-ins), else the protocol's
    seeds: int = 1
    device: str = "cpu"
    jobs: int = 1
    dask: str | None = None  # a scheduler address or scheduler file
    data: str | None = None
    threads: int = 1  # torch threads per run on the CPU (the one thread policy of evaluate and validate)
    edited: str = "redo"  # a run whose files changed since it finished: "redo" it, or "refuse" (stop)


def _default_lr(factory, protocol, scale, task):
    row = architecture(protocol, scale, factory.name) if isinstance(factory, factories.Reference) else None
    return PROTOCOLS[(protocol, scale)]["lr"] if row is None else preset_lr(row, task)


def _config_hash(job, identity, protocol):
    blob = json.dumps({"job": job.to_dict(), "identity": identity, "protocol": dataclasses.asdict(protocol)},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:10]


def _check_settings(s):
    """Each option within its bounds (models_ref/limits.py), before anything is planned."""
    if s.scale not in SCALES:
        raise LongsynthError(f"--scale: must be one of {', '.join(SCALES)}, got {s.scale!r}")
    for name, value, most in (("--seeds", s.seeds, limits.MAX_SEEDS), ("--jobs", s.jobs, limits.MAX_JOBS),
                              ("--threads", s.threads, limits.MAX_THREADS),
                              ("--steps", 1 if s.steps is None else s.steps, limits.MAX_STEPS)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise LongsynthError(f"{name}: must be an integer from 1 to {most:,}, got {value!r}")
    if s.lrs is not None:
        if len(s.lrs) > limits.MAX_LRS:
            raise LongsynthError(f"--lr: at most {limits.MAX_LRS} learning rates, got {len(s.lrs):,}")
        if not s.lrs or any(isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr)
                            or not lr > 0 for lr in s.lrs):
            raise LongsynthError(f"--lr: learning rates must be finite numbers > 0, got "
                                 f"{', '.join(map(str, s.lrs))}")
    if s.jobs > 1 and s.dask:
        raise LongsynthError("--jobs and --dask: give one (Dask's workers are the jobs)")
    if s.edited not in EDITED:
        raise LongsynthError(f"--edited: must be one of {', '.join(EDITED)}, got {s.edited!r}")


def _count_runs(members, settings):
    """The runs a sweep plans, counted from its protocols before any is planned; LongsynthError
    past limits.MAX_RUNS."""
    total = 0
    for proto_name, task in members:
        protocol = resolve(proto_name, settings.scale, task=task)
        per_lr = (len(protocol.weight_decays or (None,)) * len(protocol.widths or (None,))
                  * len(protocol.depths or (None,)) * settings.seeds)
        total += len(settings.lrs or protocol.lrs or (None,)) * per_lr
    if total > limits.MAX_RUNS:
        raise LongsynthError(f"the sweep plans {total:,} runs ({len(members)} task(s) x learning rates x seeds); "
                             f"at most {limits.MAX_RUNS:,} in one evaluate: fewer --seeds or --lr, or split the suite")
    return total


def _factory(model):
    """(factory, identity, text) of a model name or a Python callable."""
    if isinstance(model, str):
        factory, identity = factories.load(model)
        return factory, identity, identity["model"]
    if not callable(model):
        raise LongsynthError(f"model: must be a name or a callable factory, got {type(model).__name__}")
    text = f"{getattr(model, '__module__', '?')}:{getattr(model, '__qualname__', type(model).__name__)}"
    return model, {"model": text, "sha256": None}, text


def sweep(probe, protocol, settings, lrs):
    """(job, its run folder's name prefix) of each point of one suite member's sweep: learning
    rates ``lrs`` x the protocol's weight decays, widths and depths x ``settings.seeds``."""
    every = min(protocol.eval_every, settings.steps or protocol.steps)
    grid = itertools.product(lrs, protocol.weight_decays or (None,), protocol.widths or (None,),
                             protocol.depths or (None,), range(settings.seeds))
    for lr, wd, width, depth, seed in grid:
        job = dataclasses.replace(probe, lr=float(lr), seed=seed, steps=settings.steps, checkpoint_every=every,
                                  weight_decay=wd, width=width, depth=depth)
        prefix = (f"lr{lr:g}-" + ("" if wd is None else f"wd{wd:g}-") + ("" if width is None else f"d{width}-")
                  + ("" if depth is None else f"n{depth}-") + f"seed{seed}-")
        yield job, prefix


def plan(model, suite, settings, out, notify, progress=False, on_member=None):
    """(jobs with their run directories, factory, identity): every task checked before training.
    ``on_member(prepared, factory, jobs)``: called for each suite member once its model passed
    the checks, with its prepared data (harness.prepare) and its jobs."""
    _check_settings(settings)
    factory, identity, text = _factory(model)
    planned, changed, unstored = [], 0, []
    members = suite_tasks(suite, settings.scale)
    _count_runs(members, settings)
    if len(members) > 1:  # a forward pass on a real batch per task: a minute or two for the atomic suite
        what = members_text(members)  # "2 tasks", "4 cells of mqar (...)"
        notify(f"checking {text} on the {what}{'' if ' of ' in what else f' of {suite}'} before anything trains")
    for proto_name, task in members:
        protocol = resolve(proto_name, settings.scale, task=task)
        if settings.data is not None and not protocol.stored:
            unstored.append(task)
        data = dataset_for(protocol, settings.data, notify, progress) if protocol.stored else None
        probe = Job(model=text, protocol=proto_name, task=task, scale=settings.scale, data=data,
                    device=settings.device)
        prepared = prepare(probe)
        torch.manual_seed(0)
        dev = torch.device(settings.device)  # on the run's device: a paper-scale model is slow on a CPU
        check_model(build(factory, prepared.spec), prepared.spec, prepared.sources[0](0)[0][:2].to(dev))
        lrs = settings.lrs or protocol.lrs or (_default_lr(factory, proto_name, settings.scale, task),)
        mine = []
        for job, prefix in sweep(probe, protocol, settings, lrs):
            parent = Folder.of(out).sub("runs", member_name(proto_name, task, registry.get(task).family))
            run_dir = parent.sub(prefix + _config_hash(job, identity, protocol))
            if not run_dir.exists():  # a link on the way is refused, never entered
                changed += any(d.startswith(prefix) for d in parent.listdir())
            mine.append((job, run_dir))
        if on_member is not None:  # evaluate --dry-run times this member's steps while its data is at hand
            on_member(prepared, factory, [job for job, _ in mine])
        planned += mine
    if unstored:
        notify(f"--data is ignored for {', '.join(unstored)}: {'it is' if len(unstored) == 1 else 'they are'} "
               f"generated on the fly (--data serves the suites that train on a stored dataset)")
    if changed:
        notify(f"{changed} run(s) changed config since the last evaluate in {out}: they start fresh "
               "(the earlier runs stay in runs/)")
    return planned, factory, identity


def run_key(d):
    """What tells the runs of a sweep apart: (protocol, task, lr, weight decay, width, depth, seed)
    of a Job's dict or a certificate."""
    return tuple(d.get(k) for k in ("protocol", "task", "lr", "weight_decay", "width", "depth", "seed"))


EDITED = ("redo", "refuse")  # what a rerun does with a run whose files changed (--edited)


def _finished(job, run_dir, notify, edited="redo"):
    """A run's certificate when it finished and its files are as it left them; None (run
    it, resuming) when it has none. A certificate is untrusted input (longsynth.certificate):
    read without following a link (a link is refused), bounded, and checked field by field
    before the report uses it; then every file of the run is checked against the SHA-256
    that files.json recorded as the run finished. One that fails the schema, is another
    run's, or whose run folder changed is said in one line, then its run is redone
    (``edited="redo"``: from its last checkpoint when the checkpoints are as recorded, else
    from the start) or evaluate stops (``"refuse"``). Nothing edited is reported."""
    path = run_dir.join("metrics.json")
    try:
        if os.path.islink(path):
            raise LongsynthError(f"{path}: is a symbolic link inside the output folder; remove it (longsynth never "
                                 f"reads or writes through one)")
        cert = certificate.read(run_dir)
    except FileNotFoundError:
        return None
    except certificate.CertificateError as e:
        return _edited(str(e), run_dir, notify, edited)
    mine = {"task": job.task, "protocol": job.protocol, "scale": job.scale, "lr": job.lr, "seed": job.seed,
            "weight_decay": job.weight_decay, "width": job.width, "depth": job.depth}
    other = [k for k, v in mine.items() if cert.get(k) != v]
    if other:
        return _edited(f"{path}: {other[0]}: {cert[other[0]]!r}, but this run's is {mine[other[0]]!r}", run_dir,
                       notify, edited)
    changed = changed_files(run_dir)
    if changed is None:
        return _edited(f"{run_dir.path}: has no {RECORD} (the SHA-256 of its files, written as its run finishes)",
                       run_dir, notify, edited)
    if changed:
        what = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        return _edited(f"{run_dir.path}: {what} changed since the run finished (not as {RECORD} records "
                       f"{'it' if len(changed) == 1 else 'them'})", run_dir, notify, edited)
    return cert


def _edited(problem, run_dir, notify, edited):
    """A finished run whose files cannot be trusted: stop (``refuse``), or say so and redo
    it, from the start when its checkpoints are not as recorded. Returns None (run it)."""
    if edited == "refuse":
        raise LongsynthError(f"{problem}; evaluate stops (--edited refuse): restore the run's files, remove its "
                             f"folder, or rerun with --edited redo to train it again")
    changed = changed_files(run_dir)
    fresh = changed is not None and any(name in changed for name in (RECORD, *CHECKPOINTS))
    notify(f"{problem}; the run is redone" + (" from the start (its checkpoints are not as recorded)" if fresh
                                               else ""))
    if fresh:
        _drop_checkpoints(run_dir)
    return None


def _drop_checkpoints(run_dir):
    """Remove a run's checkpoints (not to be resumed from): the run trains from its first step."""
    ck = run_dir.sub("checkpoints")
    for name in ("last.pt", "best.pt"):
        ck.remove(name)


def _say(line):
    """A line on stderr, from this process or a worker's (whose stderr is the parent's)."""
    print(line, file=sys.stderr, flush=True)


def execute(job, run_dir, factory=None, threads=1, progress=False, edited="redo"):
    """One run in this process with ``threads`` torch threads (CPU), resuming when it can
    (and saying so: "resuming RUN/checkpoints/last.pt at step N of M"). A checkpoint that
    cannot resume it (trainer.CheckpointError: damaged, edited, another run's) is said in
    one line and the run starts over (``edited="redo"``), or the run stops (``"refuse"``)."""
    from numba import set_num_threads

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    set_num_threads(1)
    try:
        try:
            return run(job, run_dir, factory=factory, resume=True, progress=progress, notify=_say)
        except CheckpointError as e:
            if edited == "refuse":
                raise LongsynthError(f"{e}; evaluate stops (--edited refuse): remove {run_dir.join('checkpoints')} "
                                     f"or rerun with --edited redo to start the run over") from None
            _say(f"{e}; the run starts over")
        _drop_checkpoints(run_dir)
        return run(job, run_dir, factory=factory, resume=False, progress=progress, notify=_say)
    finally:
        torch.set_num_threads(old)


def _plural(n, word):
    return f"{n:,} {word if n == 1 else word + 's'}"


def members_text(keys):
    """The suite members of (protocol, task) pairs in words: "2 tasks", "4 cells of mqar
    (mqar-64, ...)" where one task runs under several protocols (the field's grids,
    models_ref/field.py), "66 cells of 6 tasks" for several of both."""
    keys = list(dict.fromkeys(keys))
    by_task = {}
    for proto, task in keys:
        by_task.setdefault(task, []).append(proto)
    if len(keys) == len(by_task):
        return _plural(len(keys), "task")
    if len(by_task) == 1:
        (task, protos), = by_task.items()
        names = f" ({', '.join(protos)})" if len(protos) <= 6 else ""
        return f"{len(protos)} cells of {task}{names}"
    return f"{len(keys)} cells of {len(by_task)} tasks"


def _steps_of(job):
    return job.steps or resolve(job.protocol, job.scale, task=job.task).steps


def plan_line(todo, settings):
    """The plan, up front: how many runs on which suite members, how many training steps in
    all, how they run."""
    steps = sum(_steps_of(job) for job, _ in todo)
    how = (f"as Dask tasks on {settings.dask}" if settings.dask else f"{settings.jobs} at a time" if settings.jobs > 1
           else "one after another")
    members = members_text((job.protocol, job.task) for job, _ in todo)
    return (f"plan: {_plural(len(todo), 'run')} on {members}, {steps:,} training steps in all, {how} on "
            f"{settings.device}; each run's progress shows its rate and time left")


CPU_STEPS_WARNING = 1_000_000  # training steps on a CPU past which evaluate warns before it starts (days)


def cpu_warning(todo, settings):
    """A warning line before a sweep that should take days on a CPU (the paper scale, or more
    than CPU_STEPS_WARNING steps), else None: timing it costs minutes, so the line says
    how to get the estimate (``evaluate --dry-run``)."""
    if settings.device != "cpu":
        return None
    steps = sum(_steps_of(job) for job, _ in todo)
    if settings.scale != "paper" and steps <= CPU_STEPS_WARNING:
        return None
    what = "paper scale on a CPU" if settings.scale == "paper" else "a long sweep on a CPU"
    return (f"warning: {what}: {steps:,} training steps in total, which can take days or weeks; the same command with "
            f"--dry-run estimates the time from a few timed steps (Ctrl-C stops; rerunning resumes)")


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


def _time_member(prepared, factory, jobs, settings, timing_steps, notify, timed):
    """Seconds of each job of one suite member (training steps, evaluations and the test),
    from a few timed steps of a throwaway model per grid point (width, depth): the learning
    rate, weight decay and seed do not change a step's cost. Adds (job, seconds, s/step) to ``timed``."""
    from numba import set_num_threads

    from longsynth.models_ref.harness import resolve_lr
    from longsynth.models_ref.trainer import step_seconds

    protocol, dev = prepared.protocol, torch.device(settings.device)
    cost = {}
    old = torch.get_num_threads()
    torch.set_num_threads(settings.threads)  # as execute runs each job
    set_num_threads(1)
    try:
        for job in jobs:
            shape = (job.width, job.depth)
            if shape not in cost:
                spec = dataclasses.replace(prepared.spec, d_model=job.width, n_layers=job.depth)
                cfg = protocol.train_config(lr=resolve_lr(job, factory, spec, protocol), seed=0, steps=job.steps,
                                            amp=dev.type == "cuda", weight_decay=job.weight_decay)
                grid = "".join(f" {k} {v}" for k, v in (("width", job.width), ("depth", job.depth)) if v is not None)
                notify(f"timing {member_name(job.protocol, job.task, registry.get(job.task).family)}{grid}: "
                       f"up to {timing_steps} training steps after a warm-up step, batch {prepared.batch_size}, "
                       f"on {settings.device}")
                step_s, eval_s = step_seconds(lambda: build(factory, spec), cfg, prepared.sources[0],
                                              prepared.sources[1], device=settings.device, steps=timing_steps)
                evaluations = cfg.steps // cfg.eval_every + (cfg.steps % cfg.eval_every != 0) + 1  # + the test
                cost[shape] = (cfg.steps * step_s + evaluations * cfg.eval_batches * eval_s, step_s)
            timed.append((job, *cost[shape]))
    finally:
        torch.set_num_threads(old)


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
    planned, _, _ = plan(model, suite, settings, out, notify, on_member=lambda prepared, factory, jobs: _time_member(
        prepared, factory, jobs, settings, timing_steps, notify, timed))
    seconds = {run_key(job.to_dict()): (s, per) for job, s, per in timed}
    todo = []
    for job, run_dir in planned:
        try:
            done = _finished(job, run_dir, lambda line: None, "refuse") is not None
        except LongsynthError:  # an edited run: evaluate would train it again
            done = False
        if not done:
            todo.append((job, run_dir))
    finished = len(planned) - len(todo)
    if finished:
        notify(f"{finished} of {len(planned)} runs already finished in {out}; the estimate is for the other "
               f"{len(todo)}")
    if not todo:
        return DryRun(None, [], None, f"all {len(planned)} run(s) already finished in {out}; nothing to train",
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
    skipped = " (tested lengths beyond training's not counted)" if any(
        resolve(job.protocol, job.scale, task=job.task).test_sets for job, _ in todo) else ""
    text = (f"estimate: about {duration(wall)} on {settings.device}, {how}; training steps, evaluations and "
            f"the test{skipped}, from up to {timing_steps} timed steps per task and grid point (a guide, not a "
            f"promise)")
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


class _Remaining:
    """The time the runs not yet finished should take, from the seconds per training step
    of those that finished (runs of one sweep differ in tasks and lengths: a rough guide)."""

    def __init__(self, todo, settings):
        self.steps = {run_key(job.to_dict()): job.steps or resolve(job.protocol, job.scale, task=job.task).steps
                      for job, _ in todo}
        self.parallel = 1 if settings.dask else settings.jobs
        self.seconds = self.done = 0.0

    def after(self, cert):
        self.seconds += cert["wall_time_s"]
        self.done += self.steps.pop(run_key(cert), cert.get("steps") or 0)
        rest = sum(self.steps.values())
        if not rest or not self.done:
            return ""
        eta = self.seconds / self.done * rest / self.parallel
        return f"; about {eta / 60:.0f} min left for the other {len(self.steps)} run(s)" if eta >= 60 else \
            f"; about {eta:.0f} s left for the other {len(self.steps)} run(s)"


def _sendable(factory):
    """A user's factory object as other processes receive it (pickled by reference)."""
    try:
        pickle.dumps(factory)
    except Exception as e:  # pickling a user's object may raise anything
        raise LongsynthError(f"model: the factory cannot be sent to other processes ({e}); "
                             "name it as path/to/file.py:function") from None
    return factory


HEARTBEAT_S = 60.0  # how often a Dask sweep says where it stands while no run finishes


def _as_finished(futures, say, every=HEARTBEAT_S):
    """Dask futures as they finish; while none does for ``every`` seconds, a line saying how many
    runs finished, run and wait (the workers' own progress stays in their logs)."""
    import time

    import distributed

    pending, total, start = set(futures), len(futures), time.monotonic()
    while pending:
        try:
            done, pending = distributed.wait(pending, timeout=every, return_when="FIRST_COMPLETED")
        except distributed.TimeoutError:
            say(f"dask: {total - len(pending)} of {total} runs finished, {len(pending)} queued or running "
                f"({(time.monotonic() - start) / 60:.0f} min)")
            continue
        yield from done


def _run_all(todo, factory, settings, progress):
    """Run (job, run_dir) pairs; yields certificates as they finish. ``factory``: None when
    the model is named (each process loads it by name), else the user's object."""
    if settings.dask:
        from longsynth.store.cluster import connect

        import distributed

        client = connect(settings.dask)
        try:
            futures = [client.submit(execute, job, d, factory, settings.threads, False, settings.edited, pure=False)
                       for job, d in todo]
            with client.as_current():  # wait and as_completed ask for the current client; ours is no default
                for fut in _as_finished(futures, _say):
                    try:
                        yield fut.result()
                    except distributed.KilledWorker as e:
                        raise LongsynthError(f"Dask workers died running {e}; rerun the same command to resume "
                                             "from the runs' checkpoints") from None
        finally:
            client.close()
        return
    if settings.jobs == 1:
        for job, d in todo:
            yield execute(job, d, factory, settings.threads, progress, settings.edited)
        return
    ctx = multiprocessing.get_context("spawn")  # Numba and torch threads are not fork-safe
    # the workers die with this process, as gen's do (longsynth.store.pool): a killed evaluate
    # leaves no run training and writing into a folder it no longer locks
    with SpawnableMain(), concurrent.futures.ProcessPoolExecutor(
            settings.jobs, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        # each process shows its run's progress on stderr (a line every 10 s when it is not a terminal)
        futures = [pool.submit(execute, job, d, factory, settings.threads, progress, settings.edited)
                   for job, d in todo]
        try:
            for fut in concurrent.futures.as_completed(futures):
                yield fut.result()
        except BaseException:
            # a failed run, Ctrl-C or SIGTERM: the queued runs never start and the running ones
            # stop now (their last checkpoints stay), rather than the pool training them all
            # before the error is told
            for fut in futures:
                fut.cancel()
            stop_workers(pool)
            raise


def evaluate(model, suite, *, out, settings=None, progress=True, notify=None):
    """Run ``model`` (a built-in name, ``file.py:function``, ``module:function`` or a factory)
    through ``suite``; returns the Report (also written to ``out``)."""
    settings = settings or Settings()
    notify = notify or (lambda line: None)
    out = Folder.of(safe.check_out_path(out))
    with out.hold(refuse=_refuse_foreign(out.path)):  # one evaluate per folder, for the whole sweep
        return _evaluate(model, suite, out, settings, progress, notify)


def _refuse_foreign(where):
    """The check of an --out folder's entries: empty, or an evaluate report (its files, runs/)."""
    def refuse(names):
        foreign = [n for n in names if not _REPORT_RE.match(n)]
        if foreign:
            raise LongsynthError(f"{where}: folder is not empty and holds no evaluate report ({foreign[0]!r} among "
                                 f"its files); choose another --out")
    return refuse


_REPORT_RE = re.compile(r"^\.?(report\.(json|md|png)|lengths\.png|runs)(\.tmp)?$")


def _evaluate(model, suite, out, settings, progress, notify):
    planned, factory, identity = plan(model, suite, settings, out, notify, progress)
    results, todo = [], []
    for job, run_dir in planned:
        done = _finished(job, run_dir, notify, settings.edited)
        if done is not None:
            results.append(done)
        else:
            todo.append((job, run_dir))
    if results and not todo:
        notify(f"all {len(results)} run(s) already finished in {out}; nothing to train: the report is rebuilt")
    else:
        if results:
            notify(f"{len(results)} of {len(planned)} runs already finished in {out}; running the other {len(todo)}")
        notify(plan_line(todo, settings))
        warning = cpu_warning(todo, settings)
        if warning:
            notify(warning)
    sent = None if isinstance(model, str) else _sendable(factory) if settings.jobs > 1 or settings.dask else factory
    left = _Remaining(todo, settings)
    for i, cert in enumerate(_run_all(todo, sent, settings, progress), 1):
        results.append(cert)
        metric = cert["primary_metric"]
        value = (cert["test"] or {}).get(metric)
        sweep = "".join(f" {name} {cert[key]:g}" for key, name in (("weight_decay", "wd"), ("width", "d"),
                                                                  ("depth", "layers"))
                        if cert.get(key) is not None)
        name = member_name(cert["protocol"], cert["task"], cert["family"])
        result = (diverged_text(cert) if cert.get("diverged") else "no test result" if value is None
                  else f"test {metric} {value:.4f}")
        notify(f"[{i}/{len(todo)}] {name} lr {cert['lr']:g}{sweep} seed {cert['seed']}: {result} "
               f"({cert['wall_time_s']:.0f} s){left.after(cert)}")
    order = {run_key(job.to_dict()): i for i, (job, _) in enumerate(planned)}
    results.sort(key=lambda cert: order.get(run_key(cert), len(order)))
    report = Report(identity=identity, suite=suite, scale=settings.scale, settings=dataclasses.asdict(settings),
                    runs=results)
    report.write(out)
    return report
