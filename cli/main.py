"""The ``longsynth`` command: thin click commands that parse, then call the library.

Every task's parameters become options of ``gen TASK`` and ``show TASK`` (field ``L`` ->
``--L``, ``min_length`` -> ``--min-length``). Failures end with one ``Error:`` line and a
non-zero exit; set LONGSYNTH_DEBUG=1 to see the traceback instead.

The group lives here with ``main()``; each command in a module of its own: ``gen``
(cli/gen.py), ``list``, ``info``, ``verify`` (cli/info.py), ``show`` (cli/show.py),
``export`` (cli/export.py), ``import-hf`` (cli/import_hf.py), ``validate`` and ``evaluate``
(cli/evaluate.py); what they share in cli/common.py and cli/signals.py.
"""
import sys

import click

from longsynth.cli.evaluate import evaluate, validate
from longsynth.cli.export import export
from longsynth.cli.gen import gen
from longsynth.cli.import_hf import import_hf
from longsynth.cli.info import info, list_tasks, verify
from longsynth.cli.show import show
from longsynth.cli.signals import _SIGNALLED, Watched, _on_signal, _unraisable

__all__ = ["cli", "main", "Watched", "_SIGNALLED", "_unraisable"]  # the last three: tests reach them here


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="longsynth")
def cli():
    """Generate, load and validate synthetic long-range benchmarks."""


for command in (list_tasks, gen, info, verify, show, export, import_hf, validate, evaluate):
    cli.add_command(command)


def main():
    import signal

    # SIGTERM (kill, a batch system's stop, a container's shutdown) ends a command as Ctrl-C
    # does: the same cleanup runs (temporary files removed, the lock released, a folder
    # made for the output removed again)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    cli(prog_name="longsynth")
