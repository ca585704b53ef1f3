"""``dlr-pathfinder``: Pathfinder-Segmentation in the DLR authors' on-disk layout.

Their loader reads PNG images, one pickle of path pixels and marker tips per image, and a
metadata .npy per batch folder (docs/tasks/pathfinder.md, "Export"). The path pixels are
not stored keys: each main path's layer is redrawn from the stored ``dashes`` and ``peak``
with the renderer's own stamps, and checked against the stored ``targets``.
"""
import os
import pickle

import numpy as np

from longsynth import values
from longsynth.errors import LongsynthError
from longsynth.files import PendingFiles
from longsynth.outdir import Folder
from longsynth.generators.pathfinder.canvas import draw_dash
from longsynth.generators.pathfinder.seg import params

EXPORT_BATCH = 2500  # images per imgs/<batch> folder: one of their 40 workers' share of 100K


def path_pixels(sample, cfg, which):
    """(rows, cols) of main path ``which`` (0: marked, 1: other): where its own layer,
    redrawn from ``dashes`` and rescaled by ``peak``, is nonzero at 8 bits."""
    P, T = params(cfg)
    g = int(sample["margin"]) - cfg.margin_min
    if not 0 <= g < T.R.shape[0]:  # the renderer's tables are indexed by it, without bounds checks
        raise LongsynthError(f"margin: {int(sample['margin'])} is outside the task's margins; not a sample of it")
    layer = np.zeros((cfg.size, cfg.size))
    n = cfg.contour_length
    dashes = np.asarray(sample["dashes"], dtype=np.int64)
    for r, c, dy, dx in dashes[which * n:(which + 1) * n]:
        found = np.nonzero((T.key[g, :, 0] == dy) & (T.key[g, :, 1] == dx))[0]
        if not found.size:
            raise LongsynthError(f"dashes: direction ({dy}, {dx}) is none of the renderer's; not a sample of the task")
        k = int(found[0])
        draw_dash(T, g, k, int(r), int(c), float(cfg.contrast), layer)
    peak = float(np.float32(sample["peak"]))
    return np.nonzero(np.rint(layer / peak * 255.0) >= 1)


def export_record(sample, cfg):
    """The authors' per-image pickle dict for one sample (see docs/tasks/pathfinder.md)."""
    n = cfg.contour_length
    dashes = np.asarray(sample["dashes"])
    dtype = np.uint8 if cfg.size <= 256 else np.uint16  # theirs: uint8 up to 256 px
    segs = [path_pixels(sample, cfg, 0), path_pixels(sample, cfg, 1)]
    check = np.zeros((cfg.size, cfg.size), dtype=np.uint8)
    for i, seg in enumerate(segs):
        check[seg] = np.maximum(check[seg], 2 if (i == 0 and bool(sample["connected"])) else 1)
    if not np.array_equal(check, sample["targets"]):
        raise LongsynthError("dashes: the redrawn main paths do not match the stored targets")
    tip = lambda rc: [int(rc[0]), int(rc[1])]  # noqa: E731
    return {
        "segs": [tuple(a.astype(dtype) for a in seg) for seg in segs],
        "origin_tips": [tip(dashes[0, :2]), tip(dashes[n, :2])],
        "terminal_tips": [np.array(tip(dashes[n - 1, :2])), np.array(tip(dashes[2 * n - 1, :2]))],
        "marker_indices": [0, 0 if bool(sample["connected"]) else 1],
        "image_size": [cfg.size, cfg.size],
    }


def write(dataset, out_dir, progress):
    """All splits (train, val, test order) in the authors' layout under out_dir.

    As their 40 workers write it: imgs/<b>/sample_<k>.png, paths/<b>/sample_<k>.pkl and
    metadata/<b>.npy, 2,500 images per batch b numbered k = 0.. in each, metadata rows
    [imgs/<b>, sample_<k>.png, k, label, continuity, contour_length, distractor_length,
    paddle_length, paddle_thickness, margin, 1] (their 11 columns, as strings). Batches
    continue after the largest batch already in out_dir, so ours mix with theirs. Their
    loader makes its own 80/10/10 split of everything it finds.

    Staged with PendingFiles and renamed into place at the end, batch folders first and each
    batch's metadata last (their loader finds images through metadata only), so a failed
    export leaves nothing behind.
    """
    from PIL import Image

    cfg = dataset.config
    meta_dir = os.path.join(out_dir, "metadata")
    taken = [int(f[:-4]) for f in Folder(out_dir).sub(*os.path.relpath(meta_dir, out_dir).split(os.sep)).listdir()
             if f.endswith(".npy") and f[:-4].isdigit()]  # a link on the way is refused, never listed
    first = max(taken) + 1 if taken else 0
    rows = {}
    folders = {}
    with PendingFiles(out_dir) as pending:
        i = 0
        for split, sp in dataset.splits.items():
            for j in range(len(sp)):
                s = sp[j]
                values.check(sp.specs, s, f"{split}[{j}]", dataset.root)
                b, k = divmod(i, EXPORT_BATCH)
                b += first
                if b not in folders:
                    folders[b] = {sub: pending.folder(os.path.join(out_dir, sub, str(b))) for sub in ("imgs", "paths")}
                name = f"sample_{k}"
                Image.fromarray(np.asarray(s["inputs"], dtype=np.uint8), mode="L").save(
                    os.path.join(folders[b]["imgs"], name + ".png"))
                with open(os.path.join(folders[b]["paths"], name + ".pkl"), "wb") as f:
                    pickle.dump(export_record(s, cfg), f, protocol=4)
                rows.setdefault(b, []).append([f"imgs/{b}", name + ".png", k, int(bool(s["connected"])),
                                               cfg.continuity, cfg.contour_length, cfg.distractor_length,
                                               cfg.paddle_length, cfg.paddle_thickness, int(s["margin"]), 1])
                i += 1
                if progress is not None:
                    progress(1)
        for b, r in rows.items():
            with open(pending.path(os.path.join(meta_dir, f"{b}.npy"), new=True), "wb") as f:
                np.save(f, np.array(r))
