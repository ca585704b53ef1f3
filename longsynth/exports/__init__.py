"""Export formats: a stored dataset written in another project's on-disk layout.

Each format is one module (or, as ``hf``, one subpackage) of this package with
``write(dataset, out_dir, progress)``; FORMATS is the one list that ``export`` and the CLI
read. A task module knows nothing of formats, so adding a format touches no task. A
format's module is imported only when the format is used: ``hf`` needs ``datasets`` and
``pyarrow``, which nothing else in longsynth imports.

Every writer reads through the store's checked reads (a damaged shard stops it with
DamagedDataError), writes under temporary names that are renamed at the end, and reports
``progress(n)`` after n more samples.
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from longsynth.errors import LongsynthError


@dataclass(frozen=True)
class Format:
    name: str
    module: str  # longsynth.exports.<module> defines write(dataset, out_dir, progress)
    summary: str
    tasks: tuple | None = None  # names of the tasks it can write; None: every task
    needs: tuple = ()  # modules it imports beyond longsynth's own dependencies
    install: str = ""  # the command that installs them
    parallel: bool = False  # its write takes workers= (processes); the others write on this one


FORMATS = {f.name: f for f in [
    Format("lra-tsv", "lra_tsv", "ListOps as the LRA / DLR authors' TSV files", tasks=("listops-subtrees", "listops")),
    Format("dlr-pathfinder", "dlr_pathfinder", "Pathfinder in the DLR authors' images/paths/metadata layout",
           tasks=("pathfinder-seg",)),
    Format("lra-pathfinder", "lra_pathfinder", "Pathfinder / Path-X in LRA's release layout (imgs/, text metadata/)",
           tasks=("pathfinder",)),
    Format("hf", "hf", "Hugging Face datasets: Parquet files per split and a dataset card (README.md)",
           needs=("datasets", "pyarrow", "huggingface_hub"), install='pip install "longsynth[hf]"', parallel=True),
]}


def formats_for(task):
    """Names of the formats that can write datasets of ``task`` (a task name)."""
    return [f.name for f in FORMATS.values() if f.tasks is None or task in f.tasks]


def writer(name, task=None):
    """The ``write`` function of format ``name``; LongsynthError (one line) when the format
    is unknown, cannot write ``task``, or needs a library that is not installed."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise LongsynthError(f"format: unknown format {name!r}; choose from {', '.join(FORMATS)}")
    if task is not None and name not in formats_for(task):
        raise LongsynthError(f"{task} cannot be exported as {name!r}; formats: {', '.join(formats_for(task))}")
    missing = [m for m in fmt.needs if importlib.util.find_spec(m) is None]
    if missing:
        raise LongsynthError(f"--format {name} needs {', '.join(missing)}: {fmt.install}")
    return importlib.import_module(f"{__name__}.{fmt.module}").write


def export(root, fmt, out, progress=None, workers=None):
    """Write the dataset in ``root`` in export format ``fmt`` to directory ``out``.

    ``progress(None, total=N)`` is called once first, then ``progress(n)`` as samples are
    written. ``workers``: processes for a format that writes in parallel (``hf``; None: the
    format's default), which never change what is written; other formats refuse more
    than one. The
    output folder is held (locked) for the whole export and no link inside it is followed;
    a failed export leaves no partial file under a final name, and a folder it created is
    removed again.
    """
    from longsynth import safe, store
    from longsynth.outdir import Folder

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise LongsynthError(f"--workers: must be an integer >= 1, got {workers!r}")
    parallel = FORMATS[fmt].parallel if fmt in FORMATS else False
    if workers is not None and workers > 1 and not parallel:
        raise LongsynthError(f"--workers: --format {fmt} writes on one process; give --workers 1 or leave it out")
    ds = store.open(root)
    try:
        write = writer(fmt, ds.task.name)
        out = safe.check_out_path(out)
        if progress is not None:
            progress(None, total=sum(len(s) for s in ds.splits.values()))
        # the folder is locked for the whole export: a second export into it is refused in one
        # line, and a failed one removes only the folders it made (longsynth.outdir)
        with Folder(out).hold():
            if parallel:
                write(ds, out, progress, workers=workers)
            else:
                write(ds, out, progress)
    finally:
        ds.close()
    return out
