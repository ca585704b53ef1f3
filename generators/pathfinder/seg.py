"""Pathfinder-Segmentation: per-pixel labels of two dashed main paths among distractors.

Definition (docs/tasks/pathfinder.md; the DLR authors' generator is the
reference for image formation and geometry): an M x M uint8 image holds two main paths of
``contour_length`` dashes and ``distractors`` short paths of ``distractor_length`` dashes
on black; round markers sit at the start of one main path and at the end of the same path
(connected) or of the other one, with probability 1/2; with ``mark_distractors`` each
distractor carries a marker too. Dashes are PIL lines drawn ``antialias_scale`` times
finer and reduced with a Lanczos filter; the image is rescaled so that its brightest
pixel is 255. Labels: 2 on the main path that carries both markers, 1 on a main path
otherwise, 0 elsewhere; a pixel is on a path iff that path's own 8-bit image (rescaled
the same way) is nonzero there, so the faint Lanczos ring around each dash is labelled.
The process and its draw order are in ``generators/pathfinder/process.py``'s docstring.

Presets (``size``): every other field left at None takes the preset's value
(the authors' ``snakes2_wrapper.py`` settings blocks).
    size  paddle_length thickness margin continuity contour distr_len distractors seed_dist marker aa contrast
    128   5             1.5       2..3   1.8        14      4         16          22        2.1    2  0.9
    256   8             2         4      2.2        16      5         16          27        4.2    2  1.0
    512   22            6         7      2.5        12      4         18          40        9      3  1.0
with border 1 and mark_distractors on. At 128 the margin is drawn per image from
{margin_min .. margin_max} = {2, 3}.

Keys: ``inputs`` uint8 [M, M], ``targets`` uint8 [M, M] in {0, 1, 2}; extras
``connected`` bool; ``marker_centers`` int32 [2 + distractors, 2] (row, col: start marker,
end marker, then one per distractor when marked); ``main_dashes`` int32 [2] and
``distractors`` int32, counted from what was drawn (marked path first); ``margin`` uint8;
``dashes`` int32 [2 contour_length + distractors distractor_length, 4]: per dash the pixel
its line starts from and the line's other end in 1/antialias_scale pixels from there
(r, c, dr, dc), marked main path first, then the other main path, then the distractors;
``peak`` float32, the composed image's maximum (the value shown as 255). With
``distractor_tries`` > 0 (the authors' dropping rule, the default) rows of dropped distractors are -1. With
``dashes`` and ``peak`` each path's layer can be redrawn (longsynth.exports.dlr_pathfinder does).

Worked example: ``longsynth.sample("pathfinder-seg", 0, seed=0)`` (size 128) gives
``inputs`` with about 23% of its pixels nonzero (about 180 distinct levels, most of them
faint ring values), ``targets`` with about 6% of pixels in class 1 or 2,
``marker_centers`` of shape [18, 2]; ``targets[r, c] > 0`` implies ``inputs[r, c] > 0``;
``connected`` is True iff some target equals 2.
"""
import dataclasses
from dataclasses import dataclass

import numpy as np

from longsynth.generators.pathfinder.glue import check_geometry, n_dashes, n_markers, render_into, render_params
from longsynth.task import KeySpec, Task, param

SIZES = (128, 256, 512)
REVISION = 3  # 3: the authors' laws by default (distractors dropped after 5 tries, exact restarts) and their
#   rounding of absolute coordinates; 2: every distractor placed, local retries, offsets rounded apart from
#   position; 1: capsules, local footprints

# the authors' settings blocks; margin (lo, hi) is drawn per image from {lo..hi}
PRESETS = {
    128: dict(paddle_length=5, paddle_thickness=1.5, margin_min=2, margin_max=3, continuity=1.8,
              contour_length=14, distractor_length=4, distractors=16, seed_distance=22,
              marker_radius=2.1, antialias_scale=2, contrast=0.9, mark_distractors=True, border=1),
    256: dict(paddle_length=8, paddle_thickness=2.0, margin_min=4, margin_max=4, continuity=2.2,
              contour_length=16, distractor_length=5, distractors=16, seed_distance=27,
              marker_radius=4.2, antialias_scale=2, contrast=1.0, mark_distractors=True, border=1),
    512: dict(paddle_length=22, paddle_thickness=6.0, margin_min=7, margin_max=7, continuity=2.5,
              contour_length=12, distractor_length=4, distractors=18, seed_distance=40,
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
    paddle_length: int | None = param(None, "dash length in pixels (preset 5 / 8 / 22)", lo=1, hi=256)
    paddle_thickness: float | None = param(None, "dash line width in pixels; times antialias_scale must be whole "
                                                 "(preset 1.5 / 2 / 6)", lo=0.5, hi=64.0)
    margin_min: int | None = param(None, "smallest gap between consecutive dashes, drawn per image "
                                         "(preset 2 / 4 / 7)", lo=1, hi=64)
    margin_max: int | None = param(None, "largest gap between consecutive dashes, drawn per image "
                                         "(preset 3 / 4 / 7)", lo=1, hi=64)
    continuity: float | None = param(None, "turn penalty: the largest turn is pi / (2 continuity) "
                                           "(preset 1.8 / 2.2 / 2.5)", lo=1.0, hi=100.0)
    contour_length: int | None = param(None, "dashes per main path (preset 14 / 16 / 12)", lo=1, hi=1000)
    distractor_length: int | None = param(None, "dashes per distractor path (preset 4 / 5 / 4)", lo=1, hi=1000)
    distractors: int | None = param(None, "distractor paths to place (preset 16 / 16 / 18)", lo=0, hi=1000)
    seed_distance: int | None = param(None, "distance between the start tips of the two main paths "
                                            "(preset 22 / 27 / 40)", lo=0, hi=4096)
    marker_radius: float | None = param(None, "radius of the round markers in pixels "
                                              "(preset 2.1 / 4.2 / 9)", lo=0.5, hi=64.0)
    antialias_scale: int | None = param(None, "drawing resolution relative to the image (preset 2 / 2 / 3)", lo=1, hi=8)
    contrast: float | None = param(None, "dash intensity relative to the markers (preset 0.9 / 1 / 1)", lo=0.01, hi=1.0)
    mark_distractors: bool | None = param(None, "give every distractor a marker (preset on)")
    border: int | None = param(None, "frame pixels that no dash may cover (preset 1)", lo=0, hi=64)
    distractor_tries: int = param(5, "drop a distractor after this many failed tries, as the authors' generator "
                                     "(5); 0: place every distractor (ink and markers 8-13% above theirs)",
                                  lo=0, hi=1000)
    exact_restarts: bool = param(True, "restart both main paths on any failure, as the authors' generator; "
                                       "off: local retries (faster, shorter main paths; docs/tasks/pathfinder.md)")


def _resolve(cfg):
    """Fill None fields from the preset of cfg.size, then check the combined values."""
    preset = PRESETS[cfg.size]
    filled = {k: (preset[k] if getattr(cfg, k) is None else getattr(cfg, k)) for k in preset}
    return check_geometry(dataclasses.replace(cfg, **filled), "the authors' rule")



def _keys(cfg):
    M = cfg.size
    return {
        "inputs": KeySpec("uint8", (M, M), doc="grayscale image"),
        "targets": KeySpec("uint8", (M, M), doc="0 off the main paths, 2 on the doubly marked main path, "
                                                "1 on a main path otherwise", bounds=(0, 2)),
        "connected": KeySpec("bool", (), doc="both markers lie on the same main path"),
        "marker_centers": KeySpec("int32", (n_markers(cfg), 2),
                                  doc="(row, col) of the markers: start, end, then distractor markers"),
        "main_dashes": KeySpec("int32", (2,), doc="dashes drawn per main path (marked path first)"),
        "distractors": KeySpec("int32", (), doc="distractor paths drawn"),
        "margin": KeySpec("uint8", (), doc="gap between consecutive dashes in this image"),
        "dashes": KeySpec("int32", (n_dashes(cfg), 4),
                          doc="(row, col, dr, dc) per dash: start pixel and line end in 1/antialias_scale pixels"),
        "peak": KeySpec("float32", (), doc="maximum of the composed image before rescaling to 255"),
    }


def params(cfg):
    """The renderer's preset record and stamp tables for a resolved config."""
    return render_params(cfg, dcontrast=cfg.contrast, eight_bit=False, labels=True,
                         dead_seeds=True, seed_scan=0)



def _fill(cfg, seed, split, start, out, fixed):
    render_into(cfg, params(cfg), seed, split, start, out, out["targets"])



# ---------------------------------------------------------------- preview


def label_colors(targets):
    """uint8 [M, M, 3] label mask: 0 white, 1 gray, 2 black (the paper's Figure 1)."""
    return np.asarray(CLASS_COLORS, dtype=np.uint8)[np.asarray(targets, dtype=np.int64)]


def _framed(rgb):
    """rgb [M, M, 3] inside a 1-pixel light grey frame (white masks on white paper)."""
    out = np.full((rgb.shape[0] + 2, rgb.shape[1] + 2, 3), 200, dtype=np.uint8)
    out[1:-1, 1:-1] = rgb
    return out


LEGEND = [(0, "0: background"), (1, "1: on a main path"), (2, "2: on the main path that carries both markers")]


def _with_legend(grid):
    """The grid under a legend band: one colour swatch and readable text per class."""
    from PIL import Image, ImageDraw

    from longsynth.plot import font

    size = max(18, grid.width // 80)  # as large as the grid's captions on 512-px tiles
    f = font(size)
    band = size + 16
    draw = ImageDraw.Draw(grid)
    need = 8 + sum(size + 8 + int(draw.textlength(text, font=f)) + size for _, text in LEGEND)
    out = Image.new("RGB", (max(grid.width, need), grid.height + band), (255, 255, 255))
    out.paste(grid, (0, band))
    draw = ImageDraw.Draw(out)
    x = 8
    for cls, text in LEGEND:
        draw.rectangle([x, 8, x + size, 8 + size], fill=CLASS_COLORS[cls], outline=(90, 90, 90))
        draw.text((x + size + 8, 7), text, fill=(0, 0, 0), font=f)
        x += size + 8 + int(draw.textlength(text, font=f)) + size
    return out


def _show(samples, cfg, path):
    """PNG grid at path (when given): each image beside its label mask, with a legend.
    Returns one summary line per sample."""
    from longsynth import plot

    tiles, captions, lines = [], [], []
    for k, s in enumerate(samples):
        img = np.asarray(s["inputs"])
        tgt = np.asarray(s["targets"])
        tiles += [_framed(np.repeat(img[:, :, None], 3, axis=2)), _framed(label_colors(tgt))]
        state = "connected" if bool(s["connected"]) else "disconnected"
        captions += [f"#{k} image", f"#{k} labels: {state}"]
        lines.append(f"sample {k}: {state}, margin {int(s['margin'])}, "
                     f"main dashes {np.asarray(s['main_dashes']).tolist()}, "
                     f"{int(s['distractors'])} distractors, nonzero {np.mean(img > 0):.2%}, "
                     f"class 1 {np.mean(tgt == 1):.2%}, class 2 {np.mean(tgt == 2):.2%}")
    if path is not None:
        cols = 4 if len(tiles) >= 4 else len(tiles)
        scale = max(1, 256 // cfg.size)  # tiles at least 256 px, so captions stay readable
        plot.save(_with_legend(plot.grid(tiles, None, cols=cols, labels=captions, scale=scale)), path)
    return "\n".join(lines)


TASK = Task(
    name="pathfinder-seg",
    config=PathfinderSegConfig,
    summary="Pathfinder-Segmentation: label the pixels of two dashed main paths among distractors",
    keys=_keys,
    fill=_fill,
    resolve=_resolve,
    family="pathfinder",
    revision=REVISION,
    default_num_samples=100_000,
    show=_show,
    card=("M x M uint8 image with two dashed main paths and short distractors; markers at the start of one "
          "main path and at the end of the same (connected) or the other path. Per-pixel targets: 2 on the "
          "main path carrying both markers, 1 on a main path otherwise, 0 elsewhere (markers unlabelled)."),
)
