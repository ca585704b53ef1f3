"""``export``: a stored dataset in another project's on-disk layout (longsynth.exports)."""
import click

from longsynth import exports
from longsynth.cli.common import friendly, shown
from longsynth.cli.signals import Watched


def _export_help():
    """The export command's help: a line per format (click leaves the lines after \\b unwrapped)."""
    rows = [f"{f.name:15s} {f.summary}" + (f" ({', '.join(f.tasks)})" if f.tasks else "")
            for f in exports.FORMATS.values()]
    return "Write a stored dataset in another project's on-disk layout.\n\n\b\n" + "\n".join(rows)


@click.command(help=_export_help())
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
    click.echo(shown(f"wrote {fmt} to {out}"))
