"""``show``: figures of fresh samples of a task (``show TASK``) or of a stored dataset
(``show DIR``, ``--stats`` for the dataset-level figure)."""
import collections.abc
import functools
import os

import click

from longsynth import api, registry, store
from longsynth.cli.common import TaskGroup, friendly, shown, task_options, task_params
from longsynth.errors import LongsynthError
from longsynth.progress import Samples

MAX_SHOW = 64  # samples per `show` figure


class Drawn(collections.abc.Sequence):
    """The ``count`` samples of a figure, each drawn (or read) when the figure asks for it and
    let go when it moves on: 64 rows of 2^24 tokens are 2 GB together, one row 32 MB, and a
    figure keeps only what it draws of a row (1 position in 4,096 of a token row). The last
    sample asked for is kept, so a figure that reads one sample's keys in turn draws it once."""

    def __init__(self, count, draw):
        self._count, self._draw, self._last = int(count), draw, (None, None)

    def __len__(self):
        return self._count

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._count))]
        k = k + self._count if k < 0 else k
        if not 0 <= k < self._count:
            raise IndexError(k)
        if self._last[0] != k:
            self._last = (None, None)  # the sample before is let go before the next is drawn
            self._last = (k, self._draw(k))
        return self._last[1]


def _make_show(task):
    @friendly
    def run(index, count, seed, split, out, **values):
        params = task_params(task, values)
        if task.show is None:
            raise click.ClickException(f"{task.name} has no preview")
        cfg = task.make_config(**params)
        _check_text_out(task, out)
        samples = Drawn(count, lambda k: api.sample(task.name, index + k, seed=seed, split=split, **params))
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
        raise click.BadParameter(shown(f"cannot make its folder {folder} ({e.strerror or e})")) from None
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
        click.echo(f"wrote {shown(out)}")


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
    samples = Drawn(min(index + count, len(sp)) - index, lambda k: sp[index + k])
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


show = ShowGroup("show", make=_make_show,
                 help="Draw samples: longsynth show TASK [options] | show DIR [options].")
