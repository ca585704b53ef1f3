"""Learnability certificates: the evaluate harness run once with the task's reference model.

``validate(target, model, scale, ...)`` trains the reference model's preset for the
target's protocol (``protocols/``: ``scale="paper"`` holds the papers' Table 5/6 values,
``scale="tiny"`` the same recipe shrunk to run on a CPU in minutes) and writes
metrics.json, history.json, curves.png and, for Pathfinder-Segmentation, predictions.png
to the report directory (``harness.run``).

Targets: a stored dataset directory (its manifest digest goes into every checkpoint) or an
atomic task name (fresh batches generated on the fly, a pure function of the step).

Data parallel: under ``torchrun --nproc_per_node W`` (WORLD_SIZE > 1) every process joins
one process group (nccl on CUDA, gloo on CPU), reads its share of each batch (the preset's
batch size is the global batch; each rank takes batch/W samples), and rank 0 alone writes
the certificate, which records world_size and the global batch.
"""
from __future__ import annotations

import dataclasses
import gc
import os
import time

import torch
import torch.distributed as dist

from longsynth import registry
from longsynth.errors import LongsynthError
from longsynth.outdir import Folder
from longsynth.models_ref.models.factories import BUILTIN
from longsynth.models_ref.evaluation.harness import Job, run
from longsynth.models_ref.protocols import controls
from longsynth.models_ref.protocols.atomic import LENGTH_OF, OUT_OF_TINY_BUDGET
from longsynth.models_ref.protocols.controls import positive_control
from longsynth.models_ref.protocols.registry import PAPER, TOLERANCE, task_of
from longsynth.models_ref.evaluation.protocol import SCALES
from longsynth.models_ref.reports.records import score_of

MODELS = tuple(BUILTIN)


def check_device(device):
    """One line when the device cannot be used (before anything is written)."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        why = "this PyTorch was built without CUDA" if torch.version.cuda is None else "no GPU is visible"
        raise LongsynthError(f"--device cuda: CUDA is not available ({why}, torch {torch.__version__}); "
                             "use --device cpu")
    if dev.type not in ("cpu", "cuda"):
        raise LongsynthError(f"--device: must be cpu or cuda, got {device!r}")


def join_process_group(device):
    """(device, rank, world, joined): join torchrun's process group when WORLD_SIZE > 1."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if dist.is_available() and dist.is_initialized():
        return device, dist.get_rank(), dist.get_world_size(), False
    if world <= 1:
        return device, 0, 1, False
    if torch.device(device).type == "cuda":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if local >= torch.cuda.device_count():
            raise LongsynthError(f"--device cuda: local rank {local} but {torch.cuda.device_count()} GPUs are visible")
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    dist.init_process_group("nccl" if torch.device(device).type == "cuda" else "gloo")
    return device, dist.get_rank(), dist.get_world_size(), True


def _leave_process_group():
    """Leave torchrun's group together: the DDP wrappers of this run are collected first
    and every rank waits at a barrier, so no rank tears gloo down while a peer still holds
    a connection or a pending work item (seen as "terminate called without an active
    exception", SIGABRT, at exit)."""
    gc.collect()
    try:
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _job(target, model, scale, **train):
    """The harness job of a target: a dataset directory or an atomic task name."""
    if os.path.isdir(target):
        from longsynth.models_ref.evaluation.protocol import protocol_for_dataset
        from longsynth.store import open as open_dataset

        ds = open_dataset(target)
        if ds.task.family not in STORED_FAMILIES:
            raise LongsynthError(_no_stored_target(target, ds.task.name))
        return Job(model=model, protocol=protocol_for_dataset(ds), task=ds.task.name, scale=scale, data=ds.root,
                   **train)
    task = task_of(target) or target
    if task != target and task in controls.VALIDATE:  # a token suite's protocol: mqar-128, mad-recall-v32, ...
        return Job(model=model, protocol=target, task=task, scale=scale, **train)
    t = registry.get(task)
    if t.family == "tokens":
        if t.name not in controls.VALIDATE:
            raise LongsynthError(f"target: {t.name} has no positive control ({controls.NO_CONTROL.get(t.name, '')}); "
                                 "its data rests on the generator's NumPy twin (tests/naive.py)")
        return Job(model=model, protocol=controls.VALIDATE[t.name][0], task=t.name, scale=scale, **train)
    if t.family != "atomic":
        raise LongsynthError(f"target: {t.name} is a {t.family} task; on-the-fly validation covers atomic tasks, "
                             "generate a dataset directory for it")
    return Job(model=model, protocol="atomic", task=t.name, scale=scale, **train)


STORED_FAMILIES = ("atomic", "listops", "pathfinder")  # the tasks validate trains on from a dataset directory


def _no_stored_target(root, task):
    """The line for a dataset whose task validate cannot train on from its folder: which
    targets exist for that task (token tasks train on fresh batches: models_ref/protocols/controls.py)."""
    if task in controls.VALIDATE:
        there = f"its target is the task itself, on fresh batches: `longsynth validate {task}` " \
                f"(protocol {controls.VALIDATE[task][0]})"
    else:
        there = f"{task} has no validation target ({controls.NO_CONTROL.get(task, 'no positive control')})"
    return (f"{root}: a {task} dataset; validate trains from a dataset folder only on atomic, ListOps and Pathfinder "
            f"tasks; {there}")


def default_model(target):
    """The reference model of a target: a token task's positive control (models_ref/protocols/controls.py
    ``VALIDATE``), else DLR."""
    return controls.VALIDATE.get(task_of(target) or target, (None, "dlr"))[1]


def validate(target, model=None, scale="tiny", steps=None, device="cpu", report_dir=None, progress=True,
             batch_size=None, amp=None, compile=False, checkpoint_activations=False,  # noqa: A002
             permute_targets=False, threads=1):
    """Train the preset model on ``target`` and write a certificate; returns the metrics dict.

    ``batch_size``: the global batch (default: the preset's); ``amp``: bf16 autocast
    (default: on for CUDA); ``compile``: torch.compile; ``checkpoint_activations``: recompute
    each block in the backward pass; ``permute_targets``: the negative control, targets
    shuffled across each batch's samples (the certificate must fail); ``threads``: torch
    threads on the CPU (1, as evaluate: the tiny presets run fastest so on a busy machine).
    Under torchrun every rank calls this; rank 0 writes.
    Failures before training (device, too few samples, a model that breaks the contract)
    are one-line LongsynthErrors and leave no report directory behind.
    """
    model = model or default_model(target)
    if model not in MODELS:
        raise LongsynthError(f"model: must be one of {MODELS}, got {model!r}")
    if scale not in SCALES:
        raise LongsynthError(f"scale: must be one of {SCALES}, got {scale!r}")
    if batch_size is not None and batch_size < 1:
        raise LongsynthError(f"--batch-size: must be >= 1, got {batch_size}")
    check_device(device)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise LongsynthError(f"--threads: must be an integer >= 1, got {threads!r}")
    job = _job(target, model, scale, steps=steps, device=device, batch_size=batch_size, amp=amp, compile=compile,
               checkpoint_activations=checkpoint_activations, permute_targets=permute_targets)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # the certificate's folder: a link on the way (DIR/validation) is refused, never followed
    if report_dir is None:
        report_dir = (Folder.of(job.data).sub("validation", f"{model}-{stamp}") if job.data
                      else Folder.of(os.getcwd()).sub("validation", f"{job.task}-{model}-{stamp}"))
    else:
        report_dir = Folder.of(report_dir)
    device, rank, world, joined = join_process_group(device)
    try:
        if world > 1:  # one report directory: rank 0's
            box = [report_dir]
            dist.broadcast_object_list(box, src=0)
            report_dir = box[0]
        out = _with_threads(threads, _certify, dataclasses.replace(job, device=device), report_dir, progress, rank,
                            world)
    except BaseException:
        if joined:  # a failed rank leaves at once: its peers are not at a barrier
            dist.destroy_process_group()
        raise
    if joined:
        _leave_process_group()
    return out


def _certify(job, report_dir, progress, rank, world):
    if rank != 0:  # rank 0 writes; the others train beside it
        out = run(job, report_dir, progress=progress, rank=rank, world=world)
        _control(job, report_dir, progress, rank, world)
        return out
    # held for the whole run (a second validate into it is refused in one line); a failure
    # before any file is written leaves no empty folder behind (checkpoints are kept to resume)
    with report_dir.hold():
        out = run(job, report_dir, progress=progress, rank=rank, world=world)
        control = _control(job, report_dir, progress, rank, world)
        out["positive_control"] = control
        out["certificate"] = token_certificate(out) if out["family"] == "tokens" else certificate(out, control)
        report_dir.write_json("metrics.json", out, indent=2)
    out["report_dir"] = report_dir.path
    return out


def _with_threads(threads, fn, *args):
    """``fn(*args)`` with ``threads`` torch threads and Numba on one (restored after)."""
    from numba import get_num_threads, set_num_threads

    old, old_numba = torch.get_num_threads(), get_num_threads()
    torch.set_num_threads(threads)
    set_num_threads(1)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(old)
        set_num_threads(old_numba)


def _control(job, report_dir, progress, rank, world):
    """Train the positive control where the reference model is expected to fail (atomic
    tasks; controls.positive_control) in report_dir/control-MODEL; its summary, or None."""
    if (job.protocol, job.scale) not in LENGTH_OF:
        return None
    found = positive_control(job.protocol, job.scale, job.task, job.model)
    if found is None:
        return None
    model, figure, at = found
    if model is None:
        why = (OUT_OF_TINY_BUDGET[job.task] if job.scale == "tiny" and job.task in OUT_OF_TINY_BUDGET
               else f"no model of the paper learns {job.task} (best R^2 {figure:.2f} at {at})")
        return {"model": None, "paper_best": figure, "figures_of": at,
                "note": f"{why}; this certificate cannot fail by training, and rests on the generator's NumPy "
                        "twin (tests/naive.py, compared in tests/test_atomic.py)"}
    cjob = dataclasses.replace(job, model=model, protocol=at)
    cdir = report_dir.sub(f"control-{model}")
    res = run(cjob, cdir, progress=progress, rank=rank, world=world)
    test = (res["test"] or {}).get("r2")
    need = figure - TOLERANCE
    return {"model": model, "paper": figure, "figures_of": at, "threshold": need, "test": test,
            "learned": test is not None and test >= need, "report_dir": cdir.path}


def certificate(out, control):
    """The certificate's verdict: the reference model reproduces its paper figure, and,
    where it is expected to fail, the positive control learns (so broken data fails it)."""
    reasons = []
    verdict = out.get("verdict")
    if verdict is not None and not verdict["consistent"]:
        reasons.append(f"{out['model']} {verdict['split']} {verdict['metric']} {verdict['value']:.3f} is not within "
                       f"{TOLERANCE} of the paper's {verdict['paper']:.2f}")
    if control is not None and control.get("model") is not None and not control["learned"]:
        reached = "no test result" if control["test"] is None else f"R^2 {control['test']:.3f}"  # it diverged
        reasons.append(f"the positive control {control['model']} reached {reached}, below "
                       f"{control['threshold']:.2f} (the paper's {control['paper']:.2f} less {TOLERANCE})")
    can_fail = verdict is not None and (control is None or control.get("model") is not None)
    return {"passed": not reasons if verdict is not None else None, "reasons": reasons, "can_fail": can_fail}


def token_certificate(out):
    """A token task's verdict (models_ref/protocols/controls.py): the positive control's test accuracy reaches
    its threshold (0.9 at tiny scale; its paper figure less the tolerance at paper scale)."""
    need = control_threshold(out["protocol"], out["scale"], out["model"])
    test = (score_of(out) or {}).get("accuracy")
    if need is None or test is None:
        return {"passed": None, "reasons": [], "can_fail": False, "threshold": need}
    reasons = [] if test >= need else [f"{out['model']} test accuracy {test:.3f} is below {need:.2f}"]
    return {"passed": not reasons, "reasons": reasons, "can_fail": True, "threshold": need}


def control_threshold(protocol, scale, model):
    """The test accuracy the positive control ``model`` must reach on a token ``protocol``: 0.9
    at tiny scale (controls.CONTROL_TINY), its paper figure less the tolerance at paper scale
    (None without a figure)."""
    if scale == "tiny":
        return controls.CONTROL_TINY
    figure = PAPER.get(protocol, {}).get(model, {}).get("accuracy")
    return None if figure is None else figure - TOLERANCE
