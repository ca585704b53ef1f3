"""``longsynth evaluate``: any model factory through the papers' protocols, in sweeps.

``evaluate(model, suite, ...)`` plans one run per (task, learning rate, seed), checks the
model on every task before anything trains, runs the jobs (in this process, in ``jobs``
processes, or as Dask tasks), and writes a report (``report.Report``) to ``out``:
report.json, report.md and report.png, with every run's certificate under
``out/runs/TASK/lr..-seed..-HASH/``. docs/evaluate.md is the user's guide.

``out`` is also the cache of runs: a run whose certificate exists under the same config
hash is not run again, an unfinished one resumes from its last checkpoint, and a run
whose config changed gets a new directory (said in one line).

Here the command and its runner (``execute``: one run; ``_run_all``: in this process, a process
pool or Dask); plan.py makes the plan, finished.py tells the finished runs from
those to redo, dry_run.py is ``--dry-run``.
"""
from __future__ import annotations

import concurrent.futures
from concurrent.futures.process import BrokenProcessPool
import dataclasses
import multiprocessing
import os
import pickle
import re
import sys

import matplotlib  # noqa: F401 - report.png needs it: missing, evaluate stops before training
import torch

from longsynth import safe
from longsynth.errors import LongsynthError
from longsynth.escape import visible
from longsynth.outdir import Folder
from longsynth.store.pool import SpawnableMain, die_with_parent, stop_workers
from longsynth.models_ref.evaluation.dry_run import dry_run  # noqa: F401 - evaluate --dry-run, importable from here
from longsynth.models_ref.evaluation.finished import _drop_checkpoints, _finished
from longsynth.models_ref.evaluation.plan import Settings, cpu_warning, plan, plan_line, run_key
from longsynth.models_ref.evaluation.harness import run
from longsynth.models_ref.evaluation.protocol import resolve
from longsynth.models_ref.reports.report import Report
from longsynth.models_ref.reports.records import diverged_text, member_name, score_of
from longsynth.models_ref.training.checkpoints import CheckpointError


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
        value = (score_of(cert) or {}).get(metric)
        sweep = "".join(f" {name} {cert[key]:g}" for key, name in (("weight_decay", "wd"), ("width", "d"),
                                                                  ("depth", "layers"))
                        if cert.get(key) is not None)
        name = member_name(cert["protocol"], cert["task"], cert["family"])
        result = (diverged_text(cert) if cert.get("diverged") else "no test result" if value is None
                  else f"test {metric} {value:.4f}")
        notify(f"[{i}/{len(todo)}] {name} lr {cert['lr']:g}{sweep} seed {cert['seed']}: {result} "
               f"({cert['wall_time_s']:.0f} s){left.after(cert)}")
        ran = (cert.get("model_identity") or {}).get("sha256")
        if ran != identity.get("sha256"):
            notify(f"warning: {name} lr {cert['lr']:g} seed {cert['seed']} trained {identity['model']} as it was "
                   f"at sha256 {str(ran)[:8]}, not {str(identity.get('sha256'))[:8]} as planned: the file was "
                   f"edited while evaluate ran; its certificate says which it trained, and a rerun trains the "
                   f"runs of the file as it is then")
    order = {run_key(job.to_dict()): i for i, (job, _) in enumerate(planned)}
    results.sort(key=lambda cert: order.get(run_key(cert), len(order)))
    report = Report(identity=identity, suite=suite, scale=settings.scale, settings=dataclasses.asdict(settings),
                    runs=results)
    report.write(out)
    return report


def _say(line):
    """A line on stderr, from this process or a worker's (whose stderr is the parent's): one line, its
    escapes spelled out (it may name a model file or a run folder)."""
    print(visible(line), file=sys.stderr, flush=True)


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
    _quiet_resource_tracker()
    # the workers die with this process, as gen's do (longsynth.store.pool): a killed evaluate
    # leaves no run training and writing into a folder it no longer locks
    with SpawnableMain(), concurrent.futures.ProcessPoolExecutor(
            settings.jobs, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        # each process shows its run's progress on stderr (a line every 10 s when it is not a terminal)
        futures = [pool.submit(execute, job, d, factory, settings.threads, progress, settings.edited)
                   for job, d in todo]
        try:
            for fut in concurrent.futures.as_completed(futures):
                try:
                    yield fut.result()
                except BrokenProcessPool:
                    raise LongsynthError(f"a worker process of --jobs {settings.jobs} died (killed, or out of "
                                         "memory); the finished runs are kept: rerun the same command to resume "
                                         "the others from their checkpoints") from None
        except BaseException:
            # a failed run, Ctrl-C or SIGTERM: the queued runs never start and the running ones
            # stop now (their last checkpoints stay), rather than the pool training them all
            # before the error is told
            for fut in futures:
                fut.cancel()
            stop_workers(pool)
            raise


TRACKER_WARNING = "ignore::UserWarning:multiprocessing.resource_tracker"


def _quiet_resource_tracker():
    """A worker killed mid-run leaves its pool's semaphores behind, and multiprocessing's resource tracker (a
    process of its own, started with this interpreter's -W options) frees them at exit with a warning of its
    path and source line after our one line saying the worker died: it is told to free them quietly."""
    if TRACKER_WARNING not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_WARNING)
