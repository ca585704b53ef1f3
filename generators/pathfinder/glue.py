"""What the two Pathfinder tasks share: the geometry check of a resolved config, the row
counts of their dash and marker extras, the renderer's records for a config, and the call
that renders a batch into a task's output arrays and writes the counted extras.
"""
import numba
import numpy as np

from longsynth.errors import LongsynthError
from longsynth.generators.pathfinder import records as rec
from longsynth.generators.pathfinder.process import render_batch
from longsynth.generators.pathfinder.tables import build_tables


def check_geometry(cfg, rule):
    """LongsynthError unless a resolved config's margins, stroke and dash fit its image
    (shared by pathfinder-seg and the classic pathfinder task); returns cfg."""
    if cfg.margin_min > cfg.margin_max:
        raise LongsynthError(f"margin_min: must be <= margin_max ({cfg.margin_max}), got {cfg.margin_min}")
    width = cfg.paddle_thickness * cfg.antialias_scale
    if width != round(width):
        raise LongsynthError(f"paddle_thickness: times antialias_scale must be a whole number of pixels "
                             f"({rule}); got {cfg.paddle_thickness} x {cfg.antialias_scale}")
    reach = cfg.paddle_length + 2 * cfg.margin_max + cfg.paddle_thickness + 2 * cfg.border
    if 2 * reach >= cfg.size:
        raise LongsynthError(f"paddle_length: a dash of {cfg.paddle_length} px with margin {cfg.margin_max} "
                             f"and border {cfg.border} does not fit a {cfg.size} px image")
    # the second path's tail is seed_distance from the first's, and its head and pivot lie
    # in the frame within reach (< size / 2) of it: beyond the diagonal plus that, never
    # (refused here, not after every sample's restarts)
    if cfg.seed_distance >= 2 * cfg.size:
        raise LongsynthError(f"seed_distance: {cfg.seed_distance} px between the main paths' start tips can never "
                             f"fit a {cfg.size} px image (must be < {2 * cfg.size})")
    return cfg


def n_dashes(cfg):
    return 2 * cfg.contour_length + cfg.distractors * cfg.distractor_length


def n_markers(cfg):
    return 2 + (cfg.distractors if cfg.mark_distractors else 0)



def render_params(cfg, *, dcontrast, eight_bit, labels, dead_seeds, seed_scan):
    """Params and stamp tables of a resolved pathfinder config; the keywords are what the
    two tasks set differently (distractor contrast, 8-bit formation as the original
    generator, per-pixel labels, its dead seed orientations and seed scan)."""
    P = rec.Params(M=cfg.size, border=cfg.border, L=cfg.paddle_length, aa=cfg.antialias_scale,
                      contrast=float(cfg.contrast), continuity=float(cfg.continuity),
                      seed_distance=cfg.seed_distance, contour_length=cfg.contour_length,
                      distractor_length=cfg.distractor_length, distractors=cfg.distractors,
                      mark_distractors=bool(cfg.mark_distractors), marker_radius=float(cfg.marker_radius),
                      exact=bool(cfg.exact_restarts), drop_after=cfg.distractor_tries,
                      grow_fails=rec.GROW_FAILS,
                      dcontrast=float(dcontrast), eight_bit=eight_bit, labels=labels, dead_seeds=dead_seeds,
                      seed_scan=seed_scan)
    margins = tuple(range(cfg.margin_min, cfg.margin_max + 1))
    T = build_tables(cfg.paddle_length, float(cfg.paddle_thickness), margins, cfg.antialias_scale,
                     float(cfg.marker_radius), float(cfg.continuity), eight_bit=eight_bit)
    return P, T


def render_into(cfg, PT, seed, split, start, out, labels):
    """Render samples start.. into ``out`` (labels: the per-pixel label array, or a dummy
    [n, 1, 1] where the task has none) and write the counted extras; one line naming the
    part that does not fit when a sample cannot be drawn."""
    P, T = PT
    count = out["inputs"].shape[0]
    works = rec.workspace(P, T, threads=max(1, min(numba.get_num_threads(), count)))
    counts = np.zeros((count, rec.N_COUNTS), dtype=np.int32)
    markers = np.zeros((count, 2 + cfg.distractors, 2), dtype=np.int32)
    render_batch(seed, split, start, P, T, works, out["inputs"], labels, out["dashes"],
                        markers, counts, out["peak"])
    bad = np.nonzero(counts[:, rec.C_STATUS] != 1)[0]
    if bad.size:
        i = int(bad[0])
        if counts[i, rec.C_STATUS] == -1:
            raise LongsynthError(
                f"contour_length: the two main paths of sample {start + i} do not fit in {cfg.size} x {cfg.size} px "
                f"({rec.MAIN_TRIES_EXACT if cfg.exact_restarts else rec.MAIN_TRIES} restarts); "
                f"reduce contour_length, paddle_length, margin or seed_distance")
        raise LongsynthError(
            f"distractors: could not place every distractor of sample {start + i} in {cfg.size} x {cfg.size} px; "
            f"reduce distractors or distractor_length, or let them drop with distractor_tries=5")
    out["connected"][:] = counts[:, rec.C_CONNECTED] == 1
    out["main_dashes"][:] = counts[:, rec.C_ORIGIN_DASHES:rec.C_OTHER_DASHES + 1]
    out["distractors"][:] = counts[:, rec.C_DISTRACTORS]
    out["margin"][:] = counts[:, rec.C_MARGIN]
    out["marker_centers"][:] = markers[:, :n_markers(cfg)]
    if cfg.distractor_tries:  # dropped distractors leave rows of -1
        for i in np.nonzero(counts[:, rec.C_DISTRACTORS] < cfg.distractors)[0]:
            out["dashes"][i, 2 * cfg.contour_length + counts[i, rec.C_DISTRACTORS] * cfg.distractor_length:] = -1
            if cfg.mark_distractors:
                out["marker_centers"][i, 2 + counts[i, rec.C_DISTRACTORS]:] = -1
    return counts

