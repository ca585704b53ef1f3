"""What every command shares: printing a folder's text safely, one-line errors, and
turning a task's config fields into click options (the per-task groups ``gen`` and ``show``)."""
import dataclasses
import functools
import os

import click

from longsynth import api, registry
from longsynth.errors import LongsynthError
from longsynth.escape import visible
from longsynth.task import field_kind

TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def shown(text):
    """Text from a file (a manifest's command) as it may be printed: control characters
    and escapes shown as escapes (``\\x1b``), never sent to the terminal; at most 2,000
    characters."""
    return visible(str(text)[:2000]) + ("..." if len(str(text)) > 2000 else "")


def shown_lines(text):
    """Text of several lines made here around a path or a stored string (a plan, a report's table) as it
    may be printed: its line breaks kept, every other control character shown as an escape (what each
    path or string in it held, newlines too, is ``shown`` where the text is made)."""
    return "\n".join(visible(line) for line in str(text).split("\n"))


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
        except MemoryError as e:  # an estimate that fell short (NumPy's _ArrayMemoryError is one): never a traceback
            what = f" ({' '.join(str(e).split())[:200]})" if str(e) else ""
            raise click.ClickException(f"out of memory{what}; ask for less (fewer rows or samples, a shorter "
                                       "length, a smaller batch) or run where more memory is free") from None
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
