"""Pathfinder renderer: the DLR authors' image formation and placement process, fast.

Shared by Pathfinder-Segmentation (``generators/pathfinder.py``) and, later, classic
Pathfinder. Two layers:

* :func:`build_tables` (Python, once per preset and process) draws every dash the process
  can place, with PIL exactly as the authors' ``draw_line_n_mask`` does: a line of width
  ``round(thickness * aa)`` on a float canvas ``aa`` times finer, reduced with PIL's
  LANCZOS filter (the *line stamp*), and the same line dilated by a disk of radius
  ``margin * aa``, as 8-bit, reduced the same way (the *mask stamp*). The set is finite:
  a path's first dash points at a whole number of degrees, every later dash at one of the
  integer offsets on the circle of radius ``paddle_length + margin``. The marker disk is
  drawn once the same way. So the kernels never resample anything: they add stamps.
* Numba kernels (:func:`render_one`, :func:`render_batch`) run the authors' placement
  process on those stamps with local checks only (the authors dilate the whole frame for
  every candidate). A preset is one :class:`Params` record, the stamps one
  :class:`Tables` record, a thread's scratch one :class:`Workspace`.

The process of one image (draws from ``stream(seed, split, index)``; the authors'
``snakes2.from_wrapper`` / ``snakes.py``):
    1. connected = randint(2); margin = margins[randint(len(margins))]
    2. main paths (restarted from scratch on any failure, as theirs, at most MAIN_TRIES):
       mask := the ``border`` frame set to 1.
       a. seed A: up to 3 trials: orientation phi = randint(360) - 180 degrees; its tail
          is uniform over the pixels p where every pixel of the seed's *struct* (the mask
          stamp's full-value pixels shifted by (1, 1)) placed at p avoids the mask (> 0.3)
          and a band of 2 seed_distance at the frame's edge; head = tail + ceil(L u(phi)),
          pivot = head - ceil((L + margin) u(phi)) must lie in the frame.
       b. seed B: up to 3 trials: phi = randint(360) - 180; tail = round(tail_A +
          seed_distance u(randint(360) degrees)); head and pivot in the frame (nothing
          else is checked, as theirs).
       c. contour_length - 1 rounds, each extending A then B. Extending: pivot +=
          ceil((L + 2 margin) u(orientation)); every integer point on the circle of
          radius L + margin about the pivot (their table) gets weight
          max(cos(min(continuity |turn|, pi/2)), 0)^2 (1 - max of the mask over a disk of
          radius margin about it); a point is drawn by weight, up to 3 times, until the
          dash from it back towards the pivot has a mask stamp with max(mask + stamp) <
          1.8; then the path's previous dash joins the mask. A dead end (total weight <
          1e-4) or 3 collisions fail the round.
       d. B's last dash joins the mask (A's does not: theirs).
    3. distractors in order, each up to DISTRACTOR_TRIES times (theirs: 5, then dropped;
       we place every one unless drop_after > 0 asks for their rule): if under 1% of the frame is free (mask <= 0.3) the try fails;
       seed as 2a with a 1-pixel band instead of 2 seed_distance, a marker at its pivot
       (mark_distractors), then distractor_length - 1 extensions as 2c; a failed try
       leaves no trace; a placed one adds its last dash to the mask. A distractor that
       cannot be placed restarts the image (at most IMAGE_TRIES).
    4. origin = randint(2): the start marker sits at the tail of main path ``origin``'s
       seed, the end marker at the last head of the same path (connected) or the other.
    5. composition (no draws): image = max of every line stamp * contrast and every marker
       disk; peak = its maximum; 8-bit value = rint(255 v / peak); a main path's pixels
       are those where its own layer (its dashes only) is nonzero at 8 bits.
If every attempt fails the kernel returns status 1 and the caller raises.
"""
import math
from collections import namedtuple
from functools import lru_cache

import numpy as np
from numba import njit, prange

from longsynth.rng import randint, stream, uniform

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
BACKOFF = 1  # the k-th retry of a path removes BACKOFF ** (k - 1) of its last dashes
REGROWS = 0  # a path out of retries grows again from its first dash this often before both restart
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
    "backoff",      # the k-th retry of a path removes backoff ** (k - 1) of its last dashes (BACKOFF)
    "regrows",      # times a path that used up its retries grows again from its first dash (REGROWS)
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
    "seed_head",    # int64 [G, 360, 2]: head - tail
    "seed_pivot",   # int64 [G, 360, 2]: pivot - tail
    "struct",       # int64 [G, 360, Q, 2]: offsets from the tail checked when seeding
    "n_struct",     # int64 [G, 360]
    "seed_dead",    # int64 [G, 360]: 1 where every struct pixel lies beyond a corner of the frame (see _seed)
    "cand",         # int64 [G, C, 2]: circle points relative to the pivot (their order)
    "cand_stamp",   # int64 [G, C]
    "n_cand",       # int64 [G]
    "angle",        # float64 [G, 360 + C]: orientation id -> radians (seeds, then circle points)
    "advance",      # int64 [G, 360 + C, 2]: next pivot - pivot for a path heading that way
    "turn",         # float64 [G, 360 + C, C]: max(cos(min(continuity |turn|, pi/2)), 0)^2
    "ahead",        # int64 [G, 360 + C, C]: circle points with turn weight > 1e-12, then -1
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
    "n",            # int64 [6]: dashes placed, markers placed, mask pixels > 0.3, distractors placed,
                    #            dashes of main path A, of main path B, main-path restarts, extensions tried
])


# ---------------------------------------------------------------- stamps (Python, PIL)


def _ceil_off(v, base=100):
    """Their translate_coord rounding: ceil(p + v) - p for a pixel p far from 0 (base 100),
    or for p = base exactly (a blown canvas's centre: where v is an integer up to rounding,
    e.g. 4 cos(120 deg) = -1.9999999999999991, the float sum depends on p)."""
    return int(math.ceil(base + v)) - base


def _flip(a):
    return a + math.pi if a < 0 else a - math.pi


def _draw_dash(L, th, m, aa, dyb, dxb, eight_bit=False):
    """(line float32 [S,S], mask uint8 [S,S]) of the line from the stamp's centre to the
    blown-canvas offset (dyb, dxb), as their draw_line_n_mask makes it. eight_bit: the line
    reduced as the original generator's scipy.misc.imresize does (the 0/255 canvas as an
    8-bit image; PIL's 8-bit LANCZOS clips and rounds each pass)."""
    from PIL import Image, ImageDraw
    from scipy.ndimage import distance_transform_edt

    R = L + int(math.ceil(th)) + m
    Sb, cb, S = 2 * R * aa + 1, R * aa, 2 * R + 1
    im = Image.new("F", (Sb, Sb), "black")
    ImageDraw.Draw(im).line([(cb, cb), (cb + dxb, cb + dyb)], fill="white", width=int(round(th * aa)))
    if eight_bit:
        line = np.asarray(im.convert("L").resize((S, S), Image.LANCZOS), dtype=np.float32)
    else:
        line = np.asarray(im.resize((S, S), Image.LANCZOS), dtype=np.float32)
    lit = np.asarray(im) > 0
    dist = distance_transform_edt(~lit) if lit.any() else np.full(lit.shape, np.inf)
    dil = np.where(dist <= m * aa + 1e-9, 255, 0).astype(np.uint8)
    mask = np.asarray(Image.fromarray(dil, mode="L").resize((S, S), Image.LANCZOS), dtype=np.uint8)
    return line, mask


def _circle(radius, aa, eight_bit=False):
    """Marker disk as their draw_circle makes it, on a canvas just large enough (float64).
    eight_bit: as the original's (scipy.misc.imresize of the 0/1 disk: bytescaled to 0/255,
    reduced as an 8-bit image, then / 255)."""
    from PIL import Image

    K = int(math.ceil(radius)) + 4
    n = (2 * K + 1) * aa
    y, x = np.ogrid[-K * aa:n - K * aa, -K * aa:n - K * aa]
    blown = np.where(x**2 + y**2 <= (radius * aa) ** 2, 1.0, 0.0)
    if eight_bit:
        small = Image.fromarray((blown * 255).astype(np.uint8), mode="L").resize((2 * K + 1, 2 * K + 1), Image.LANCZOS)
        return np.asarray(small, dtype=np.float64) / 255
    small = Image.fromarray(blown).resize((2 * K + 1, 2 * K + 1), Image.LANCZOS)
    return np.asarray(small, dtype=np.float32).astype(np.float64)


def circle_points(step):
    """Their get_coords_cmf table: distinct integer offsets on the circle of radius step."""
    deg = 360.0 / (2 * step * np.pi)
    a = np.arange(0, 360, deg) * np.pi / 180
    pts = np.stack([np.floor(step * np.sin(a)), np.floor(step * np.cos(a))], axis=1).astype(np.int64)
    return np.unique(pts, axis=0)


@lru_cache(maxsize=8)
def build_tables(L, thickness, margins, aa, marker_radius, continuity, eight_bit=False, canvas_base=False):
    """Every stamp of a preset (see the module docstring); margins is a tuple. eight_bit:
    line stamps and the marker disk as the original generator makes them (8-bit).
    canvas_base: a dash's end on its blown canvas rounded from the canvas's centre R aa, as
    theirs (else from 100: pathfinder-seg's revision 2, which differs at a few angles)."""
    per = []
    for m in margins:
        R = L + int(math.ceil(thickness)) + m
        cb = R * aa if canvas_base else 100
        keys, index = [], {}

        def stamp(dyb, dxb):
            k = (dyb, dxb)
            if k not in index:
                index[k] = len(keys)
                keys.append(k)
            return index[k]

        seed_stamp, seed_head, seed_pivot, angles, advance = [], [], [], [], []
        for deg in range(-180, 180):
            phi = deg * np.pi / 180
            seed_stamp.append(stamp(_ceil_off(L * aa * np.sin(phi), cb), _ceil_off(L * aa * np.cos(phi), cb)))
            head = (_ceil_off(L * np.sin(phi)), _ceil_off(L * np.cos(phi)))
            back = phi + np.pi if phi + np.pi < np.pi else phi - np.pi
            seed_head.append(head)
            seed_pivot.append((head[0] + _ceil_off((L + m) * np.sin(back)), head[1] + _ceil_off((L + m) * np.cos(back))))
            angles.append(phi)
        cand = circle_points(L + m)
        cand_stamp = []
        for dy, dx in cand:
            a = math.atan2(dy, dx)
            f = _flip(a)
            cand_stamp.append(stamp(_ceil_off(L * aa * np.sin(f), cb), _ceil_off(L * aa * np.cos(f), cb)))
            angles.append(a)
        for a in angles:
            advance.append((_ceil_off((L + 2 * m) * np.sin(a)), _ceil_off((L + 2 * m) * np.cos(a))))
        drawn = [_draw_dash(L, thickness, m, aa, dy, dx, eight_bit) for dy, dx in keys]
        structs = []
        for deg in range(360):
            mk = drawn[seed_stamp[deg]][1]
            a, b = np.nonzero(mk == 255)
            off = np.stack([a - R + 1, b - R + 1], axis=1)
            keep = np.all((off >= -(L + m)) & (off <= L + m), axis=1)  # the struct window
            structs.append(off[keep])
        # their cv2.dilate by the struct gives -inf (no tap inside the frame) at a corner of
        # the frame when every tap lies beyond it: their coordinate search then finds nothing
        dead = []
        for st in structs:
            oy, ox = st[:, 0], st[:, 1]
            dead.append(any(bool(np.all((sy * oy >= 1) | (sx * ox >= 1))) for sy in (1, -1) for sx in (1, -1)))
        rows = [(dy, int(np.floor(np.sqrt(m * m - dy * dy)))) for dy in range(-m, m + 1)]  # x^2 + y^2 <= m^2
        per.append(dict(R=R, keys=keys, drawn=drawn, seed_stamp=seed_stamp, seed_head=seed_head,
                        seed_pivot=seed_pivot, structs=structs, cand=cand, cand_stamp=cand_stamp,
                        angles=angles, advance=advance, disk=rows, dead=dead))
    G = len(per)
    S = max(2 * p["R"] + 1 for p in per)
    K = max(len(p["keys"]) for p in per)
    C = max(len(p["cand"]) for p in per)
    Q = max(len(s) for p in per for s in p["structs"])
    H = max(int(np.count_nonzero(mk >= 204)) for p in per for _, mk in p["drawn"])
    t = dict(
        margins=np.array(margins, dtype=np.int64), R=np.array([p["R"] for p in per], dtype=np.int64),
        key=np.zeros((G, K, 2), np.int64), line=np.zeros((G, K, S, S), np.float32),
        mask=np.zeros((G, K, S, S), np.uint8), span=np.zeros((G, K, S, 2), np.int64),
        lspan=np.zeros((G, K, S, 2), np.int64),
        hot=np.zeros((G, K, H, 2), np.int64), hspan=np.zeros((G, K, S, 2), np.int64),
        hbox=np.zeros((G, K, 4), np.int64),
        n_hot=np.zeros((G, K), np.int64), seed_stamp=np.zeros((G, 360), np.int64),
        seed_head=np.zeros((G, 360, 2), np.int64), seed_pivot=np.zeros((G, 360, 2), np.int64),
        struct=np.zeros((G, 360, Q, 2), np.int64), n_struct=np.zeros((G, 360), np.int64),
        seed_dead=np.zeros((G, 360), np.int64),
        cand=np.zeros((G, C, 2), np.int64), cand_stamp=np.zeros((G, C), np.int64),
        n_cand=np.zeros(G, np.int64), angle=np.zeros((G, 360 + C)), advance=np.zeros((G, 360 + C, 2), np.int64),
        disk=np.full((G, 2 * max(margins) + 1, 2), -1, np.int64), circle=_circle(marker_radius, aa, eight_bit))
    for g, p in enumerate(per):
        s = 2 * p["R"] + 1
        for k, ((dy, dx), (ln, mk)) in enumerate(zip(p["keys"], p["drawn"])):
            t["key"][g, k] = (dy, dx)
            t["line"][g, k, :s, :s] = ln
            t["mask"][g, k, :s, :s] = mk
            for i in range(s):
                nz = np.nonzero(mk[i])[0]
                if len(nz):
                    t["span"][g, k, i] = (nz[0], nz[-1] + 1)
                pos = np.nonzero(ln[i] > 0.0)[0]  # draw_dash skips values <= 0
                if len(pos):
                    t["lspan"][g, k, i] = (pos[0], pos[-1] + 1)
            for i in range(s):
                nz = np.nonzero(mk[i] >= HOT)[0]
                if len(nz):
                    t["hspan"][g, k, i] = (nz[0], nz[-1] + 1)
            hi, hj = np.nonzero(mk >= HOT)
            if len(hi):
                t["hbox"][g, k] = (hi.min(), hi.max() + 1, hj.min(), hj.max() + 1)
            hot = np.argwhere(mk >= 204)  # 204 / 255 = 0.8: mask + stamp >= 1.8 needs stamp >= 0.8
            t["hot"][g, k, :len(hot)] = hot
            t["n_hot"][g, k] = len(hot)
        t["seed_stamp"][g] = p["seed_stamp"]
        t["seed_head"][g] = p["seed_head"]
        t["seed_pivot"][g] = p["seed_pivot"]
        for d, st in enumerate(p["structs"]):
            t["struct"][g, d, :len(st)] = st
            t["n_struct"][g, d] = len(st)
            t["seed_dead"][g, d] = p["dead"][d]
        c = len(p["cand"])
        t["cand"][g, :c] = p["cand"]
        t["cand_stamp"][g, :c] = p["cand_stamp"]
        t["n_cand"][g] = c
        t["angle"][g, :len(p["angles"])] = p["angles"]
        t["advance"][g, :len(p["advance"])] = p["advance"]
        for row, (dy, half) in enumerate(p["disk"]):
            t["disk"][g, row] = (dy, half)
    t["turn"] = np.zeros((G, 360 + C, C))
    t["ahead"] = np.full((G, 360 + C, C), -1, np.int64)
    for g, p in enumerate(per):
        c = len(p["cand"])
        a = np.asarray(p["angles"])
        delta = np.abs(a[:, None] - a[None, 360:])
        delta = np.minimum(delta, 2 * np.pi - delta)
        w = np.maximum(np.cos(np.minimum(delta * continuity, 0.5 * np.pi)), 0) ** 2
        t["turn"][g, :len(a), :c] = w
        for o in range(len(a)):
            nz = np.nonzero(w[o] > 1e-12)[0]  # cos(pi/2)^2 = 4e-33 is their "zero": never drawn
            t["ahead"][g, o, :len(nz)] = nz
    for v in t.values():
        v.setflags(write=False)
    return Tables(**t)


def workspace(P, T, threads=1):
    """Scratch for ``threads`` threads: every field has a leading thread axis."""
    M, t = P.M, threads
    nd = 2 * P.contour_length + P.distractors * P.distractor_length
    lzk, lzx = np.zeros((M, 6 * P.aa + 2)), np.zeros((M, 2), np.int64)
    for i in range(M):
        lzx[i] = _coeffs(i, M * P.aa, float(P.aa), lzk[i])
    return Workspace(
        image=np.zeros((t, M, M)), layer=np.zeros((t, 2, M, M)), mask=np.zeros((t, M, M), np.uint8),
        tile=np.zeros((t, 2, (M + TILE_SIDE - 1) >> TILE, (M + TILE_SIDE - 1) >> TILE), np.uint8),
        dash=np.zeros((t, nd, 4), np.int64), hist=np.zeros((t, nd, 3), np.int64),
        weight=np.zeros((t, T.cand.shape[1])), marker=np.zeros((t, 2 + P.distractors, 2), np.int64),
        lzk=np.repeat(lzk[None], t, axis=0), lzx=np.repeat(lzx[None], t, axis=0), n=np.zeros((t, 12), np.int64))


@njit(cache=True)
def thread_view(works, t):
    """Thread t's Workspace (views into the stacked scratch)."""
    return Workspace(works.image[t], works.layer[t], works.mask[t], works.tile[t], works.dash[t], works.hist[t],
                     works.weight[t], works.marker[t], works.lzk[t], works.lzx[t], works.n[t])


# ---------------------------------------------------------------- kernels: stamps on the frame


@njit(cache=True)
def _any_tile(W, plane, y0, y1, x0, x1):
    """Whether a tile flag of ``plane`` is set over mask rows [y0, y1), columns [x0, x1) (non-empty)."""
    for ty in range(y0 >> TILE, ((y1 - 1) >> TILE) + 1):
        for tx in range(x0 >> TILE, ((x1 - 1) >> TILE) + 1):
            if W.tile[plane, ty, tx]:
                return True
    return False


@njit(cache=True)
def _mark_tiles(W, plane, y, x0, x1):
    """Flag the tiles of mask row y, columns [x0, x1) (non-empty)."""
    ty = y >> TILE
    for tx in range(x0 >> TILE, ((x1 - 1) >> TILE) + 1):
        W.tile[plane, ty, tx] = 1


@njit(cache=True)
def _collides(T, W, g, k, r, c, M):
    """Their check: max(mask + mask stamp at (r, c)) >= 1.8 over the stamp's pixels."""
    R = T.R[g]
    # a collision needs a mask pixel >= HOT under the stamp's hot box: usually no tile there has one
    y0, y1 = max(r - R + T.hbox[g, k, 0], 0), min(r - R + T.hbox[g, k, 1], M)
    x0, x1 = max(c - R + T.hbox[g, k, 2], 0), min(c - R + T.hbox[g, k, 3], M)
    if y0 >= y1 or x0 >= x1:
        return False
    if not _any_tile(W, 1, y0, y1, x0, x1):
        return False
    for q in range(T.n_hot[g, k]):
        i, j = T.hot[g, k, q, 0], T.hot[g, k, q, 1]
        y, x = r - R + i, c - R + j
        if 0 <= y < M and 0 <= x < M and COLLIDE[W.mask[y, x], T.mask[g, k, i, j]]:
            return True
    return False


@njit(cache=True)
def _commit(P, T, W, g, slot):
    """Dash ``slot`` joins the mask: mask = max(mask, its mask stamp)."""
    k, r, c = W.dash[slot, 0], W.dash[slot, 1], W.dash[slot, 2]
    W.dash[slot, 3] = 1
    R, M = T.R[g], P.M
    for i in range(max(0, R - r), min(2 * R + 1, M - r + R)):
        j0, j1 = max(R - c, T.span[g, k, i, 0]), min(M - c + R, T.span[g, k, i, 1])
        y, x0 = r - R + i, c - R
        if j0 < j1:
            # unsigned indices (all >= 0 here): no negative-index wraparound, so the loop vectorises;
            # branch-free (the stamp's edges make "v > old" unpredictable)
            uy, ux, ui, uj = np.uint64(y), np.uint64(x0 + j0), np.uint64(i), np.uint64(j0)
            raised = 0
            for t in range(np.uint64(j1 - j0)):
                old = W.mask[uy, ux + t]
                new = max(old, T.mask[g, k, ui, uj + t])
                W.mask[uy, ux + t] = new
                raised += (old < OCCUPIED) & (new >= OCCUPIED)
            W.n[2] += raised
            _mark_tiles(W, 0, r - R + i, c - R + j0, c - R + j1)
        j0, j1 = max(R - c, T.hspan[g, k, i, 0]), min(M - c + R, T.hspan[g, k, i, 1])
        if j0 < j1:
            _mark_tiles(W, 1, r - R + i, c - R + j0, c - R + j1)


@njit(cache=True)
def _uncommit(P, T, W, g, slot):
    """Dash ``slot`` leaves the mask: the pixels under its stamp's nonzero spans (the only
    ones it can have raised) are recomputed from the frame and the other committed dashes
    (so the order of commits and removals does not matter). Tile flags stay set."""
    k0, r, c = W.dash[slot, 0], W.dash[slot, 1], W.dash[slot, 2]
    W.dash[slot, 3] = 0
    R, M, b = T.R[g], P.M, P.border
    r0, r1 = max(0, r - R), min(M, r + R + 1)
    # unsigned indices below: all are >= 0, and numba then leaves out the negative-index wraparound
    ub, uMb = np.uint64(b), np.uint64(M - b)
    removed = 0
    for y in range(r0, r1):
        i = y - r + R
        xa, xb = max(0, c - R + T.span[g, k0, i, 0]), min(M, c - R + T.span[g, k0, i, 1])
        if xa < xb:
            uy, ux = np.uint64(y), np.uint64(xa)
            edge = y < b or y >= M - b
            for t in range(np.uint64(xb - xa)):
                x = ux + t
                removed += W.mask[uy, x] >= OCCUPIED
                W.mask[uy, x] = 255 if (edge or x < ub or x >= uMb) else 0
    W.n[2] -= removed
    for o in range(W.dash.shape[0]):
        if W.dash[o, 3] == 0 or abs(W.dash[o, 1] - r) > 2 * R or abs(W.dash[o, 2] - c) > 2 * R:
            continue
        k, oy, ox = W.dash[o, 0], W.dash[o, 1] - R, W.dash[o, 2] - R
        for y in range(max(r0, oy), min(r1, oy + 2 * R + 1)):
            i = y - r + R
            x0 = max(0, c - R + T.span[g, k0, i, 0], ox + T.span[g, k, y - oy, 0])
            x1 = min(M, c - R + T.span[g, k0, i, 1], ox + T.span[g, k, y - oy, 1])
            if x0 < x1:
                uy, ux, ui, uj = np.uint64(y), np.uint64(x0), np.uint64(y - oy), np.uint64(x0 - ox)
                for t in range(np.uint64(x1 - x0)):
                    W.mask[uy, ux + t] = max(W.mask[uy, ux + t], T.mask[g, k, ui, uj + t])
    added = 0
    for y in range(r0, r1):
        i = y - r + R
        xa, xb = max(0, c - R + T.span[g, k0, i, 0]), min(M, c - R + T.span[g, k0, i, 1])
        if xa < xb:
            uy, ux = np.uint64(y), np.uint64(xa)
            for t in range(np.uint64(xb - xa)):
                added += W.mask[uy, ux + t] >= OCCUPIED
    W.n[2] += added


@njit(cache=True)
def draw_dash(T, g, k, r, c, contrast, out, f32=False):
    """out = max(out, line stamp k * contrast) with the stamp's centre at (r, c). Returns
    the largest value it offered (0 if none): the peak of out, when out started at 0, is
    the largest such return (compose needs no pass over the frame for it). f32: each value
    rounded to float32 first (the original generator's dash layers are float32)."""
    R = T.R[g]
    M0, M1 = out.shape[0], out.shape[1]
    top = 0.0
    for i in range(max(0, R - r), min(2 * R + 1, M0 - r + R)):
        # only the row's positive run (lspan): the rest of the (2R+1)^2 box is <= 0
        j0, j1 = max(R - c, T.lspan[g, k, i, 0]), min(M1 - c + R, T.lspan[g, k, i, 1])
        if j0 >= j1:
            continue
        uy, ux, ui, uj = np.uint64(r - R + i), np.uint64(c - R + j0), np.uint64(i), np.uint64(j0)
        for t in range(np.uint64(j1 - j0)):  # unsigned indices: no negative-index wraparound
            x = T.line[g, k, ui, uj + t]
            if x <= 0.0:  # out starts at 0 and only grows: ringing below 0 never shows
                continue
            v = (np.float64(x) / 255.0) * contrast
            if f32:
                v = np.float64(np.float32(v))
            top = max(top, v)
            if v > out[uy, ux + t]:
                out[uy, ux + t] = v
    return top


@njit(cache=True)
def _sinc(x):
    if x == 0.0:
        return 1.0
    x = x * math.pi
    return math.sin(x) / x


@njit(cache=True)
def _lanczos(x):
    """PIL's LANCZOS filter (support 3)."""
    if -3.0 <= x < 3.0:
        return _sinc(x) * _sinc(x / 3)
    return 0.0


@njit(cache=True)
def _coeffs(xx, in_size, scale, k):
    """PIL's resampling weights of output pixel xx (a reduction by ``scale``), renormalised
    where the frame cuts the filter: fills k, returns (first input pixel, count)."""
    support = 3.0 * scale
    center = (xx + 0.5) * scale
    ss = 1.0 / scale
    xmin = max(int(center - support + 0.5), 0)
    xmax = min(int(center + support + 0.5), in_size) - xmin
    ww = 0.0
    for x in range(xmax):
        k[x] = _lanczos((x + xmin - center + 0.5) * ss)
        ww += k[x]
    if ww != 0.0:
        for x in range(xmax):
            k[x] /= ww
    return xmin, xmax


@njit(cache=True)
def _marker_at_edge(P, T, W, r, c, out):
    """A marker near the frame's edge, as their draw_circle makes it: the disk on the whole
    finer frame, reduced with PIL's two passes (rows, then columns; float32 in between)
    whose weights are renormalised at the edge. Only the output pixels the disk reaches.
    Returns the largest value it offered (see draw_dash)."""
    K, aa, M = T.circle.shape[0] // 2, P.aa, P.M
    big = M * aa
    rad2 = (P.marker_radius * aa) ** 2
    r0, r1, c0, c1 = max(r - K, 0), min(r + K + 1, M), max(c - K, 0), min(c + K + 1, M)
    top = 0.0
    # horizontal pass for the finer rows that hold the disk: H[Y, xx]
    Y0, Y1 = max((r - K) * aa, 0), min((r + K + 1) * aa, big)
    H = np.zeros((Y1 - Y0, c1 - c0), np.float32)
    for xx in range(c0, c1):
        xmin, n = W.lzx[xx, 0], W.lzx[xx, 1]  # _coeffs(xx, big, float(aa)), tabulated
        for Y in range(Y0, Y1):
            acc = 0.0
            for x in range(n):
                dy, dx = Y - r * aa, xmin + x - c * aa
                if dy * dy + dx * dx <= rad2:
                    acc += W.lzk[xx, x]
            H[Y - Y0, xx - c0] = np.float32(acc)
    # vertical pass
    for yy in range(r0, r1):
        ymin, n = W.lzx[yy, 0], W.lzx[yy, 1]
        for xx in range(c0, c1):
            acc = 0.0
            for y in range(n):
                Y = ymin + y
                if Y0 <= Y < Y1:
                    acc += np.float64(H[Y - Y0, xx - c0]) * W.lzk[yy, y]
            v = np.float64(np.float32(acc))
            top = max(top, v)
            if v > out[yy, xx]:
                out[yy, xx] = v
    return top


PRECISION_BITS = 22  # PIL's 8-bit resampling: weights in fixed point (Resample.c, 32 - 8 - 2)


@njit(cache=True)
def _fixed(w):
    """PIL's fixed-point weight: (int)(w * 2^22 +- 0.5), truncated towards zero."""
    v = w * (1 << PRECISION_BITS)
    return int(v + 0.5) if v >= 0.0 else -int(-v + 0.5)


@njit(cache=True)
def _clip8(ss):
    """PIL's clip8: the accumulator (with its 2^21 rounding term) >> 22, clipped to 0..255."""
    v = ss >> PRECISION_BITS
    return 0 if v < 0 else (255 if v > 255 else v)


@njit(cache=True)
def _marker_at_edge8(P, T, W, r, c, out):
    """A marker near the frame's edge as the original generator makes it (draw_circle through
    scipy.misc.imresize): the 0/255 disk on the whole finer frame reduced by PIL's 8-bit
    passes (rows, then columns; fixed-point weights, each pass rounded and clipped to
    uint8), divided by 255. Returns the largest value it offered (see draw_dash)."""
    K, aa, M = T.circle.shape[0] // 2, P.aa, P.M
    big = M * aa
    rad2 = (P.marker_radius * aa) ** 2
    r0, r1, c0, c1 = max(r - K, 0), min(r + K + 1, M), max(c - K, 0), min(c + K + 1, M)
    top = 0.0
    Y0, Y1 = max((r - K) * aa, 0), min((r + K + 1) * aa, big)
    H = np.zeros((Y1 - Y0, c1 - c0), np.int64)
    for xx in range(c0, c1):
        xmin, n = W.lzx[xx, 0], W.lzx[xx, 1]
        for Y in range(Y0, Y1):
            ss = 1 << (PRECISION_BITS - 1)
            for x in range(n):
                dy, dx = Y - r * aa, xmin + x - c * aa
                if dy * dy + dx * dx <= rad2:
                    ss += 255 * _fixed(W.lzk[xx, x])
            H[Y - Y0, xx - c0] = _clip8(ss)
    for yy in range(r0, r1):
        ymin, n = W.lzx[yy, 0], W.lzx[yy, 1]
        for xx in range(c0, c1):
            ss = 1 << (PRECISION_BITS - 1)
            for y in range(n):
                Y = ymin + y
                if Y0 <= Y < Y1:
                    ss += H[Y - Y0, xx - c0] * _fixed(W.lzk[yy, y])
            v = _clip8(ss) / 255.0
            top = max(top, v)
            if v > out[yy, xx]:
                out[yy, xx] = v
    return top


@njit(cache=True)
def draw_marker(P, T, W, r, c, out):
    """out = max(out, marker disk at (r, c)): the stamp inside the frame, where the filter
    never reaches the edge, else drawn as their whole-frame reduction does near the edge.
    Returns the largest value it offered (see draw_dash)."""
    K = T.circle.shape[0] // 2
    M = out.shape[0]
    if min(r, c) - K < 4 or max(r, c) + K > M - 5:
        if P.eight_bit:
            return _marker_at_edge8(P, T, W, r, c, out)
        return _marker_at_edge(P, T, W, r, c, out)
    top = 0.0
    for i in range(2 * K + 1):
        for j in range(2 * K + 1):
            v = np.float64(T.circle[i, j])
            top = max(top, v)
            if v > out[r - K + i, c - K + j]:
                out[r - K + i, c - K + j] = v
    return top


# ---------------------------------------------------------------- kernels: the process


@njit(cache=True)
def _in_frame(r, c, M):
    return 0 <= r < M and 0 <= c < M


@njit(cache=True)
def _seed_free(T, W, g, d, r, c, band, M):
    """Their dilated-mask test for a tail at (r, c): every struct pixel avoids the mask
    (> 0.3) and the band of ``band`` pixels at the frame's edge (outside pixels are ignored)."""
    for q in range(T.n_struct[g, d]):
        y, x = r + T.struct[g, d, q, 0], c + T.struct[g, d, q, 1]
        if not _in_frame(y, x, M):
            continue
        if y < band or x < band or y >= M - band or x >= M - band or W.mask[y, x] >= OCCUPIED:
            return False
    return True


@njit(cache=True)
def _put(W, slot, k, r, c, pr, pc, o):
    """Dash ``slot``: stamp k centred at (r, c), not yet in the mask; the path's pivot and
    orientation after it."""
    W.dash[slot, 0] = k
    W.dash[slot, 1] = r
    W.dash[slot, 2] = c
    W.dash[slot, 3] = 0
    W.hist[slot, 0] = pr
    W.hist[slot, 1] = pc
    W.hist[slot, 2] = o


@njit(cache=True)
def _seed(st, P, T, W, g, band, slot):
    """Seed a path into dash ``slot`` (their seed_snake and first seed). Up to SEED_TRIALS
    orientations; the tail is uniform over the free pixels (rejection draws over the frame)."""
    M = P.M
    for _ in range(SEED_TRIALS):
        d = randint(st, 360)
        if P.dead_seeds and T.seed_dead[g, d]:
            # theirs: cv2.dilate leaves -inf at a frame corner that no struct pixel reaches
            # (small structs, e.g. 329 of 360 orientations at 32 px), their coordinate search
            # then returns no coordinate at all, and the seeding fails
            return False
        found = False
        r, c = 0, 0
        for _ in range(SEED_DRAWS if P.seed_scan == 0 else P.seed_scan):
            r, c = randint(st, M), randint(st, M)
            if _seed_free(T, W, g, d, r, c, band, M):
                found = True
                break
        if not found and P.seed_scan > 0:  # uniform over the free pixels, by counting them
            free = 0
            for y in range(M):  # the tail itself may sit in the band: only struct pixels may not
                for x in range(M):
                    free += _seed_free(T, W, g, d, y, x, band, M)
            if free > 0:
                pick = randint(st, free)
                for y in range(M):
                    for x in range(M):
                        if _seed_free(T, W, g, d, y, x, band, M):
                            if pick == 0 and not found:
                                r, c, found = y, x, True
                            pick -= 1
        if not found:
            return False  # theirs: no available coordinate ends the seeding
        hr, hc = r + T.seed_head[g, d, 0], c + T.seed_head[g, d, 1]
        pr, pc = r + T.seed_pivot[g, d, 0], c + T.seed_pivot[g, d, 1]
        if _in_frame(hr, hc, M) and _in_frame(pr, pc, M):
            _put(W, slot, T.seed_stamp[g, d], r, c, pr, pc, d)
            return True
    return False


@njit(cache=True)
def _extend(st, P, T, W, g, slot):
    """Dash ``slot`` after dash slot - 1 of the same path (their extend_snake); on success
    dash slot - 1 joins the mask."""
    M = P.M
    W.n[7] += 1
    o = W.hist[slot - 1, 2]
    pr = W.hist[slot - 1, 0] + T.advance[g, o, 0]
    pc = W.hist[slot - 1, 1] + T.advance[g, o, 1]
    nc = T.n_cand[g]
    w = W.weight
    for a in range(nc):  # a loop, not w[:nc] = 0: a slice is a new reference (NRT incref/decref)
        w[a] = 0.0
    total = 0.0
    m, b = T.margins[g], P.border  # the disk's rows and columns reach m from its centre
    lo, hi = b + m, M - b - m
    for a in range(nc):
        q = T.ahead[g, o, a]
        if q < 0:
            break
        y, x = pr + T.cand[g, q, 0], pc + T.cand[g, q, 1]
        if not _in_frame(y, x, M):
            continue
        cw = T.turn[g, o, q]
        dil = 0
        if not _any_tile(W, 0, max(y - m, 0), min(y + m + 1, M), max(x - m, 0), min(x + m + 1, M)):
            w[q] = cw  # (1 - 0 / 255) * cw: the disk covers empty tiles only
            total += w[q]
            continue
        if b > 0 and (y < lo or y >= hi or x < lo or x >= hi):
            dil = 255  # the disk holds its centre's row and column, so a pixel of the border (255)
        elif m <= y < M - m and m <= x < M - m:  # their cv2.dilate by the disk, at this point only
            for e in range(2 * m + 1):  # inside the frame: unsigned indices, no clipping
                dy, half = T.disk[g, e, 0], T.disk[g, e, 1]
                uy, ux = np.uint64(y + dy), np.uint64(x - half)
                for t in range(np.uint64(2 * half + 1)):
                    dil = max(dil, W.mask[uy, ux + t])
                if dil == 255:
                    break
        else:
            for e in range(2 * m + 1):  # their cv2.dilate by the disk, at this point only
                dy, half = T.disk[g, e, 0], T.disk[g, e, 1]
                yy = y + dy
                if yy < 0 or yy >= M:
                    continue
                for xx in range(max(x - half, 0), min(x + half + 1, M)):
                    if W.mask[yy, xx] > dil:
                        dil = W.mask[yy, xx]
                if dil == 255:
                    break
        w[q] = (1.0 - dil / 255.0) * cw
        total += w[q]
    if total < 1e-4:
        W.n[8] += 1
        return False
    for _ in range(EXTEND_TRIALS):
        u = uniform(st) * total
        q = 0
        acc = w[0]
        while acc <= u and q < nc - 1:
            q += 1
            acc += w[q]
        while w[q] == 0.0:  # u fell past the last step of the running sum
            q -= 1
        hr, hc = pr + T.cand[g, q, 0], pc + T.cand[g, q, 1]
        k = T.cand_stamp[g, q]
        if _collides(T, W, g, k, hr, hc, M):
            continue
        _commit(P, T, W, g, slot - 1)
        _put(W, slot, k, hr, hc, pr, pc, 360 + q)
        W.n[10] += 1
        return True
    W.n[9] += 1
    return False


@njit(cache=True)
def _clear(P, W):
    """Empty frame: no dash placed, the border in the mask."""
    M, b = P.M, P.border
    W.dash[:, 3] = 0
    # only flagged tiles can hold nonzero pixels (the workspace starts all zero)
    TM = W.tile.shape[1]
    for ty in range(TM):
        for tx in range(TM):
            if W.tile[0, ty, tx]:
                W.mask[ty << TILE:min((ty + 1) << TILE, M), tx << TILE:min((tx + 1) << TILE, M)] = 0
    W.tile[:, :, :] = 0
    if b > 0:
        W.mask[:b, :] = 255
        W.mask[M - b:, :] = 255
        W.mask[:, :b] = 255
        W.mask[:, M - b:] = 255
        for e in range(min(b, M)):  # the frame's tiles (both planes: 255 >= HOT)
            for p in range(2):
                _mark_tiles(W, p, e, 0, M)
                _mark_tiles(W, p, M - 1 - e, 0, M)
                for y in range(M):
                    W.tile[p, y >> TILE, e >> TILE] = 1
                    W.tile[p, y >> TILE, (M - 1 - e) >> TILE] = 1
    W.n[2] = M * M - max(M - 2 * b, 0) ** 2


@njit(cache=True)
def _main_paths(st, P, T, W, g):
    """Both main paths (their two_snakes): dashes of A in slots 0..n-1, of B in n..2n-1.

    Grown in their order (A, B, A, B, ...). P.exact: any failure restarts both, as theirs
    (their exact law, heavy time tail). Otherwise a failed extension removes the path's
    last dash and grows again from the one before (at most GROW_FAILS per image, then
    both restart): local retries with a short time tail."""
    M, n = P.M, P.contour_length
    W.n[6] = 0
    have = np.ones(2, np.int64)  # per restart: allocated once, reset below
    fails = np.zeros(2, np.int64)
    regrown = np.zeros(2, np.int64)
    for _ in range(MAIN_TRIES_EXACT if P.exact else MAIN_TRIES):
        W.n[6] += 1
        _clear(P, W)
        if not _seed(st, P, T, W, g, 2 * P.seed_distance, 0):
            continue
        ar, ac = W.dash[0, 1], W.dash[0, 2]
        ok = False
        for _ in range(SEED_TRIALS):
            d = randint(st, 360)
            a = randint(st, 360) * np.pi / 180
            br = int(round(ar + P.seed_distance * math.sin(a)))  # half to even, as np.round_
            bc = int(round(ac + P.seed_distance * math.cos(a)))
            hr, hc = br + T.seed_head[g, d, 0], bc + T.seed_head[g, d, 1]
            pr, pc = br + T.seed_pivot[g, d, 0], bc + T.seed_pivot[g, d, 1]
            if _in_frame(hr, hc, M) and _in_frame(pr, pc, M):
                _put(W, n, T.seed_stamp[g, d], br, bc, pr, pc, d)
                ok = True
                break
        if not ok:
            continue
        have[0], have[1] = 1, 1
        fails[0], fails[1] = 0, 0
        regrown[0], regrown[1] = 0, 0
        while have[0] < n or have[1] < n:
            s = 0 if (have[0] <= have[1] and have[0] < n) or have[1] >= n else 1
            j = have[s]
            if _extend(st, P, T, W, g, s * n + j):
                have[s] += 1
                continue
            fails[s] += 1
            back = min(j - 1, P.backoff ** (fails[s] - 1))  # 1, 2, 4, ... dashes
            if fails[s] > P.grow_fails and regrown[s] < P.regrows and j >= 2:
                back, fails[s] = j - 1, 0  # grow this path again from its first dash
                regrown[s] += 1
            if P.exact or back < 1 or fails[s] > P.grow_fails:
                ok = False
                break
            for q in range(s * n + j - 1 - back, s * n + j - 1):  # keep dashes 0..j-1-back
                _uncommit(P, T, W, g, q)
            have[s] = j - back
        if not ok:
            continue
        _commit(P, T, W, g, 2 * n - 1)  # theirs: B's last dash joins the mask, A's does not
        W.n[4], W.n[5] = have[0], have[1]
        return True
    return False


@njit(cache=True)
def _distractor(st, P, T, W, g, base):
    """One distractor in slots base.. (their make_snake); no trace unless placed whole."""
    M = P.M
    if M * M - W.n[2] < 0.01 * M * M:
        return False
    if not _seed(st, P, T, W, g, 1, base):
        return False
    for j in range(1, P.distractor_length):
        if not _extend(st, P, T, W, g, base + j):
            for q in range(base, base + j - 1):
                _uncommit(P, T, W, g, q)
            return False
    _commit(P, T, W, g, base + P.distractor_length - 1)
    if P.mark_distractors:  # their marker sits at the seed's pivot
        W.marker[W.n[1], 0] = W.hist[base, 0]
        W.marker[W.n[1], 1] = W.hist[base, 1]
        W.n[1] += 1
    return True


@njit(cache=True)
def place(st, P, T, W, g):
    """Steps 2-3 of the process into W.dash and W.marker[2:]. Returns 0 when placed, 1 when
    the main paths do not fit, 2 when a distractor does not."""
    n = P.contour_length
    for _ in range(IMAGE_TRIES):
        if not _main_paths(st, P, T, W, g):
            return 1
        W.n[1] = 2
        W.n[3] = 0
        ok = True
        tries = P.drop_after if P.drop_after > 0 else DISTRACTOR_TRIES
        for i in range(P.distractors):
            placed = False
            for _ in range(tries):
                if _distractor(st, P, T, W, g, 2 * n + W.n[3] * P.distractor_length):
                    placed = True
                    break
            if placed:
                W.n[3] += 1
            elif P.drop_after == 0:
                ok = False
                break
        if ok:
            W.n[0] = 2 * n + W.n[3] * P.distractor_length
            return 0
    return 2


@njit(cache=True)
def compose(P, T, W, g, origin, connected, img, lab):
    """Step 5: 8-bit image and labels from the placed dashes and markers; returns the peak.
    The per-path layers are only drawn, read and cleared inside the main paths' box.
    W.image is zero on entry and left zero (cleared while it is converted: one pass)."""
    n, M, R = P.contour_length, P.M, T.R[g]
    r0, r1, c0, c1 = M, 0, M, 0
    for i in range(2 * n):
        r0, r1 = min(r0, max(W.dash[i, 1] - R, 0)), max(r1, min(W.dash[i, 1] + R + 1, M))
        c0, c1 = min(c0, max(W.dash[i, 2] - R, 0)), max(c1, min(W.dash[i, 2] + R + 1, M))
    peak = 0.0  # W.image.max(), from what the draws offered
    f32 = P.eight_bit
    for i in range(W.n[0]):
        k, r, c = W.dash[i, 0], W.dash[i, 1], W.dash[i, 2]
        contrast = P.contrast if i < 2 * n else P.dcontrast
        peak = max(peak, draw_dash(T, g, k, r, c, contrast, W.image, f32))
        if i < 2 * n and P.labels:
            draw_dash(T, g, k, r, c, contrast, W.layer[i // n], f32)
    for i in range(W.n[1]):
        peak = max(peak, draw_marker(P, T, W, W.marker[i, 0], W.marker[i, 1], W.image))
    if peak > 0.0 and P.eight_bit:  # scipy's bytescale (min 0): floor(v * (255 / peak) + 0.5)
        scale = 255.0 / peak
        for i in range(M):
            src, dst = W.image[i], img[i]
            for j in range(M):
                dst[j] = np.uint8(min(src[j] * scale, 255.0) + 0.5)
                src[j] = 0.0
    elif peak > 0.0:  # 0 / peak rounds to 0: no branch, so the loop vectorises
        for i in range(M):
            src, dst = W.image[i], img[i]
            for j in range(M):
                dst[j] = np.uint8(min(np.rint(src[j] / peak * 255.0), 255.0))
                src[j] = 0.0
    else:
        img[:, :] = 0
    if not P.labels:
        return peak
    lab[:, :] = 0
    for p in range(2):
        cls = 2 if (connected and p == origin) else 1
        for i in range(r0, r1):
            for j in range(c0, c1):
                x = W.layer[p, i, j]
                # layers are >= 0 (drawn by max from 0): a zero pixel rounds to 0, never labelled
                if x != 0.0 and np.rint(x / peak * 255.0) >= 1.0 and lab[i, j] < cls:
                    lab[i, j] = cls
        W.layer[p, r0:r1, c0:c1] = 0.0  # left clean for the next image
    return peak


@njit(cache=True)
def render_one(seed, split, index, P, T, W, img, lab, dashes, markers, counts):
    """One image. dashes int32 [ND, 4] (row, col, blown dy, dx: origin path, other path,
    distractors), markers int32 [NM, 2], counts int32 [6] = (connected, origin path's
    dashes, other path's, distractors placed, margin, status: 1 ok, -1 the main paths do not
    fit, -2 a distractor does not). Returns the peak."""
    st = stream(seed, split, index)
    connected = randint(st, 2) == 1
    g = randint(st, T.margins.shape[0])
    failed = place(st, P, T, W, g)
    if failed:
        counts[5] = -failed
        return 0.0
    origin = randint(st, 2)
    end = origin if connected else 1 - origin
    n = P.contour_length
    W.marker[0, 0], W.marker[0, 1] = W.dash[origin * n, 1], W.dash[origin * n, 2]  # seed tail
    W.marker[1, 0], W.marker[1, 1] = W.dash[end * n + n - 1, 1], W.dash[end * n + n - 1, 2]  # last head
    if n == 1:  # a one-dash path ends where it starts
        W.marker[1, 0], W.marker[1, 1] = W.dash[end * n, 1], W.dash[end * n, 2]
    peak = compose(P, T, W, g, origin, connected, img, lab)
    for i in range(W.n[0]):
        src = i
        if i < 2 * n:
            src = (i % n) + n * (origin if i < n else 1 - origin)
        k = W.dash[src, 0]
        dashes[i, 0], dashes[i, 1] = W.dash[src, 1], W.dash[src, 2]
        dashes[i, 2], dashes[i, 3] = T.key[g, k, 0], T.key[g, k, 1]
    for i in range(W.n[1]):
        markers[i, 0], markers[i, 1] = W.marker[i, 0], W.marker[i, 1]
    counts[0] = 1 if connected else 0
    counts[1] = W.n[4 + origin]
    counts[2] = W.n[5 - origin]
    counts[3] = W.n[3]
    counts[4] = T.margins[g]
    counts[5] = 1
    return peak


@njit(cache=True)
def _render_strided(t, nt, seed, split, start, P, T, works, img, lab, dashes, markers, counts, peak):
    W = thread_view(works, t)
    for i in range(t, img.shape[0], nt):
        peak[i] = render_one(seed, split, start + i, P, T, W, img[i], lab[i], dashes[i], markers[i], counts[i])


@njit(cache=True, parallel=True)
def render_batch(seed, split, start, P, T, works, img, lab, dashes, markers, counts, peak):
    """Images start..start+n-1, image i on thread i mod (threads in works)."""
    nt = works.n.shape[0]
    for t in prange(nt):
        _render_strided(t, nt, seed, split, start, P, T, works, img, lab, dashes, markers, counts, peak)
