"""``lra-pathfinder``: classic Pathfinder / Path-X in the layout of LRA's release.

``longsynth export DIR --format lra-pathfinder --out OUT/pathfinder32`` writes, under the
difficulty's folder (``curv_baseline``, ``curv_contour_length_9`` or
``curv_contour_length_14``):

* ``imgs/<b>/sample_<k>.png``: the 8-bit grayscale image;
* ``metadata/<b>.npy``: despite the suffix a text file, as in the release: one line per
  image, 11 fields separated by single spaces, ``imgs/<b> sample_<k>.png <k> <label>
  <continuity> <contour_length> <distractor_length> <paddle_length> <paddle_thickness>
  <margin> 1`` (the original generator's metadata row; e.g. the release's
  ``imgs/0 sample_0.png 0 0 1.0 6 2 2 0.5 1 1``).

The PathFinder loaders of state-spaces/s4 and ag1988/dlr (``PathFinderDataset``) read
``<difficulty>/metadata/*.npy`` sorted by number, take fields 0 and 1 as the image path and
field 3 as the label, and split everything 80/10/10 with their own seed: our train / val /
test membership is not carried over (train, then val, then test are written in order).
"""
import os

import numpy as np

from longsynth import values
from longsynth.errors import LongsynthError
from longsynth.files import PendingFiles
from longsynth.outdir import Folder
from longsynth.generators.pathfinder.lra import DIRS

EXPORT_BATCH = 1000  # images per imgs/<b> folder


def _num(v):
    """A number as the original generator's Python wrote it: whole floats as ints, except
    continuity, which the settings blocks give as floats (1.0, 1.8)."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def metadata_line(b, k, label, cfg, margin):
    return " ".join([f"imgs/{b}", f"sample_{k}.png", str(k), str(int(label)), repr(float(cfg.continuity)),
                     str(cfg.contour_length), str(cfg.distractor_length), str(cfg.paddle_length),
                     _num(cfg.paddle_thickness), str(int(margin)), "1"])


def write(dataset, out_dir, progress):
    """All splits (train, val, test order) under out_dir/<difficulty folder>/, in batches of
    EXPORT_BATCH images numbered after the largest batch already there (so two datasets of
    one difficulty can be put together). Staged with PendingFiles and renamed into place at
    the end, each batch's metadata last (the loaders find images through metadata only), so
    a failed export leaves nothing behind."""
    from PIL import Image

    cfg = dataset.config
    if dataset.task.name != "pathfinder":
        raise LongsynthError(f"{dataset.task.name} cannot be exported as 'lra-pathfinder'")
    root = os.path.join(out_dir, DIRS[cfg.difficulty])
    meta_dir = os.path.join(root, "metadata")
    taken = [int(f[:-4]) for f in Folder(out_dir).sub(*os.path.relpath(meta_dir, out_dir).split(os.sep)).listdir()
             if f.endswith(".npy") and f[:-4].isdigit()]  # a link on the way is refused, never listed
    first = max(taken) + 1 if taken else 0
    lines = {}
    folders = {}
    with PendingFiles(out_dir) as pending:
        i = 0
        for split, sp in dataset.splits.items():
            for at, block in sp.iter_blocks(keys=["inputs", "targets", "margin"]):
                values.check(sp.specs, block, f"{split}[{at}..]", dataset.root)
                for j in range(len(block["targets"])):
                    b, k = divmod(i, EXPORT_BATCH)
                    b += first
                    if b not in folders:
                        folders[b] = pending.folder(os.path.join(root, "imgs", str(b)))
                    Image.fromarray(np.asarray(block["inputs"][j], dtype=np.uint8), mode="L").save(
                        os.path.join(folders[b], f"sample_{k}.png"))
                    lines.setdefault(b, []).append(metadata_line(b, k, block["targets"][j], cfg, block["margin"][j]))
                    i += 1
                if progress is not None:
                    progress(len(block["targets"]))
        for b, rows in lines.items():
            with open(pending.path(os.path.join(meta_dir, f"{b}.npy"), new=True), "w", encoding="utf-8") as f:
                f.write("\n".join(rows) + "\n")
