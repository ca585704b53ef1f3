"""Pathfinder records: the process's constants, one preset (:class:`Params`), its stamps
(:class:`Tables`, built by ``tables.build_tables``) and one thread's scratch
(:class:`Workspace`), with named slots for the workspace's counters and the per-image counts
the kernels hand back. The process itself is described in ``process.py``.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from longsynth.generators.pathfinder.resample import coeffs

MAIN_TRIES = 2000  # restarts of both main paths with local retries
MAIN_TRIES_EXACT = 100_000  # with exact_restarts (theirs: unbounded; 128 px needs ~560 on average)
DISTRACTOR_TRIES = 100  # tries per distractor (theirs: 5, then the distractor is dropped)
IMAGE_TRIES = 16  # whole-image restarts when a distractor cannot be placed
# their mask is float64 uint8/255 (or 1 on the border); ours holds the uint8 level, and
# their float tests become exact level tables: occupied iff v / 255 > 0.3, and a candidate
# collides iff mask / 255 + stamp / 255 >= 1.8
OCCUPIED = min(a for a in range(256) if a / 255.0 > 0.3)
COLLIDE = np.array([[a / 255.0 + b / 255.0 >= 1.8 for b in range(256)] for a in range(256)])
HOT = min(a for a in range(256) if COLLIDE[a].any())  # 204: no mask level below collides with any stamp
TILE = 3  # the workspace's tile flags cover TILE_SIDE^2 mask pixels each (see Workspace.tile)
TILE_SIDE = 1 << TILE
GROW_FAILS = 4  # local retries per main path before both restart
SEED_TRIALS = 3  # their max_paddle_retrial + 1
EXTEND_TRIALS = 3
SEED_DRAWS = 20_000  # rejection draws for a seed tail before the frame counts as full

# one preset, resolved (scalars only)
Params = namedtuple("Params", [
    "M",            # image side
    "border",       # their padding: frame pixels set in the mask
    "L",            # paddle_length (int)
    "aa",           # antialias_scale
    "contrast",     # dash intensity before rescaling
    "continuity",
    "seed_distance",
    "contour_length",
    "distractor_length",
    "distractors",
    "mark_distractors",
    "marker_radius",
    "exact",        # restart both main paths on any failure, as theirs (slow); else local retries
    "drop_after",   # tries after which a distractor is dropped, as theirs (5); 0: place every one
    "grow_fails",   # local retries per main path before both restart (GROW_FAILS)
    "dcontrast",    # distractor dash intensity (the original generator's snake contrast; = contrast in the DLR fork)
    "eight_bit",    # the original generator's 8-bit image formation (scipy.misc.imresize / imsave):
                    #   stamps and markers reduced as 8-bit images, dash layers float32, and the
                    #   image rescaled by scipy's bytescale (v * (255 / peak) + 0.5, floored)
    "labels",       # draw the main paths' layers and the per-pixel labels (Pathfinder-Segmentation)
    "dead_seeds",   # a seed trial whose orientation has T.seed_dead fails, as theirs (see _seed)
    "seed_scan",    # rejection draws for a seed tail before the free pixels are counted by a scan and
                    #   one is drawn among them (the same uniform law, no 20,000 draws over a full
                    #   frame); 0: SEED_DRAWS draws, then the frame counts as full (pathfinder-seg)
])

# every stamp of a preset, stacked over its margins g (arrays padded to the largest)
Tables = namedtuple("Tables", [
    "margins",      # int64 [G]
    "R",            # int64 [G]: stamp half side; a stamp is (2R+1)^2 centred on its start pixel
    "key",          # int64 [G, K, 2]: blown-canvas end offset of the line (dy, dx)
    "line",         # float32 [G, K, S, S]: PIL 'F' output (0..255 plus ringing); eight_bit: 'L' output (0..255)
    "mask",         # uint8 [G, K, S, S]: the dilated line, 8-bit, reduced
    "span",         # int64 [G, K, S, 2]: per stamp row, the columns [j0, j1) where the mask stamp is nonzero
    "lspan",        # int64 [G, K, S, 2]: per stamp row, the columns [j0, j1) where the line stamp is > 0
    "hot",          # int64 [G, K, H, 2]: pixels of a mask stamp >= 0.8 (only these can collide)
    "hspan",        # int64 [G, K, S, 2]: per stamp row, the columns [j0, j1) holding its mask pixels >= HOT
    "hbox",         # int64 [G, K, 4]: rows [i0, i1) and columns [j0, j1) holding its mask pixels >= HOT
    "n_hot",        # int64 [G, K]
    "seed_stamp",   # int64 [G, 360]
    "seed_step",    # float64 [G, 360, 4]: L u(phi) (tail to head) and (L + margin) u(phi + pi) (head to
                    #   pivot), (dy, dx) each: added to absolute coordinates and rounded up, as theirs
    "struct",       # int64 [G, 360, Q, 2]: offsets from the tail checked when seeding
    "n_struct",     # int64 [G, 360]
    "seed_dead",    # int64 [G, 360]: 1 where every struct pixel lies beyond a corner of the frame (see _seed)
    "cand",         # int64 [G, C, 2]: every circle point offset some pivot can give, sorted (their order)
    "cand_stamp",   # int64 [G, C]
    "n_cand",       # int64 [G]
    "ray",          # float64 [G, NR, 2]: their circle samples about a pivot (tables.circle_rays)
    "n_ray",        # int64 [G]
    "reach",        # int64 [G]: the largest |offset| of a circle point (qmap's centre)
    "qmap",         # int64 [G, 2 reach + 1, 2 reach + 1]: circle point offset (dy, dx) + reach -> cand index
    "angle",        # float64 [G, 360 + C]: orientation id -> radians (seeds, then circle points)
    "advance",      # float64 [G, 360 + C, 2]: (L + 2 margin) u(orientation): next pivot = ceil(pivot + this)
    "turn",         # float64 [G, 360 + C, C]: max(cos(min(continuity |turn|, pi/2)), 0)^2, 0 where <= 1e-12
    "live",         # int32 [G, 360 + C, NR]: per orientation, the rays (in their order) that can give a
                    #   circle point of nonzero turn weight; the others only give points of weight 0
    "n_live",       # int64 [G, 360 + C]
    "disk",         # int64 [G, 2m+1, 2]: disk of radius margin as row spans: half-width per row offset

    "circle",       # float64 [Sc, Sc]: marker disk (PIL 'F' output, 0..1 plus ringing; eight_bit: 'L' output / 255)
])

# one thread's scratch (all arrays; counters in ``n``)
Workspace = namedtuple("Workspace", [
    "image",        # float64 [M, M]: every dash and marker
    "layer",        # float64 [2, M, M]: each main path's own dashes
    "mask",         # uint8 [M, M]: their occupancy mask in 1/255 steps (their float64 mask times 255)
    "tile",         # uint8 [2, TM, TM]: per TILE_SIDE^2 block of the mask, 1 where it may hold a
                    #   pixel > 0 (plane 0) or >= HOT (plane 1); 0 guarantees it does not. Set
                    #   by commits, left set by uncommits, reset by _clear: lets the hot loops
                    #   (dilation, collision test, clearing) skip empty blocks
    "dash",         # int64 [ND, 4]: (stamp, row, col, in mask) per slot: path A, B, distractors
    "hist",         # int64 [ND, 3]: the path's pivot (row, col) and orientation id after that dash
    "weight",       # float64 [C]: circle-point weights of one extension
    "marker",       # int64 [NM, 2]: marker pixels: start, end, then distractor markers
    "lzk",          # float64 [M, 6 aa + 2]: PIL's LANCZOS weights of output pixel i of the frame's
                    #   reduction (_coeffs), for markers at the edge; lzx int64 [M, 2] (first input
                    #   pixel, count). The same for every thread and image: computed once
    "lzx",
    "n",            # int64 [N_SLOTS]: counters, read by the names below
])

# Workspace.n slots
DASHES = 0      # dashes placed (main paths, then distractors)
MARKERS = 1     # markers placed (start, end, then distractor markers)
OCCUPIED_PX = 2  # mask pixels > 0.3 (their "free" test counts the rest)
DISTRACTORS = 3  # distractors placed
MAIN_DASHES = 4  # dashes of main path A; MAIN_DASHES + 1: of main path B
CLEAN = 6       # 1 while the mask, tile flags and dash flags are the empty frame's (set by _clear, reset by
                #   a commit): a restart that failed before any commit has nothing to clear
N_SLOTS = 7

# per-image counts the kernels hand back (render_one's ``counts``)
C_CONNECTED = 0      # 1 when both markers lie on one main path
C_ORIGIN_DASHES = 1  # dashes of the main path that carries the start marker
C_OTHER_DASHES = 2   # dashes of the other main path
C_DISTRACTORS = 3    # distractors placed
C_MARGIN = 4         # the image's margin
C_STATUS = 5         # 1 drawn, -1 the main paths do not fit, -2 a distractor does not
N_COUNTS = 6



def workspace(P, T, threads=1):
    """Scratch for ``threads`` threads: every field has a leading thread axis."""
    M, t = P.M, threads
    nd = 2 * P.contour_length + P.distractors * P.distractor_length
    lzk, lzx = np.zeros((M, 6 * P.aa + 2)), np.zeros((M, 2), np.int64)
    for i in range(M):
        lzx[i] = coeffs(i, M * P.aa, float(P.aa), lzk[i])
    return Workspace(
        image=np.zeros((t, M, M)), layer=np.zeros((t, 2, M, M)), mask=np.zeros((t, M, M), np.uint8),
        tile=np.zeros((t, 2, (M + TILE_SIDE - 1) >> TILE, (M + TILE_SIDE - 1) >> TILE), np.uint8),
        dash=np.zeros((t, nd, 4), np.int64), hist=np.zeros((t, nd, 3), np.int64),
        weight=np.zeros((t, T.cand.shape[1])), marker=np.zeros((t, 2 + P.distractors, 2), np.int64),
        lzk=np.repeat(lzk[None], t, axis=0), lzx=np.repeat(lzx[None], t, axis=0), n=np.zeros((t, N_SLOTS), np.int64))


@njit(cache=True)
def thread_view(works, t):
    """Thread t's Workspace (views into the stacked scratch)."""
    return Workspace(works.image[t], works.layer[t], works.mask[t], works.tile[t], works.dash[t], works.hist[t],
                     works.weight[t], works.marker[t], works.lzk[t], works.lzx[t], works.n[t])
