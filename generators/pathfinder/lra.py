"""Classic Pathfinder (Long Range Arena): is there one path between the two markers?

An M x M uint8 image holds two main paths of ``contour_length`` dashes and ``distractors``
short paths of ``distractor_length`` dashes on black; round markers sit at the start of
one main path and at the end of the same path (label 1, *connected*) or of the other one
(label 0), with probability 1/2 each. The target is that one label. Pathfinder in LRA is
``--size 32 --difficulty hard``; Path-X is ``--size 128 --difficulty hard``.

Presets (``size`` x ``difficulty``) are the settings LRA generated its release with: the
settings block of each resolution from LRA's TFDS builders (``lra_benchmarks/data/
pathfinder.py`` in google-research/long-range-arena, docstrings of Pathfinder32/64/128/256),
everything else from the defaults of the original generator's wrapper (``Args`` in
drewlinsley/pathfinder ``snakes2_wrapper.py``), and the three difficulties from the wrapper's
dataset sections: ``curv_baseline`` (contour_length 6), ``curv_contour_length_9`` and
``curv_contour_length_14``, with distractor_length = contour_length // 3 and
distractors = N // distractor_length (Python 2 integer division; N = 20 / 22 / 35 / 30).

    size  paddle_length thickness margin continuity seed_dist marker aa border contrast (main / distractors) N
    32    2             0.5       1      1.0        7         1.5    2  1      1.5 / 2.0                     20
    64    5             1         1      1.8        12        2.5    2  1      0.8 / 0.8                     22
    128   5             1.5       2..3   1.8        20        3      2  1      0.9 / 0.9                     35
    256   5             2         3      1.8        27        5      2  22     1.0 / 1.0                     30

    difficulty  contour_length  distractor_length  distractors at 32 / 64 / 128 / 256
    easy        6               2                  10 / 11 / 17 / 15
    medium      9               3                   6 /  7 / 11 / 10
    hard        14              4                   5 /  5 /  8 /  7

Image formation is the original generator's (8-bit stamps as ``scipy.misc.imresize`` makes
them, ``scipy.misc.imsave``'s rescaling; no marker on distractors), placement its process
(``generators/pathfinder/process.py``), with its distractor dropping (``distractor_tries``
5), its restarts of both main paths on any failure (``exact_restarts``) and its rounding of
absolute coordinates. docs/tasks/pathfinder.md ("Classic Pathfinder") cites each value's
source.

Keys: ``inputs`` uint8 [M, M]; ``targets`` uint8 (): 1 connected, 0 not; extras
``connected`` bool, ``marker_centers`` int32 [2, 2] (row, col of the start and end marker),
``main_dashes`` int32 [2] (marked path first), ``distractors`` int32 (drawn), ``margin``
uint8, ``dashes`` int32 [2 contour_length + distractors distractor_length, 4] (as
pathfinder-seg; rows of dropped distractors are -1), ``peak`` float32.

Worked example: ``longsynth.sample("pathfinder", 0, seed=0)`` (32 px, hard) gives a
32 x 32 ``inputs`` whose brightest pixel is 255, ``targets`` 0 or 1 equal to
``connected``, ``marker_centers`` of shape [2, 2] and ``dashes`` of shape [48, 4].
"""
import dataclasses
from dataclasses import dataclass

import numpy as np

from longsynth.generators.pathfinder.glue import check_geometry, n_dashes, n_markers, render_into, render_params
from longsynth.generators.pathfinder.records import C_CONNECTED
from longsynth.task import KeySpec, Task, param

SIZES = (32, 64, 128, 256)
DIFFICULTIES = ("easy", "medium", "hard")
DIRS = {"easy": "curv_baseline", "medium": "curv_contour_length_9", "hard": "curv_contour_length_14"}
CONTOUR = {"easy": 6, "medium": 9, "hard": 14}
SEED_SCAN = 64  # rejection draws for a seed tail before the free pixels are counted (see the renderer)
RELEASE_COUNT = 200_000  # images per difficulty in LRA's release (S4: 600,000 for the three)

# LRA's settings block per resolution; dist_n is N in distractors = N // distractor_length
SIZE_PRESETS = {
    32: dict(paddle_length=2, paddle_thickness=0.5, margin_min=1, margin_max=1, continuity=1.0,
             seed_distance=7, marker_radius=1.5, antialias_scale=2, border=1, contrast=1.5,
             distractor_contrast=2.0, dist_n=20),
    64: dict(paddle_length=5, paddle_thickness=1.0, margin_min=1, margin_max=1, continuity=1.8,
             seed_distance=12, marker_radius=2.5, antialias_scale=2, border=1, contrast=0.8,
             distractor_contrast=0.8, dist_n=22),
    128: dict(paddle_length=5, paddle_thickness=1.5, margin_min=2, margin_max=3, continuity=1.8,
              seed_distance=20, marker_radius=3.0, antialias_scale=2, border=1, contrast=0.9,
              distractor_contrast=0.9, dist_n=35),
    256: dict(paddle_length=5, paddle_thickness=2.0, margin_min=3, margin_max=3, continuity=1.8,
              seed_distance=27, marker_radius=5.0, antialias_scale=2, border=22, contrast=1.0,
              distractor_contrast=1.0, dist_n=30),
}


def preset(size, difficulty):
    """Every preset field for one LRA set (see the module docstring)."""
    p = dict(SIZE_PRESETS[size])
    n = p.pop("dist_n")
    cl = CONTOUR[difficulty]
    p.update(contour_length=cl, distractor_length=cl // 3, distractors=n // (cl // 3), mark_distractors=False)
    return p


@dataclass(frozen=True)
class LraPathfinderConfig:
    """Classic Pathfinder parameters; None = the (size, difficulty) preset's value.

    Example: ``LraPathfinderConfig(size=128, difficulty="hard")`` is Path-X's set
    (``curv_contour_length_14`` at 128 px: 14 dashes per path, 8 distractors of 4).
    """

    size: int = param(32, "image side M in pixels: 32 (LRA Pathfinder), 64, 128 (Path-X), 256", choices=SIZES)
    difficulty: str = param("hard", "LRA set: easy (curv_baseline), medium (curv_contour_length_9), "
                                    "hard (curv_contour_length_14; LRA's Pathfinder and Path-X)", choices=DIFFICULTIES)
    paddle_length: int | None = param(None, "dash length in pixels (preset 2 / 5 / 5 / 5)", lo=1, hi=256)
    paddle_thickness: float | None = param(None, "dash line width in pixels; times antialias_scale must be whole "
                                                 "(preset 0.5 / 1 / 1.5 / 2)", lo=0.5, hi=64.0)
    margin_min: int | None = param(None, "smallest gap between consecutive dashes, drawn per image "
                                         "(preset 1 / 1 / 2 / 3)", lo=1, hi=64)
    margin_max: int | None = param(None, "largest gap between consecutive dashes, drawn per image "
                                         "(preset 1 / 1 / 3 / 3)", lo=1, hi=64)
    continuity: float | None = param(None, "turn penalty: the largest turn is pi / (2 continuity) "
                                           "(preset 1.0 / 1.8 / 1.8 / 1.8)", lo=1.0, hi=100.0)
    contour_length: int | None = param(None, "dashes per main path (easy 6, medium 9, hard 14)", lo=1, hi=1000)
    distractor_length: int | None = param(None, "dashes per distractor path (contour_length // 3)", lo=1, hi=1000)
    distractors: int | None = param(None, "distractor paths "
                                          "(N // distractor_length, N = 20 / 22 / 35 / 30)", lo=0, hi=1000)
    seed_distance: int | None = param(None, "distance between the start tips of the two main paths "
                                            "(preset 7 / 12 / 20 / 27)", lo=0, hi=4096)
    marker_radius: float | None = param(None, "radius of the round markers in pixels "
                                              "(preset 1.5 / 2.5 / 3 / 5)", lo=0.5, hi=64.0)
    antialias_scale: int | None = param(None, "drawing resolution relative to the image (preset 2)", lo=1, hi=8)
    contrast: float | None = param(None, "main-path dash intensity relative to the markers "
                                         "(preset 1.5 / 0.8 / 0.9 / 1)", lo=0.01, hi=8.0)
    distractor_contrast: float | None = param(None, "distractor dash intensity relative to the markers "
                                                    "(preset 2 / 0.8 / 0.9 / 1)", lo=0.01, hi=8.0)
    mark_distractors: bool | None = param(None, "give every distractor a marker, as the DLR fork does (preset off)")
    border: int | None = param(None, "frame pixels that no dash may cover "
                                     "(their padding; preset 1 / 1 / 1 / 22)", lo=0, hi=64)
    distractor_tries: int = param(5, "drop a distractor after this many failed tries (the original generator: 5); "
                                     "0: place every distractor", lo=0, hi=1000)
    exact_restarts: bool = param(True, "restart both main paths on any failure, as the original generator; "
                                       "off: local retries (faster, shorter main paths at 128 px; "
                                       "docs/tasks/pathfinder.md)")


PRESET_FIELDS = tuple(preset(32, "hard"))


def _resolve(cfg):
    """Fill None fields from the (size, difficulty) preset, then check the combined values."""
    p = preset(cfg.size, cfg.difficulty)
    filled = {k: (p[k] if getattr(cfg, k) is None else getattr(cfg, k)) for k in p}
    return check_geometry(dataclasses.replace(cfg, **filled), "the generator's rule")


def _keys(cfg):
    M = cfg.size
    return {
        "inputs": KeySpec("uint8", (M, M), doc="grayscale image"),
        "targets": KeySpec("uint8", (), doc="1 when both markers lie on the same path, else 0", bounds=(0, 1)),
        "connected": KeySpec("bool", (), doc="both markers lie on the same main path (targets as bool)"),
        "marker_centers": KeySpec("int32", (n_markers(cfg), 2),
                                  doc="(row, col) of the markers: start, end (then distractor markers when marked)"),
        "main_dashes": KeySpec("int32", (2,), doc="dashes drawn per main path (marked path first)"),
        "distractors": KeySpec("int32", (), doc="distractor paths drawn"),
        "margin": KeySpec("uint8", (), doc="gap between consecutive dashes in this image"),
        "dashes": KeySpec("int32", (n_dashes(cfg), 4),
                          doc="(row, col, dr, dc) per dash: start pixel and line end in 1/antialias_scale pixels; "
                              "-1 for dropped distractors"),
        "peak": KeySpec("float32", (), doc="maximum of the composed image before rescaling to 255"),
    }


def params(cfg):
    """The renderer's preset record and (8-bit) stamp tables for a resolved config."""
    return render_params(cfg, dcontrast=cfg.distractor_contrast, eight_bit=True, labels=False,
                         dead_seeds=True, seed_scan=SEED_SCAN)


def _fill(cfg, seed, split, start, out, fixed):
    labels = np.zeros((out["inputs"].shape[0], 1, 1), dtype=np.uint8)  # unused: no per-pixel labels here
    counts = render_into(cfg, params(cfg), seed, split, start, out, labels)
    out["targets"][:] = counts[:, C_CONNECTED]


def _show(samples, cfg, path):
    """PNG grid at path (when given), each image captioned with its label; one line per sample."""
    from longsynth import plot

    tiles, captions, lines = [], [], []
    for k, s in enumerate(samples):
        img = np.asarray(s["inputs"])
        state = "connected" if bool(s["connected"]) else "disconnected"
        tiles.append(np.repeat(img[:, :, None], 3, axis=2))
        captions.append(f"#{k} label {int(s['targets'])}")
        lines.append(f"sample {k}: label {int(s['targets'])} ({state}), margin {int(s['margin'])}, "
                     f"main dashes {np.asarray(s['main_dashes']).tolist()}, {int(s['distractors'])} distractors, "
                     f"nonzero {np.mean(img > 0):.2%}")
    if path is not None:
        cols = min(4, len(tiles))
        scale = max(1, 192 // cfg.size)  # tiles at least 192 px, so captions stay readable
        plot.save(plot.grid(tiles, None, cols=cols, labels=captions, scale=scale), path)
    return "\n".join(lines)


TASK = Task(
    name="pathfinder",
    config=LraPathfinderConfig,
    summary="Pathfinder (LRA) and Path-X: are the two markers on one dashed path? (binary)",
    keys=_keys,
    fill=_fill,
    resolve=_resolve,
    family="pathfinder",
    revision=2,  # 2: exact restarts by default, their rounding of absolute coordinates
    default_num_samples=RELEASE_COUNT,
    split_percent=(80, 10, 10),
    show=_show,
    card=("M x M uint8 image (LRA Pathfinder: 32 px; Path-X: 128 px) with two dashed main paths and short "
          "distractors; markers at the start of one main path and at the end of the same (target 1) or the "
          "other path (target 0). Generated with the settings of LRA's release (original generator of "
          "drewlinsley/pathfinder)."),
)
