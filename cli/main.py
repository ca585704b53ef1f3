"""The ``longsynth`` command: thin click commands that parse, then call the library.

Every task's parameters become options of ``gen TASK`` and ``show TASK`` (field ``L`` ->
``--L``, ``min_length`` -> ``--min-length``). Failures end with one ``Error:`` line and a
non-zero exit; set LONGSYNTH_DEBUG=1 to see the traceback instead.
"""
import dataclasses
import functools
import json
import os
import shlex
import sys
import time

import click

from longsynth import api, exports, registry, store
from longsynth.progress import Bar, Samples, count
from longsynth.errors import LongsynthError
from longsynth.models_ref import limits  # evaluate and validate bound their options (no torch imported)
from longsynth.task import field_kind

TYPES = {"int": int, "float": float, "bool": bool, "str": str}
MAX_SHOW = 64  # samples per `show` figure


def shown(text):
    """Text from a file (a manifest's command) as it may be printed: control characters
    and escapes shown as escapes (``\\x1b``), never sent to the terminal; at most 2,000
    characters."""
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)[:2000])
    return out + ("..." if len(str(text)) > 2000 else "")


def friendly(fn):
    """Turn the project's own errors (and the OS's: disk full, permissions) into one-line
    click errors. Anything else is a bug and keeps its traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if os.environ.get("LONGSYNTH_DEBUG"):
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except LongsynthError as e:  # it may quote a folder's text (a name, an HDF5 message): escaped
            raise click.ClickException(shown(e)) from None
        except BrokenPipeError:  # output piped into head & co.
            return None
        except RuntimeError as e:
            if isinstance(e.__context__, KeyboardInterrupt):  # a lock the interrupt broke: it is the interrupt
                raise KeyboardInterrupt from None
            raise
        except OSError as e:
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            raise click.ClickException(shown(f"{where}{e.strerror or e}")) from None

    return wrapper


# ---------------------------------------------------------------- task options


def task_options(task):
    """click Options for every config field of ``task``; unset options are not passed on."""
    options = []
    for f in dataclasses.fields(task.config):
        kind = field_kind(f)
        base = TYPES[kind.split(" ")[0]]
        m = f.metadata
        default = "from the preset" if f.default is None else f"default: {f.default}"
        text = f"{m.get('help', f.name)} [{default}]"
        flag = "--" + f.name.replace("_", "-")
        if base is bool:
            decls = [f"{flag}/--no-{f.name.replace('_', '-')}", f.name]
            options.append(click.Option(decls, default=None, help=text))
            continue
        ptype = click.Choice([str(c) for c in m["choices"]]) if m.get("choices") else base
        options.append(click.Option([flag, f.name], type=ptype, default=None, help=text))
    return options


def task_params(task, values):
    """The options the user gave, converted to the config's field types."""
    params = {}
    for f in dataclasses.fields(task.config):
        v = values.pop(f.name, None)
        if v is not None:
            params[f.name] = TYPES[field_kind(f).split(" ")[0]](v)
    return params


class TaskGroup(click.Group):
    """A group with one subcommand per task, built on demand from ``make(task)``."""

    def __init__(self, *args, make, **kwargs):
        super().__init__(*args, **kwargs)
        self.make = make

    def list_commands(self, ctx):
        return api.tasks()

    def get_command(self, ctx, name):
        tasks = registry.all_tasks()
        return self.make(tasks[name]) if name in tasks else None

    def resolve_command(self, ctx, args):
        if args and args[0] not in registry.all_tasks() and not args[0].startswith("-"):
            try:
                registry.get(args[0])
            except LongsynthError as e:  # the registry's line, with its nearest name
                raise click.UsageError(str(e).removeprefix("task: ")) from None
        return super().resolve_command(ctx, args)


# ---------------------------------------------------------------- commands


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="longsynth")
def cli():
    """Generate, load and validate synthetic long-range benchmarks."""


@cli.command("list")
def list_tasks():
    """List the tasks, one line each: family, the default number of samples and its size
    on disk, a summary and the default parameters."""
    for name, t in registry.all_tasks().items():
        resolved = t.make_config()
        params = " ".join(f"{f.name}={getattr(resolved, f.name)}{'*' if f.default is None else ''}"
                          for f in dataclasses.fields(t.config))
        n = t.default_num_samples
        ragged = any(k.ragged for k in t.keys(resolved).values())
        size = store.estimate_bytes(t, resolved, store.default_splits(n, t.split_percent), 0,
                                    store.default_shard_size(t, resolved), draw=False)
        size = ("<= " if ragged else "") + store.human(size)
        click.echo(f"{name:18s} {t.family:10s} {count(n):>7s} samples {size:>11s}  {t.summary} ({params})")
    click.echo("\nsamples: gen's default --num-samples (split train/val/test by the task's shares), with its size "
               "on disk uncompressed (<=: at most, for variable-length samples; gen --dry-run measures it).\n"
               "*: a value the task's preset derives from other parameters (pathfinder-seg "
               "picks its stroke widths, distractors and margins from --size); give the option to set it.")


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
                               notify=lambda line: click.echo(line, err=True), client=client,
                               authors_stream=authors_stream)
            if _SIGNALLED:  # the interrupt was swallowed and no progress report came after it
                raise KeyboardInterrupt
        except (KeyboardInterrupt, RuntimeError) as e:  # Ctrl-C, SIGTERM (or a pool lock it broke)
            if isinstance(e, RuntimeError) and not isinstance(e.__context__, KeyboardInterrupt):
                raise
            bar.close()
            click.echo(_interrupted(out, command), err=True)
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
                   f"{dt:.1f} s -> {os.path.abspath(out)}")
        if "audit" in m:
            click.echo(f"audit: {json.dumps(m['audit'])}")

    params = task_options(task) + gen_options(task)
    return click.Command(task.name, callback=run, params=params, help=f"Generate {task.name}: {task.summary}.",
                         short_help=task.summary)


def _plan_text(p, compression):
    """``gen --dry-run``'s plan, one line per split."""
    params = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(p.config).items())
    lines = [f"{p.task.name} ({params}), seed {p.seed}: {count(p.total)} samples in "
             f"{count(sum(p.shards.values()))} shards of up to {count(p.shard_size)}"]
    lines += [f"  {s:5s} {count(c):>11s} samples  {count(p.shards[s]):>6s} shards" for s, c in p.splits.items()]
    kind = "before compression" if compression != "none" else "on disk"
    fits = "fits" if p.bytes <= p.free else "does NOT fit"
    lines.append(f"about {store.human(p.bytes)} {kind}; {store.human(p.free)} free at {p.root}: {fits}")
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
        click.Option(["--workers", "-j"], type=int, default=None, help="worker processes [default: all cores]"),
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


cli.add_command(GenGroup("gen", make=_make_gen, help="Generate a dataset: longsynth gen TASK --out DIR [options]."))


@cli.command()
@click.argument("root", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--samples", type=click.IntRange(1), default=None,
              help="statistics over the first N samples of each split [default: every sample]")
@friendly
def info(root, as_json, samples):
    """Configuration, counts, sizes, keys, and per split value statistics, class balance, token
    marginals and (parity, modular arithmetic) sequence lengths of a dataset."""
    with Samples("info") as bar:
        s = store.info(root, samples=samples, progress=None if as_json else bar)
    if as_json:
        click.echo(json.dumps(s, indent=1))
        return
    click.echo(f"{s['task']}  seed {s['seed']}  {'complete' if s['complete'] else 'INCOMPLETE'}  "
               f"compression {s['compression']}  longsynth {shown(s['versions']['longsynth'])}")
    click.echo("params: " + shown(", ".join(f"{k}={v}" for k, v in s["params"].items())))
    if s["command"]:
        click.echo(f"made by (the command recorded in the manifest): {shown(s['command'])}")
    for split, sp in s["splits"].items():
        click.echo(f"  {split:5s} {count(sp['count']):>9s} samples  {count(sp['shards']):>4s} shards  "
                   f"{store.human(sp['bytes']):>9s}  digest {str(sp['digest'])[:16]}")
    if "stats_samples" in s:
        per = ", ".join(f"{k} {count(v)}" for k, v in s["stats_per_split"].items())
        whole = all(v == s["splits"][k]["count"] for k, v in s["stats_per_split"].items())
        click.echo(f"statistics over {'all ' if whole else ''}{count(s['stats_samples'])} samples ({per}):")
    splits = list(s["stats"])
    for k, spec in s["keys"].items():
        shape = ("[n, " if spec["ragged"] else "[") + ", ".join(map(str, spec["shape"])) + "]"
        head = f"  {k:16s} {spec['dtype']:8s} {shape:14s}"
        rows = [(split, s["stats"][split].get(k)) for split in splits]
        rows = [(split, st) for split, st in rows if st] or [(None, None)]
        for i, (split, st) in enumerate(rows):  # a line per split: train's and test's values are not pooled
            stats = (f"  {split:5s} min {st['min']:.4g} max {st['max']:.4g} mean {st['mean']:.4g} std {st['std']:.4g}"
                     if st else "")
            if st and st.get("nonfinite"):
                stats += f"  ({', '.join(f'{count(n)} {what}' for what, n in st['nonfinite'].items() if n)}: left out)"
            click.echo((head if i == 0 else " " * len(head)) + stats)
    if s.get("tokens"):
        first = next(iter(s["tokens"].values()))
        click.echo(f"tokens: vocabulary {first['vocab_size']}; per split: scored positions per sample (targets != "
                   f"-100), distinct ids and the most frequent")
        for split, tk in s["tokens"].items():
            sc = tk["scored_per_sample"]
            click.echo(f"  {split:5s} scored per sample: min {sc['min']} mean {sc['mean']:.2f} max {sc['max']}, "
                       f"{count(sc['total'])} in all")
            for name in ("inputs", "targets"):
                t = tk[name]
                top = "  ".join(f"{i}: {100 * p:.2f}%" for i, p in t["top"])
                out = f", {count(t['outside_vocab'])} outside the vocabulary" if t["outside_vocab"] else ""
                click.echo(f"        {name:7s} {count(t['distinct'])} distinct ids{out}; most frequent: {top}")
    if s.get("lengths"):
        click.echo("sequence lengths n per split (as the authors count them, read from the scored target's "
                   "position: docs/tasks/state-tracking.md):")
        for split, ln in s["lengths"].items():
            click.echo(f"  {split:5s} min {ln['min']} median {ln['median']:g} mean {ln['mean']:.1f} max {ln['max']} "
                       f"({len(ln['counts'])} distinct lengths)")
    if s.get("balance"):
        click.echo("class balance of targets (share of each value):")
        for split, shares in s["balance"].items():
            click.echo(f"  {split:5s} " + "  ".join(f"{v}: {100 * p:.1f}%" for v, p in shares.items()))
    if "validation" in s:
        v = s["validation"]
        click.echo(f"validation: {json.dumps(v.get('final', v.get('metrics', {})))} ({shown(v['path'])})")


@cli.command()
@click.argument("root", type=click.Path())
@click.option("--deep", is_flag=True, help="also regenerate sampled indices and compare bytes")
@click.option("--samples", type=click.IntRange(1), default=16, show_default=True,
              help="indices per split checked by --deep (>= 1)")
@click.option("--authors", "checkout", type=click.Path(file_okay=False), default=None,
              help="also make every split again with the authors' own code from CHECKOUT, a checkout of their "
                   "repository at the commit docs/authors-data.md names, and compare every row (datasets made with "
                   "--authors-stream). This RUNS that checkout's Python code in this process: name one you trust")
@friendly
def verify(root, deep, samples, checkout):
    """Check checksums, structure and digests of a stored dataset; an unfinished one is
    told apart from a damaged one. With --authors, compare it with the authors' own code."""
    m = store.read_manifest(root)
    shards = sum(len(s["shards"]) for s in m["splits"].values())
    with Bar(total=shards, desc="verify", unit="shards") as bar:
        def step(name):
            bar.set_postfix_str(name, refresh=False)
            bar.update(1)

        c = store.check(root, deep=deep, samples=samples, progress=step)
    if c.damage:
        for p in c.damage:
            click.echo(shown(p), err=True)
        raise click.ClickException(f"{root}: damaged: {len(c.damage)} problem(s) found"
                                   + ("" if c.complete else " (and the dataset is incomplete)"))
    if not c.complete:
        made = (f"; the command recorded in the manifest (check it before you run it): {shown(m['command'])}"
                if m.get("command") else "")
        raise click.ClickException(f"{root}: incomplete, not damaged: {count(c.written)} of {count(c.total)} samples "
                                   f"written and intact; the same gen command resumes it{made}")
    click.echo(f"OK: {count(shards)} shards, {count(c.total)} samples"
               + (f", {samples} samples per split regenerated and identical" if deep else ""))
    if checkout is not None:
        _verify_authors(root, checkout)


def _verify_authors(root, checkout):
    """verify --authors: every row against the authors' code (longsynth.crosscheck)."""
    from longsynth import crosscheck

    click.echo(f"running the authors' code from {shown(os.path.abspath(checkout))} ...", err=True)
    r = crosscheck.compare(root, checkout, progress=lambda split: click.echo(f"  {split}: compared", err=True))
    if r.problems:
        for p in r.problems:
            click.echo(shown(p), err=True)
        raise click.ClickException(f"{root}: differs from the authors' code: {len(r.problems)} row(s) shown above"
                                   + (" (the first 10)" if len(r.problems) >= 10 else ""))
    click.echo(f"OK: all {count(r.rows)} rows equal the authors' code's, element for element")


def _make_show(task):
    @friendly
    def run(index, count, seed, split, out, **values):
        params = task_params(task, values)
        if task.show is None:
            raise click.ClickException(f"{task.name} has no preview")
        cfg = task.make_config(**params)
        _check_text_out(task, out)
        samples = [api.sample(task.name, i, seed=seed, split=split, **params) for i in range(index, index + count)]
        _emit(task.show(samples, cfg, out), out)

    params = task_options(task) + _show_options(task.name)
    params += [click.Option(["--seed"], type=int, default=0, show_default=True, help="root seed"),
               click.Option(["--split"], type=click.Choice([*store.SPLITS, "validation"]), default="train",
                            show_default=True, help="split to draw from (validation: val)")]
    return click.Command(task.name, callback=run, params=params, help=f"Preview samples of {task.name}.",
                         short_help=task.summary)


def _show_options(default_name):
    return [click.Option(["--index", "-i"], type=int, default=0, show_default=True, help="first sample index"),
            click.Option(["--count", "-c"], type=click.IntRange(1, MAX_SHOW), default=1, show_default=True,
                         help=f"number of samples (1..{MAX_SHOW}: one figure)"),
            click.Option(["--out", "-o"], type=click.Path(dir_okay=False), default=f"{default_name}.png",
                         show_default=True, help="PNG to write (ListOps: or .txt, the expressions in full; its folder "
                                                 "is made when missing)", callback=_png_out)]


def _png_out(ctx, param, value):
    """show's --out: a .png name (matplotlib would add the suffix to a bare name and write
    another file than the one named) or a .txt one (ListOps writes its expressions as text
    there: docs/tasks/listops.md), its folder made when missing."""
    if value is None:
        return value
    if os.path.splitext(value)[1].lower() not in (".png", ".txt"):
        raise click.BadParameter(f"the figure is a PNG: give a name ending in .png, got {value!r} "
                                 "(ListOps also writes .txt)")
    folder = os.path.dirname(os.path.abspath(value))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise click.BadParameter(f"cannot make its folder {folder} ({e.strerror or e})") from None
    return value


def _check_text_out(task, out, stats=False):
    """A .txt --out is ListOps' text rendering of its expressions; every other figure is a PNG."""
    if str(out).lower().endswith(".txt") and (task.family != "listops" or stats):
        raise click.BadParameter(f"{task.name}: this figure is a PNG; give a name ending in .png, got {out!r}",
                                 param_hint="'--out'")


def _emit(text, out):
    if text:
        click.echo(text)
    if out and os.path.exists(out):
        click.echo(f"wrote {out}")


@friendly
def _show_dir(root, split, index, count, out, stats):
    ds = store.open(root)
    _check_text_out(ds.task, out, stats)
    if stats:
        if ds.task.show_dataset is None:
            raise click.ClickException(f"{ds.task.name} has no dataset figure")
        if ds.task.family == "tokens":  # every split, side by side: it reads them all, with a bar
            with Samples("show --stats") as bar:
                text = _drawn(root, functools.partial(ds.task.show_dataset, progress=bar), ds, split, out)
            _emit(text, out)
            return
        _emit(_drawn(root, ds.task.show_dataset, ds, split, out), out)
        return
    if ds.task.show is None:
        raise click.ClickException(f"{ds.task.name} has no preview")
    sp = ds[split]
    if not 0 <= index < len(sp):
        raise click.ClickException(f"--index: {index} is outside the {len(sp)} samples of {split}")
    samples = [sp[i] for i in range(index, min(index + count, len(sp)))]
    _emit(_drawn(root, ds.task.show, samples, ds.config, out), out)


def _drawn(root, draw, *args):
    """A figure of data read from a folder. Its values passed their checksums, but a folder
    from someone else may hold values outside the task's definition (a label 7 of three
    classes); the drawing code indexes with them, so what it raises is one line."""
    try:
        return draw(*args)
    except (LongsynthError, OSError, KeyboardInterrupt):
        raise
    except Exception as e:  # any failure on such values is the data's
        raise LongsynthError(f"{root}: cannot draw these samples: values outside {os.path.basename(root) or root}'s "
                             f"task definition ({type(e).__name__}: {' '.join(str(e).split())[:160]})") from None


class _ShowDirCommand(click.Command):
    """``show DIR``: its usage line names the directory argument once, as typed."""

    def format_usage(self, ctx, formatter):
        formatter.write_usage(ctx.parent.command_path if ctx.parent else "longsynth show", "DIR [OPTIONS]")


SHOW_DIR = _ShowDirCommand(
    "DIR", callback=_show_dir,
    params=[click.Argument(["root"], type=click.Path(exists=True, file_okay=False))] + _show_options("preview")
    + [click.Option(["--split"], default="train", show_default=True,
                    help="split to read (val; validation is accepted)"),
       click.Option(["--stats"], is_flag=True, help="dataset-level figure instead: ListOps' length histograms of "
                    "--split; token tasks' scored targets, token shares and lengths, every split side by side")],
    help="Preview samples of a stored dataset.")


class ShowGroup(TaskGroup):
    """``show TASK [options]`` for fresh samples, ``show DIR [options]`` for a stored dataset."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in registry.all_tasks() and not args[0].startswith("-"):
            if not os.path.isdir(args[0]):
                raise click.UsageError(f"{args[0]!r} is neither a task ({', '.join(api.tasks())}) "
                                       "nor a dataset directory")
            return "DIR", SHOW_DIR, args
        return super().resolve_command(ctx, args)


cli.add_command(ShowGroup("show", make=_make_show,
                          help="Draw samples: longsynth show TASK [options] | show DIR [options]."))


def _export_help():
    """The export command's help: a line per format (click leaves the lines after \\b unwrapped)."""
    rows = [f"{f.name:15s} {f.summary}" + (f" ({', '.join(f.tasks)})" if f.tasks else "")
            for f in exports.FORMATS.values()]
    return "Write a stored dataset in another project's on-disk layout.\n\n\b\n" + "\n".join(rows)


@cli.command(help=_export_help())
@click.argument("root", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", required=True, help=f"export format: {', '.join(exports.FORMATS)}")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False), help="directory to write")
@click.option("--workers", "-j", type=int, default=None,
              help="writer processes, hf only, at most one per file [default: threads of this process]")
@friendly
def export(root, fmt, out, workers):
    bar = Watched(f"export {fmt}")
    try:
        out = exports.export(root, fmt, out, bar, workers=workers)
    finally:
        bar.close()
    click.echo(f"wrote {fmt} to {out}")


def _validate_help():
    """validate's help: what it does, then each protocol's preset budget (steps x global
    batch) at both scales, read from the preset table (models_ref/presets.py)."""
    from longsynth.models_ref.field import GROUPS
    from longsynth.models_ref.presets import PROTOCOLS

    rows = {}
    for (name, scale), row in PROTOCOLS.items():
        if GROUPS.get(name, name) != name:  # MAD's settings beyond each task's baseline
            continue
        text = f"{count(row['steps'])} x {row['batch_size']}"
        special = {}
        for t, c in row.get("per_task", {}).items():
            if "steps" in c or "batch_size" in c:
                own = count(c.get("steps", row["steps"]))
                own += f" x {c['batch_size']}" if c.get("batch_size", row["batch_size"]) != row["batch_size"] else ""
                special.setdefault(own, []).append(t)
        if special:
            text += " (" + "; ".join(f"{', '.join(ts)}: {n}" for n, ts in special.items()) + ")"
        rows.setdefault(name, {})[scale] = text
    lines = [f"{name:20s} tiny {r.get('tiny', '-'):50s} paper {r.get('paper', '-')}" for name, r in rows.items()]
    return ("Train a reference model on a dataset DIR (or an atomic or token TASK, or a token suite's PROTOCOL, on "
            "the fly) and certify it.\n\n"
            "Exit code: 0 when the certificate passed (or has no verdict), 3 when it FAILED, 1 on an error.\n\n"
            "Data parallel: torchrun --nproc_per_node N --no-python longsynth validate ... (nccl on cuda, gloo on "
            "cpu); rank 0 writes the certificate.\n\nPreset budgets, steps x global batch (--steps and "
            "--batch-size replace them; warmup and evaluations scale with --steps):\n\n\b\n" + "\n".join(lines))


@cli.command(help=_validate_help())
@click.argument("target")
@click.option("--model", default=None,
              help="reference model [default: dlr; for a token task its positive control: attention, s6 or gru, "
                   "docs/evaluate.md]; where DLR is expected to fail an atomic task, the paper's best model trains "
                   "beside it")
@click.option("--scale", type=click.Choice(["tiny", "paper"]), default="tiny", show_default=True,
              help="tiny: minutes on a CPU; paper: the paper's configuration")
@click.option("--steps", type=int, default=None, help="training steps [default: the preset's]")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True, help="where to train")
@click.option("--report-dir", type=click.Path(file_okay=False), default=None,
              help="where to write the certificate [default: DIR/validation/<model>-<time>/]")
@click.option("--batch-size", type=click.IntRange(1, limits.MAX_BATCH), default=None,
              help="global batch, split over torchrun's processes [default: the preset's]")
@click.option("--amp/--no-amp", default=None, help="bf16 autocast [default: on for cuda, off for cpu]")
@click.option("--compile", "compile_", is_flag=True, help="torch.compile the model")
@click.option("--checkpoint-activations", is_flag=True, help="recompute each block in the backward pass (less memory)")
@click.option("--permute-targets", is_flag=True,
              help="negative control: targets shuffled across each batch's samples; the certificate must fail")
@click.option("--json", "as_json", is_flag=True,
              help="print the certificate's main fields as JSON instead of a summary")
@click.option("--threads", type=click.IntRange(1, limits.MAX_THREADS), default=1, show_default=True,
              help="torch threads on the CPU (one is fastest for the tiny presets on a busy machine)")
@friendly
def validate(target, model, scale, steps, device, report_dir, batch_size, amp, compile_, checkpoint_activations,
             permute_targets, as_json, threads):
    try:
        from longsynth.models_ref.validate import validate as run
    except ImportError as e:
        raise click.ClickException(f"validate needs PyTorch ({e}); pip install torch") from None
    if steps is not None and not 1 <= steps <= limits.MAX_STEPS:
        raise click.ClickException(f"--steps must be >= 1 and <= {limits.MAX_STEPS:,}, got {steps:,}")
    report = run(target, model=model, scale=scale, steps=steps, device=device, report_dir=report_dir,
                 batch_size=batch_size, amp=amp, compile=compile_, checkpoint_activations=checkpoint_activations,
                 permute_targets=permute_targets, threads=threads)
    if report.get("rank", 0) == 0:
        if as_json:
            keys = ("final", "best", "test", "paper", "positive_control", "certificate", "report_dir")
            click.echo(json.dumps({k: report[k] for k in keys if k in report}, indent=1))
        else:
            from longsynth.models_ref.report import summary

            click.echo(summary(report))
        if (report.get("certificate") or {}).get("passed") is False:
            raise SystemExit(CERTIFICATE_FAILED)  # a CI job can gate on it (docs/validation.md)


CERTIFICATE_FAILED = 3  # validate's exit code for a FAILED certificate (1: an error, 0: passed or no verdict)



def _lrs(ctx, param, value):
    """--lr: finite positive numbers (nan, inf and 1e309 are refused), at most MAX_LRS of them."""
    import math

    from longsynth.models_ref.limits import MAX_LRS

    if value is None:
        return None
    if len(value) > 20 * MAX_LRS:
        raise click.BadParameter(f"at most {MAX_LRS} learning rates; got {len(value):,} characters")
    try:
        lrs = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"comma-separated numbers, e.g. 1e-3,3e-3; got {value!r}") from None
    if not lrs or any(not (math.isfinite(lr) and lr > 0) for lr in lrs):
        raise click.BadParameter(f"learning rates must be finite numbers > 0, got {value!r}")
    if len(lrs) > MAX_LRS:
        raise click.BadParameter(f"at most {MAX_LRS} learning rates, got {len(lrs)}")
    return lrs


@cli.command()
@click.argument("model")
@click.option("--suite", required=True,
              help="a task (select, cumsum, ...), a group (atomic: Table 1's 11 tasks; atomic-512: its L = 512 "
                   "columns; table2: Shift at 2^8..2^20), listops-subtrees, pathfinder-seg-128|256|512, "
                   "lra-pathfinder, path-x, lra-listops; the field's token suites mqar, h3-synthetics, "
                   "selective-copying, induction-heads, state-tracking, word-problem, mad (mad-baselines); or a "
                   "comma list")
@click.option("--scale", type=click.Choice(["tiny", "paper"]), default="tiny", show_default=True,
              help="tiny: the protocols shrunk to minutes on a CPU; paper: the papers' Tables 5/6")
@click.option("--steps", type=click.IntRange(1, limits.MAX_STEPS), default=None,
              help="training steps per run [default: the protocol's]; the lr schedule, warmup and evaluations "
                   "scale with it, the batch and data do not (docs/evaluate.md)")
@click.option("--lr", "lrs", callback=_lrs, default=None,
              help="learning rates to sweep, comma-separated; the best by validation is reported "
                   "[default: the built-in model's, else the protocol's]")
@click.option("--seeds", type=click.IntRange(1, limits.MAX_SEEDS), default=1, show_default=True,
              help="seeds per learning rate (model init and data order); the report gives mean and spread")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True, help="where to train")
@click.option("--jobs", type=click.IntRange(1, limits.MAX_JOBS), default=1, show_default=True,
              help="runs at once, one process each (one torch thread each on the CPU; several share a GPU)")
@click.option("--dask", default=None, metavar="ADDRESS",
              help="submit each run to this Dask scheduler (tcp://host:port or a scheduler file)")
@click.option("--data", type=click.Path(file_okay=False), default=None,
              help="stored datasets: one directory per task named by its suite (DIR/listops-subtrees, ...) or one "
                   "dataset [default: generated on first use into $LONGSYNTH_CACHE/data, else ~/.cache/longsynth/data]")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="report directory (report.json, report.md, report.png, runs/); rerunning resumes it")
@click.option("--threads", type=click.IntRange(1, limits.MAX_THREADS), default=1, show_default=True,
              help="torch threads per run on the CPU (with --jobs N: N x threads in all)")
@click.option("--edited", type=click.Choice(["redo", "refuse"]), default="redo", show_default=True,
              help="a run in --out whose files changed since it finished (or whose checkpoint is damaged): train "
                   "it again, or stop with one line")
@click.option("--dry-run", is_flag=True,
              help="print the plan and an estimate of its wall time on --device (a few timed training steps per "
                   "task), train nothing and write nothing into --out")
@friendly
def evaluate(model, suite, scale, steps, lrs, seeds, device, jobs, dask, data, out, threads, edited, dry_run):
    """Run MODEL through the papers' protocols and report it beside the papers' figures.

    MODEL is a built-in name (dlr, dss, s4, s4d, essm, attention, attention-ff, local-attention,
    dlr-prod, dlr-real, dlr-6, dlr-d1, s6, s6-signed, gru; zoology-attention on mqar),
    path/to/file.py:function or
    package.module:function;
    a function takes a longsynth.ModelSpec and returns a torch.nn.Module mapping
    [B, T, d_input] (or tokens [B, T]) to [B, T, d_output] (docs/evaluate.md).
    """
    try:
        from longsynth.models_ref.evaluate import Settings
        from longsynth.models_ref.evaluate import evaluate as run
        from longsynth.models_ref.validate import check_device
    except ImportError as e:
        raise click.ClickException(f"evaluate needs PyTorch ({e}); "
                                   "pip install \"longsynth[eval]\"") from None
    check_device(device)
    settings = Settings(scale=scale, steps=steps, lrs=lrs, seeds=seeds, device=device, jobs=jobs, dask=dask,
                        data=data, threads=threads, edited=edited)
    if dry_run:
        from longsynth.models_ref.evaluate import dry_run as estimate

        click.echo(estimate(model, suite, out=out, settings=settings,
                            notify=lambda line: click.echo(line, err=True)).text())
        return
    try:
        report = run(model, suite, out=out, settings=settings, notify=lambda line: click.echo(line, err=True))
    except KeyboardInterrupt:
        click.echo(f"interrupted: finished runs keep their certificates and unfinished ones their last checkpoint "
                   f"(saved at every evaluation) in {out}; rerun the same command to resume", err=True)
        raise SystemExit(130) from None
    click.echo(report.table())
    click.echo(f"report: {os.path.join(out, 'report.md')} (and report.json, report.png)")


_SIGNALLED = []  # signals received by this process (main() installs the handler)


def _on_signal(signum, frame):
    _SIGNALLED.append(signum)
    raise KeyboardInterrupt


def _unraisable(hook):
    """``sys.unraisablehook`` that keeps quiet about the KeyboardInterrupt of a signal that
    landed in a weakref callback or a ``__del__`` (Python would print its traceback and go
    on; ``Watched`` raises it again at the next progress report) and passes the rest to ``hook``."""

    def quiet(unraisable):
        if _SIGNALLED and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        hook(unraisable)

    return quiet


class Watched(Samples):
    """The store's progress callback that also ends the job after a signal whose
    KeyboardInterrupt Python swallowed (one raised inside a weakref callback or a
    ``__del__``, silenced by ``_unraisable``): the next progress report raises it again."""

    def __call__(self, n, total=None, done=0):
        if _SIGNALLED:
            raise KeyboardInterrupt
        super().__call__(n, total, done)


def main():
    import signal

    # SIGTERM (kill, a batch system's stop, a container's shutdown) ends a command as Ctrl-C
    # does: the same cleanup runs (temporary files removed, the lock released, a folder
    # made for the output removed again)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    cli(prog_name="longsynth")
