"""``gen TASK``: the per-task command factory, its shared options, the ``--dry-run`` plan and
the canonical command line recorded in the manifest."""
import dataclasses
import json
import os
import shlex
import time

import click

from longsynth import store
from longsynth.cli.common import TaskGroup, friendly, shown, task_options, task_params
from longsynth.cli.signals import _SIGNALLED, Watched
from longsynth.errors import LongsynthError
from longsynth.progress import count


def _make_gen(task):
    @friendly
    def run(out, num_samples, splits, seed, workers, shard_size, compression, overwrite, dask, dry_run,
            authors_stream, **values):
        params = task_params(task, values)
        if authors_stream and task.authors is None:
            raise click.BadParameter(f"{task.name} has no authors' stream", param_hint="--authors-stream")
        if splits is not None and num_samples is not None:
            raise click.ClickException("give --num-samples or --splits, not both")
        if dry_run:
            counts = store.parse_splits(splits) if splits is not None else None
            click.echo(_plan_text(store.dry_run(out, task.name, params, seed=seed, splits=counts,
                                                num_samples=num_samples, shard_size=shard_size,
                                                compression=compression), compression))
            return
        if dask is not None and workers is not None:
            raise click.ClickException("give --workers or --dask, not both (the Dask workers write the shards)")
        counts = store.parse_splits(splits) if splits is not None else None
        command = canonical_command(task, params, out, num_samples, splits, seed, shard_size, compression,
                                    authors_stream)
        client = store.connect(dask) if dask is not None else None
        bar = Watched(f"gen {task.name}")
        t0 = time.perf_counter()
        try:
            m = store.generate(out, task.name, params, seed=seed, splits=counts, num_samples=num_samples,
                               shard_size=shard_size, compression=compression, workers=workers,
                               overwrite=overwrite, command=command, progress=bar,
                               notify=lambda line: click.echo(shown(line), err=True), client=client,
                               authors_stream=authors_stream)
            if _SIGNALLED:  # the interrupt was swallowed and no progress report came after it
                raise KeyboardInterrupt
        except (KeyboardInterrupt, RuntimeError) as e:  # Ctrl-C, SIGTERM (or a pool lock it broke)
            if isinstance(e, RuntimeError) and not isinstance(e.__context__, KeyboardInterrupt):
                raise
            bar.close()
            click.echo(shown(_interrupted(out, command)), err=True)
            raise SystemExit(130) from None
        finally:
            bar.close()
            if client is not None:
                client.close()
        dt = time.perf_counter() - t0
        n = sum(m["counts"].values())
        size = sum(r["bytes"] for s in m["splits"].values() for r in s["shards"])
        shards = sum(len(s["shards"]) for s in m["splits"].values())
        counts_text = ", ".join(f"{s} {count(c)}" for s, c in m["counts"].items())
        click.echo(f"{task.name}: {count(n)} samples ({counts_text}) in {count(shards)} shards, {store.human(size)}, "
                   f"{dt:.1f} s -> {shown(os.path.abspath(out))}")
        if "audit" in m:
            click.echo(f"audit: {json.dumps(m['audit'])}")

    params = task_options(task) + gen_options(task)
    return click.Command(task.name, callback=run, params=params, help=f"Generate {task.name}: {task.summary}.",
                         short_help=task.summary)


def _plan_text(p, compression):
    """``gen --dry-run``'s plan, one line per split."""
    params = shown(", ".join(f"{k}={v}" for k, v in dataclasses.asdict(p.config).items()))
    lines = [f"{p.task.name} ({params}), seed {p.seed}: {count(p.total)} samples in "
             f"{count(sum(p.shards.values()))} shards of up to {count(p.shard_size)}"]
    lines += [f"  {s:5s} {count(c):>11s} samples  {count(p.shards[s]):>6s} shards" for s, c in p.splits.items()]
    kind = "before compression" if compression != "none" else "on disk"
    fits = "fits" if p.bytes <= p.free else "does NOT fit"
    lines.append(f"about {store.human(p.bytes)} {kind}; {store.human(p.free)} free at {shown(p.root)}: {fits}")
    if p.empty:
        lines.append(f"{' and '.join(p.empty)} get 0 samples (2% of {count(p.total)} rounds down); give --splits "
                     "to choose the counts")
    lines.append("nothing written (--dry-run)")
    return "\n".join(lines)


def _interrupted(out, command):
    """The line after Ctrl-C: what is kept and how to resume."""
    try:
        written, total = store.progress_of(store.read_manifest(out))
        kept = f"{count(written)} of {count(total)} samples kept"
    except (LongsynthError, OSError):
        kept = "nothing kept"
    return f"interrupted: {kept}; rerun the same command to resume: {command}"


def gen_options(task=None):
    """The options every ``gen TASK`` shares (``task``: None for the group's help)."""
    n_help = (f"total samples, split {'/'.join(map(str, task.split_percent))} [default: {task.default_num_samples}]"
              if task is not None else "total samples, split by the task's train/val/test shares [default: the "
                                       "task's, see longsynth list]")
    return [

        click.Option(["--out", "-o"], required=True, type=click.Path(file_okay=False),
                     help="dataset directory to write"),
        click.Option(["--num-samples", "-n"], type=int, default=None, help=n_help),
        click.Option(["--splits"], default=None, help="explicit counts, e.g. train=960,val=20,test=20"),
        click.Option(["--seed"], type=int, default=0, show_default=True, help="root seed (0 <= seed < 2**63)"),
        click.Option(["--workers", "-j"], type=int, default=None,
                     help="worker processes [default: all cores; a dataset this process writes in under a second: "
                          "this process]"),
        click.Option(["--shard-size"], type=int, default=None,
                     help="samples per shard [default: about 128 MB per shard]"),
        click.Option(["--compression"], type=click.Choice(store.COMPRESSIONS), default="none", show_default=True,
                     help="HDF5 compression filter"),
        click.Option(["--overwrite"], is_flag=True, help="replace a different dataset already in --out"),
        click.Option(["--dry-run"], is_flag=True,
                     help="print the plan (splits, shards, size on disk, free space) and write nothing"),
        click.Option(["--authors-stream"], is_flag=True,
                     help="write the authors' own data for this seed (token tasks that have one; sequential, "
                          "one process) instead of longsynth's per-sample law; where the authors' pipeline draws "
                          "every split from one generator (MAD), the splits continue it: train, val, test"),
        click.Option(["--dask"], metavar="ADDRESS", default=None,
                     help="write the shards on a Dask cluster: scheduler address (tcp://host:8786) or scheduler "
                          "file; --out must be shared with its workers (needs longsynth[dask])"),
    ]


class GenGroup(TaskGroup):
    """``gen``: its help lists the options every task shares after the tasks."""

    def format_epilog(self, ctx, formatter):
        with formatter.section("Options of every task (longsynth gen TASK --help adds the task's parameters)"):
            formatter.write_dl([o.get_help_record(ctx) for o in gen_options()])
        super().format_epilog(ctx, formatter)


def canonical_command(task, params, out, num_samples, splits, seed, shard_size, compression, authors_stream=False):
    """The gen command line that reproduces this dataset (workers omitted: they change nothing)."""
    parts = ["longsynth", "gen", task.name]
    for k, v in params.items():
        flag = k.replace("_", "-")
        parts += [f"--{flag}", str(v)] if not isinstance(v, bool) else [f"--{'' if v else 'no-'}{flag}"]
    if num_samples is not None:
        parts += ["--num-samples", str(num_samples)]
    if splits is not None:
        parts += ["--splits", splits]
    parts += ["--seed", str(seed)]
    if shard_size is not None:
        parts += ["--shard-size", str(shard_size)]
    if compression != "none":
        parts += ["--compression", compression]
    if authors_stream:
        parts += ["--authors-stream"]
    parts += ["--out", out]
    return " ".join(shlex.quote(p) for p in parts)


gen = GenGroup("gen", make=_make_gen, help="Generate a dataset: longsynth gen TASK --out DIR [options].")
