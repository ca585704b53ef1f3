"""Pathfinder-Segmentation: per-pixel labels of two dashed main paths among distractors.

Definition (TASKS.md, "Pathfinder-Segmentation"): an M x M uint8 image holds two main
paths of ``contour_length`` dashes and ``distractors`` short paths of
``distractor_length`` dashes on black; round markers sit at the start of one main path
and at the end of the same path (connected) or of the other one, with probability 1/2;
with ``mark_distractors`` each distractor carries a marker at its start. Labels:
2 on the main path that carries both markers, 1 on a main path otherwise, 0 elsewhere; a
pixel is on a path iff that path's own 8-bit intensity there is nonzero (markers are not
labelled). The geometry, the collision rule and the draw order of one image are in
``generators/pathfinder_render.py``'s docstring (the reproducibility contract).

Presets (``size``): every other field left at None takes the preset's value.
    size  paddle_length thickness margin continuity contour distr_len distractors seed_dist marker aa contrast
    128   5             1.5       2..3   1.8        14      4         16          22        2.1    2  0.9
    256   8             2         4      2.2        16      5         16          27        4.2    2  1.0
    512   22            6         7      2.5        12      4         18          40        9      3  1.0
with border 1 and mark_distractors on. At 128 the margin is drawn per image, uniformly
from {margin_min, margin_max} = {2, 3}.

Keys: ``inputs`` uint8 [M, M], ``targets`` uint8 [M, M] in {0, 1, 2}; extras
``connected`` bool, ``marker_centers`` float32 [2 + distractors, 2] (row, col; start
marker, end marker, then one per distractor when marked), ``main_dashes`` int32 [2],
``distractors`` int32 (placed: always the requested number), ``margin`` uint8 (this
image's margin) and ``dashes`` float32 [2 contour_length + distractors distractor_length, 4]
(r0, c0, r1, c1 of every dash: marked main path first, then the other main path, then the
distractors), kept so that the per-path layers can be redrawn for the dlr-pathfinder
export without storing an [M, M] layer per path.

Worked example: ``longsynth.sample("pathfinder-seg", 0, seed=0)`` (size 128) gives
``inputs`` with about 7% of its pixels lit, ``targets`` with about 2% of pixels in class
1 or 2, ``marker_centers`` of shape [18, 2]; ``targets[r, c] > 0`` implies
``inputs[r, c] > 0``; ``connected`` is True iff some target equals 2.
"""
import dataclasses
import os
import pickle
from dataclasses import dataclass

import numpy as np

from longsynth.generators.pathfinder_render import path_layer, render_batch
from longsynth.task import KeySpec, Task, param

SIZES = (128, 256, 512)

# TASKS.md presets (authors' generator); margin (lo, hi) is drawn per image from {lo..hi}
PRESETS = {
    128: dict(paddle_length=5.0, paddle_thickness=1.5, margin_min=2, margin_max=3, continuity=1.8,
              contour_length=14, distractor_length=4, distractors=16, seed_distance=22.0,
              marker_radius=2.1, antialias_scale=2, contrast=0.9, mark_distractors=True, border=1),
    256: dict(paddle_length=8.0, paddle_thickness=2.0, margin_min=4, margin_max=4, continuity=2.2,
              contour_length=16, distractor_length=5, distractors=16, seed_distance=27.0,
              marker_radius=4.2, antialias_scale=2, contrast=1.0, mark_distractors=True, border=1),
    512: dict(paddle_length=22.0, paddle_thickness=6.0, margin_min=7, margin_max=7, continuity=2.5,
              contour_length=12, distractor_length=4, distractors=18, seed_distance=40.0,
              marker_radius=9.0, antialias_scale=3, contrast=1.0, mark_distractors=True, border=1),
}

CLASS_COLORS = [(255, 255, 255), (150, 150, 150), (0, 0, 0)]  # label 0 white, 1 gray, 2 black (Figure 1)


@dataclass(frozen=True)
class PathfinderSegConfig:
    """Pathfinder-Segmentation parameters; None = the ``size`` preset's value.

    Example: ``PathfinderSegConfig(size=256, distractors=8)`` resolves to the 256 preset
    (paddle_length 8, thickness 2, margin 4, ...) with 8 distractors instead of 16.
    """

    size: int = param(128, "image side M in pixels (picks the preset)", choices=SIZES)
    paddle_length: float | None = param(None, "total dash length in pixels (round caps included)", lo=1.0, hi=256.0)
    paddle_thickness: float | None = param(None, "dash thickness in pixels", lo=0.5, hi=64.0)
    margin_min: int | None = param(None, "smallest gap between consecutive dashes (drawn per image)", lo=1, hi=64)
    margin_max: int | None = param(None, "largest gap between consecutive dashes (drawn per image)", lo=1, hi=64)
    continuity: float | None = param(None, "turn penalty: the largest turn is pi / (2 continuity)", lo=1.0, hi=100.0)
    contour_length: int | None = param(None, "dashes per main path", lo=2, hi=1000)
    distractor_length: int | None = param(None, "dashes per distractor path", lo=1, hi=1000)
    distractors: int | None = param(None, "number of distractor paths (all placed)", lo=0, hi=1000)
    seed_distance: float | None = param(None, "distance between the start tips of the two main paths", lo=0.0, hi=4096.0)
    marker_radius: float | None = param(None, "radius of the round markers in pixels", lo=0.5, hi=64.0)
    antialias_scale: int | None = param(None, "sub-samples per pixel side for anti-aliasing", lo=1, hi=8)
    contrast: float | None = param(None, "intensity of dashes and markers (255 * contrast)", lo=0.01, hi=1.0)
    mark_distractors: bool | None = param(None, "give every distractor a marker at its start")
    border: int | None = param(None, "pixels at the frame's edge that stay black", lo=0, hi=64)


def _resolve(cfg):
    """Fill None fields from the preset of cfg.size, then check the combined values."""
    preset = PRESETS[cfg.size]
    filled = {k: (preset[k] if getattr(cfg, k) is None else getattr(cfg, k)) for k in preset}
    out = dataclasses.replace(cfg, **filled)
    if out.margin_min > out.margin_max:
        raise ValueError(f"margin_min: must be <= margin_max ({out.margin_max}), got {out.margin_min}")
    level = 255.0 * out.contrast / out.antialias_scale**2
    if level < 0.5:
        raise ValueError(
            f"contrast: one covered sub-sample must give intensity >= 1 (255 * contrast / antialias_scale^2 "
            f">= 0.5); got contrast {out.contrast} with antialias_scale {out.antialias_scale}")
    if out.paddle_length + 2.0 * out.paddle_thickness + 2 * out.border >= out.size:
        raise ValueError(f"paddle_length: a dash of {out.paddle_length} px does not fit a {out.size} px image")
    return out


def n_dashes(cfg):
    return 2 * cfg.contour_length + cfg.distractors * cfg.distractor_length


def n_markers(cfg):
    return 2 + (cfg.distractors if cfg.mark_distractors else 0)


def _keys(cfg):
    M = cfg.size
    return {
        "inputs": KeySpec("uint8", (M, M), doc="grayscale image"),
        "targets": KeySpec("uint8", (M, M), doc="0 off the main paths, 2 on the doubly marked main path, 1 on a main path otherwise"),
        "connected": KeySpec("bool", (), doc="both markers lie on the same main path"),
        "marker_centers": KeySpec("float32", (n_markers(cfg), 2),
                                  doc="(row, col) of the markers: start, end, then distractor starts"),
        "main_dashes": KeySpec("int32", (2,), doc="dashes of each main path (marked path first)"),
        "distractors": KeySpec("int32", (), doc="distractor paths placed"),
        "margin": KeySpec("uint8", (), doc="gap between consecutive dashes in this image"),
        "dashes": KeySpec("float32", (n_dashes(cfg), 4),
                          doc="(r0, c0, r1, c1) of every dash: marked main path, other main path, distractors"),
    }


def _fill(cfg, seed, split, start, out, fixed):
    count = out["inputs"].shape[0]
    status = np.zeros(count, dtype=np.int32)
    render_batch(seed, split, start, cfg.size, cfg.border, float(cfg.paddle_length), float(cfg.paddle_thickness),
                 cfg.margin_min, cfg.margin_max, float(cfg.continuity), cfg.contour_length,
                 cfg.distractor_length, cfg.distractors, float(cfg.seed_distance), float(cfg.marker_radius),
                 cfg.antialias_scale, float(cfg.contrast), bool(cfg.mark_distractors),
                 out["inputs"], out["targets"], out["connected"], out["marker_centers"], out["main_dashes"],
                 out["distractors"], out["margin"], out["dashes"], status)
    bad = np.nonzero(status)[0]
    if bad.size:
        raise ValueError(
            f"distractors: could not place every path of sample {start + int(bad[0])} in "
            f"{cfg.size} x {cfg.size} px; reduce distractors, contour_length or margin")


# ---------------------------------------------------------------- preview


def label_colors(targets):
    """uint8 [M, M, 3] label mask: 0 white, 1 gray, 2 black (the paper's Figure 1)."""
    return np.asarray(CLASS_COLORS, dtype=np.uint8)[np.asarray(targets, dtype=np.int64)]


def _framed(rgb):
    """rgb [M, M, 3] inside a 1-pixel light grey frame (white masks on white paper)."""
    out = np.full((rgb.shape[0] + 2, rgb.shape[1] + 2, 3), 200, dtype=np.uint8)
    out[1:-1, 1:-1] = rgb
    return out


def _show(samples, cfg, path):
    """PNG grid at path (when given): each image beside its label mask (0 white, 1 gray,
    2 black). Returns one summary line per sample."""
    from longsynth import plot

    tiles, captions, lines = [], [], []
    for k, s in enumerate(samples):
        img = np.asarray(s["inputs"])
        tgt = np.asarray(s["targets"])
        tiles += [_framed(np.repeat(img[:, :, None], 3, axis=2)), _framed(label_colors(tgt))]
        state = "connected" if bool(s["connected"]) else "disconnected"
        captions += [f"{k}: image", f"{k}: labels ({state})"]
        lines.append(f"sample {k}: {state}, margin {int(s['margin'])}, main dashes {np.asarray(s['main_dashes']).tolist()}, "
                     f"{int(s['distractors'])} distractors, lit {np.mean(img > 0):.2%}, "
                     f"class 1 {np.mean(tgt == 1):.2%}, class 2 {np.mean(tgt == 2):.2%}")
    if path is not None:
        cols = 4 if len(tiles) >= 4 else len(tiles)
        scale = 2 if cfg.size <= 128 else 1
        plot.grid(tiles, path, cols=cols, labels=captions, scale=scale)
    return "\n".join(lines)


# ---------------------------------------------------------------- dlr-pathfinder export

EXPORT_BATCH = 10_000  # images per imgs/<batch> folder


def path_pixels(sample, cfg, which):
    """(rows, cols) int64 arrays of main path ``which`` (0: marked, 1: other) from ``dashes``."""
    layer = np.zeros((cfg.size, cfg.size), dtype=np.uint8)
    n = cfg.contour_length
    path_layer(np.asarray(sample["dashes"], dtype=np.float32), which * n, n, float(cfg.paddle_length),
               float(cfg.paddle_thickness), cfg.antialias_scale, float(cfg.contrast), layer)
    return np.nonzero(layer)


def _tip(point):
    return (int(round(float(point[0]))), int(round(float(point[1]))))


def export_record(sample, cfg):
    """The authors' per-image pickle dict for one sample (see docs/tasks/pathfinder.md)."""
    n = cfg.contour_length
    dashes = np.asarray(sample["dashes"])
    segs = [path_pixels(sample, cfg, 0), path_pixels(sample, cfg, 1)]
    check = np.zeros((cfg.size, cfg.size), dtype=np.uint8)
    for i, seg in enumerate(segs):
        check[seg] = 2 if (i == 0 and bool(sample["connected"])) else 1
    if not np.array_equal(check, sample["targets"]):
        raise ValueError("dashes: the redrawn main paths do not match the stored targets")
    return {
        "segs": segs,
        "origin_tips": [_tip(dashes[0, :2]), _tip(dashes[n, :2])],
        "terminal_tips": [_tip(dashes[n - 1, 2:]), _tip(dashes[2 * n - 1, 2:])],
        "marker_indices": [0, 0 if bool(sample["connected"]) else 1],
        "image_size": (cfg.size, cfg.size),
    }


def _export_dlr(dataset, out_dir, progress):
    """All splits (train, val, test order) in the authors' on-disk layout under out_dir.

    imgs/<b>/sample_<i>.png, paths/<b>/sample_<i>.pkl and metadata/<b>.npy with rows
    [imgs/<b>, sample_<i>.png, i, label, contour_length, distractor_length, distractors,
    size, split, split index], where i runs over all exported images and b = i // EXPORT_BATCH.
    """
    from PIL import Image

    cfg = dataset.config
    rows = {}
    i = 0
    for split, sp in dataset.splits.items():
        for j in range(len(sp)):
            s = sp[j]
            b = i // EXPORT_BATCH
            for sub in ("imgs", "paths"):
                os.makedirs(os.path.join(out_dir, sub, str(b)), exist_ok=True)
            name = f"sample_{i}"
            Image.fromarray(np.asarray(s["inputs"], dtype=np.uint8), mode="L").save(
                os.path.join(out_dir, "imgs", str(b), name + ".png"))
            with open(os.path.join(out_dir, "paths", str(b), name + ".pkl"), "wb") as f:
                pickle.dump(export_record(s, cfg), f, protocol=4)
            rows.setdefault(b, []).append([f"imgs/{b}", name + ".png", str(i), str(int(bool(s["connected"]))),
                                           str(cfg.contour_length), str(cfg.distractor_length),
                                           str(int(s["distractors"])), str(cfg.size), split, str(j)])
            i += 1
            if progress is not None:
                progress(1)
    os.makedirs(os.path.join(out_dir, "metadata"), exist_ok=True)
    for b, r in rows.items():
        np.save(os.path.join(out_dir, "metadata", f"{b}.npy"), np.array(r))


TASK = Task(
    name="pathfinder-seg",
    config=PathfinderSegConfig,
    summary="Pathfinder-Segmentation: label the pixels of two dashed main paths among distractors",
    keys=_keys,
    fill=_fill,
    resolve=_resolve,
    family="pathfinder",
    default_num_samples=100_000,
    show=_show,
    exporters={"dlr-pathfinder": _export_dlr},
    card=("M x M uint8 image with two dashed main paths and short distractors; markers at the start of one "
          "main path and at the end of the same (connected) or the other path. Per-pixel targets: 2 on the "
          "main path carrying both markers, 1 on a main path otherwise, 0 elsewhere (markers unlabelled)."),
)
