"""``import-hf``: data a paper's authors released on the Hugging Face Hub, as longsynth datasets
(longsynth.hubimport; docs/format.md, "Imported data")."""
import shlex

import click

from longsynth import hubimport
from longsynth.cli.common import friendly, shown
from longsynth.cli.signals import Watched


@click.command("import-hf")
@click.argument("repo", type=click.Choice(sorted(hubimport.IMPORTERS)))
@click.argument("src", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="folder to write, one dataset per configuration inside it")
@click.option("--shard-size", type=int, default=None, help="rows per shard [default: about 64 MB a shard]")
@click.option("--compression", type=click.Choice(["none", "gzip", "lzf"]), default="none",
              help="HDF5 compression of the shards")
@click.option("--overwrite", is_flag=True,
              help="replace a dataset of another source or configuration in OUT (by default refused)")
@friendly
def import_hf(repo, src, out, shard_size, compression, overwrite):
    """Import REPO's files from the folder SRC (the Hub cache's datasets--OWNER--NAME, one of its
    snapshots, or a `huggingface-cli download --local-dir` folder) without changing a row: each
    file's SHA-256 is checked against the Hub's record where the download left one, and every row
    against the task's definition, before anything is written. No code from the Hub is run."""
    bars = []

    def progress(desc):
        if bars:
            bars[-1].close()  # one bar at a time: the check's, then each dataset's
        bars.append(Watched(f"import-hf {desc}", unit="rows"))
        return bars[-1]

    try:
        done = hubimport.import_hub(repo, src, out, shard_size=shard_size, compression=compression, overwrite=overwrite,
                                    command=_command(repo, src, out, shard_size, compression), progress=progress,
                                    notify=lambda line: click.echo(shown(line), err=True))
    finally:
        for b in bars:
            b.close()
    for name, m in done.items():
        counts = ", ".join(f"{s} {c:,}" for s, c in m["counts"].items())
        click.echo(shown(f"wrote {out}/{name}: {m['task']} {m['params']} ({counts})"))


def _command(repo, src, out, shard_size, compression):
    """The command line the manifest records: the same import, whatever options were spelt how."""
    words = ["longsynth", "import-hf", repo, src, "--out", out]
    words += ["--shard-size", str(shard_size)] if shard_size is not None else []
    words += ["--compression", compression] if compression != "none" else []
    return " ".join(shlex.quote(str(w)) for w in words)
