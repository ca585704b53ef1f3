"""The plan of an evaluate sweep: its options (``Settings``, each within its bounds), the suite's
members, the datasets they train on (the cache), one job per (task, learning rate, weight decay,
width, depth, seed) with its run folder (named by a hash of its config), the model checked on
every member before anything trains, and the plan in words (``plan_line``, ``cpu_warning``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
import os

import torch

from longsynth import registry
from longsynth.errors import LongsynthError
from longsynth.escape import visible
from longsynth.outdir import Folder
from longsynth.models_ref.evaluation import limits
from longsynth.models_ref.models import factories
from longsynth.models_ref.evaluation.finished import EDITED
from longsynth.models_ref.evaluation.harness import Job, prepare
from longsynth.models_ref.evaluation.checks import build, check_model
from longsynth.models_ref.evaluation.protocol import SCALES, resolve
from longsynth.models_ref.protocols.registry import (ATOMIC_TASKS, PROTOCOLS, SUITES, default_lrs, protocol_of,
                                                     suite_members, task_of)
from longsynth.models_ref.reports.records import member_name


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
    if not members and scale is not None:  # a group none of whose members has this scale
        raise LongsynthError(f"--scale: {suite} has no {scale} scale (the laptop scale is for the recall, "
                             f"state-tracking, selective-copying, induction-heads and Chomsky suites)")
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


def _config_hash(job, identity, protocol):
    blob = json.dumps({"job": job.to_dict(), "identity": identity, "protocol": dataclasses.asdict(protocol)},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:10]


def _check_settings(s):
    """Each option within its bounds (models_ref/evaluation/limits.py), before anything is planned."""
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


def _count_runs(members, settings, model=None):
    """The runs a sweep plans, counted from its protocols before any is planned; LongsynthError
    past limits.MAX_RUNS."""
    total = 0
    for proto_name, task in members:
        protocol = resolve(proto_name, settings.scale, task=task)
        per_lr = (len(protocol.weight_decays or (None,)) * len(protocol.widths or (None,))
                  * len(protocol.depths or (None,)) * len(options_of(protocol, model)) * settings.seeds)
        total += len(settings.lrs or protocol.lrs or (None,)) * per_lr
    if total > limits.MAX_RUNS:
        raise LongsynthError(f"the sweep plans {total:,} runs ({len(members)} task(s) x learning rates x seeds); "
                             f"at most {limits.MAX_RUNS:,} in one evaluate: fewer --seeds or --lr, or split the suite")
    return total


def _factory(model):
    """(factory, identity, text) of a model name or a Python callable."""
    if isinstance(model, str):
        factory, identity = factories.load(model)
        return factory, identity, factories.canonical(model)
    if not callable(model):
        raise LongsynthError(f"model: must be a name or a callable factory, got {type(model).__name__}")
    text = f"{getattr(model, '__module__', '?')}:{getattr(model, '__qualname__', type(model).__name__)}"
    return model, {"model": text, "sha256": None}, text


def options_of(protocol, model):
    """The points of a protocol's grid of the built-in ``model``'s options ((None,): its preset alone)."""
    grid = (protocol.model_options or {}).get(model) if isinstance(model, str) else None
    return tuple(grid) if grid else (None,)


def _options_text(options):
    """A grid point in a run folder's name: "computation_steps_mult1-n_tapes4-"."""
    return "".join(f"{k}{v}-" for k, v in sorted(options.items())) if options else ""


def sweep(probe, protocol, settings, lrs):
    """(job, its run folder's name prefix) of each point of one suite member's sweep: learning
    rates ``lrs`` x the protocol's weight decays, widths, depths and options of the built-in x
    ``settings.seeds``."""
    every = min(protocol.eval_every, settings.steps or protocol.steps)
    grid = itertools.product(lrs, protocol.weight_decays or (None,), protocol.widths or (None,),
                             protocol.depths or (None,), options_of(protocol, probe.model), range(settings.seeds))
    for lr, wd, width, depth, options, seed in grid:
        job = dataclasses.replace(probe, lr=float(lr), seed=seed, steps=settings.steps, checkpoint_every=every,
                                  weight_decay=wd, width=width, depth=depth, options=options)
        prefix = (f"lr{lr:g}-" + ("" if wd is None else f"wd{wd:g}-") + ("" if width is None else f"d{width}-")
                  + ("" if depth is None else f"n{depth}-") + _options_text(options) + f"seed{seed}-")
        yield job, prefix


def plan(model, suite, settings, out, notify, progress=False, on_member=None):
    """(jobs with their run directories, factory, identity): every task checked before training.
    ``on_member(prepared, factory, jobs)``: called for each suite member once its model passed
    the checks, with its prepared data (harness.prepare) and its jobs; with it (the dry run), the
    data is prepared at a batch of 2, the checks' own, and fresh (no fixed training set made)."""
    _check_settings(settings)
    factory, identity, text = _factory(model)
    planned, changed, unstored, checked = [], 0, [], set()
    members = suite_tasks(suite, settings.scale)
    _count_runs(members, settings, text)
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
        dry = on_member is not None
        prepared = prepare(dataclasses.replace(probe, batch_size=2) if dry else probe, fresh=dry)
        x = prepared.sources[0](0)[0][:2]
        key = _check_key(factory, prepared.spec, protocol, x)
        if not (dry and key in checked):  # the dry run checks once per distinct spec (each check a forward
            checked.add(key)             # or three at the protocol's length: seconds at the papers')
            torch.manual_seed(0)
            dev = torch.device(settings.device)  # on the run's device: a paper-scale model is slow on a CPU
            check_model(build(factory, prepared.spec), factories.checked_spec(factory, prepared.spec), x.to(dev),
                        whole_row=protocol.whole_row, notify=notify)
        _check_grid(factory, prepared.spec, protocol, text, notify)
        built_in = isinstance(factory, factories.Reference)
        lrs = settings.lrs or protocol.lrs or default_lrs(proto_name, settings.scale,
                                                          factory.name if built_in else None, task, built_in)
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


def _check_key(factory, spec, protocol, x):
    """What a check's outcome depends on, for the dry run: a built-in's by the model it builds and its
    spec apart from the task's and protocol's names and the lengths (its causality and shapes at every
    length are the tests' concern, tests/test_models_layers.py), so that Table 2's rows to 2^20 are
    checked once, at 256; a user's model by everything it is given. evaluate checks every member."""
    if isinstance(factory, factories.Reference):
        config = repr(factory.config(spec))
        spec = dataclasses.replace(spec, task="", protocol="", seq_len=None, target_len=None, max_seq_len=None)
        return config, spec, protocol.whole_row, tuple(x.shape[2:]), x.dtype
    return spec, protocol.whole_row, tuple(x.shape), x.dtype


def parameters(module):
    """The number of a module's parameters (each tensor counted once)."""
    return sum(p.numel() for p in module.parameters())


def _check_grid(factory, spec, protocol, text, notify):
    """A warning where the model ignores the protocol's width (``spec.d_model``) or depth grid (``spec.n_layers``):
    the same number of parameters at every point, so the grid's rows would be one model under several names."""
    for field, points, name in (("d_model", protocol.widths, "width"), ("n_layers", protocol.depths, "depth")):
        if not points or len(points) < 2:
            continue
        counts = {parameters(build(factory, dataclasses.replace(spec, **{field: v}))) for v in points}
        if len(counts) == 1:
            notify(f"warning: {text} has {counts.pop():,} parameters at every {name} of {protocol.name}'s grid "
                   f"({', '.join(map(str, points))}): it ignores spec.{field}, so those rows are one model; size it "
                   f"by spec.{field} (docs/evaluate.md, \"The model contract\")")


def run_key(d):
    """What tells the runs of a sweep apart: (protocol, task, lr, weight decay, width, depth, options, seed)
    of a Job's dict or a certificate."""
    options = d.get("options")
    return (*(d.get(k) for k in ("protocol", "task", "lr", "weight_decay", "width", "depth")),
            tuple(sorted(options.items())) if isinstance(options, dict) else None, d.get("seed"))


def _plural(n, word):
    return f"{n:,} {word if n == 1 else word + 's'}"


def members_text(keys):
    """The suite members of (protocol, task) pairs in words: "2 tasks", "4 cells of mqar
    (mqar-64, ...)" where one task runs under several protocols (the field's grids,
    models_ref/protocols/), "66 cells of 6 tasks" for several of both."""
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
    how = (f"as Dask tasks on {visible(settings.dask)}" if settings.dask else
           f"{settings.jobs} at a time" if settings.jobs > 1 else "one after another")
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
