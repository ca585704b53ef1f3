"""Numba renderer for Pathfinder images: dashed paths, local footprints, local retries.

Shared by Pathfinder-Segmentation (``generators/pathfinder.py``) and, later, classic
Pathfinder (binary label): :func:`render_one` draws one image from its key and reports
``connected``; the caller decides what the label is. No Python objects in the kernels.

Geometry (pixel centres at integer (row, col); a direction t means the unit vector
u(t) = (cos t, sin t) in (row, col)):
    dash          capsule of total length L (paddle_length) and thickness 2h
                  (paddle_thickness): a segment of length max(L - 2h, 0) with round caps of
                  radius h; its "tips" are the segment's endpoints (the caps' centres)
    path          dash 0's segment runs from the start tip a0 along u(t0); dash k's start
                  tip is dash k-1's end tip + (margin + 2h) u(t_k): the pivot is the
                  previous dash's front and the next dash starts ``margin`` beyond its
                  body, whatever the turn (for a straight path dash centres are L + margin
                  apart: the circle of radius L + margin of TASKS.md)
    turns         t_k = t_{k-1} + j * 2 pi / n_dir, n_dir = max(8, round(2 pi (L + margin)))
                  positions, weight max(cos(min(continuity |turn|, pi/2)), 0)^2;
                  a free turn is drawn by weight (sampling without replacement until a
                  free one is found is exactly the weighted draw over the free positions)
    8-bit value   of a pixel under a shape: n = number of its s x s sub-samples (s =
                  antialias_scale, at (i + 0.5)/s - 0.5 offsets) inside the shape;
                  value = floor(n * 255 * contrast / s^2 + 0.5). A pixel is "lit" by a
                  shape iff its value is >= 1.
    footprint     of a placed dash: the pixels whose centre lies within margin + 1 of one of
                  its lit pixels (per row, the hull of its lit row spans dilated by that
                  disk: a slight superset). A new dash is free iff all its lit pixels lie
                  inside the frame less ``border`` pixels and outside every footprint
                  except that of the previous dash of its own path, and (dashes k >= 1)
                  some lit pixel within h + 1.5 of its start tip lies at most margin + 1
                  from a lit pixel within h + 1.5 of the previous dash's end tip. So lit
                  pixels of different paths are always more than margin + 1 apart and
                  consecutive dashes of a path at most margin + 1. Footprints are counted
                  in an int16 occupancy grid, updated only in the dash's bounding box (+1
                  to place, -1 to remove); the frame is never dilated as a whole.

Process of one image and its draw order from ``stream(seed, split, index)``:
    1. margin = margin_min + randint(margin_max - margin_min + 1)
    2. origin = randint(2): which main path carries the start marker
    3. connected = randint(2) == 1: the end marker is on the same main path (else the other)
    4. attempt (at most IMAGE_TRIES, occupancy cleared each time):
       a. main path A: start a0 uniform in the frame less border (row uniform, then col
          uniform), t0 = 2 pi uniform, then contour_length - 1 turns; up to MAIN_TRIES
          starts. Main path B: start = A's start + seed_distance u(2 pi uniform) (redrawn
          while outside the frame, each redraw counting as a start), t0 = 2 pi uniform;
          up to MAIN_TRIES starts, else A is removed and redrawn (A and B: up to
          MAIN_TRIES rounds, else a new attempt).
       b. distractors in order: start uniform (row, col), t0 = 2 pi uniform,
          distractor_length - 1 turns; up to DISTRACTOR_TRIES starts each, else a new
          attempt. All of them are placed, or the image is redrawn.
       Growing a path: for k >= 1 the turn of dash k is drawn as above (uniform(s) per
       tried candidate). If no turn is free, dash k-1 is removed and redrawn (one-step
       backtracking, at most GROW_FAILS_PER_DASH * dashes failures per path), never
       dash 0: then the start is abandoned. Only the failed path is removed.
    5. render (no more draws): main path ``origin`` is stored first. Each path's own 8-bit
       layer is the max over its dashes; the image is the max over all path layers and the
       marker disks (radius marker_radius at the start tip of the origin path, at the end
       tip of the origin path if connected else of the other main path, and, with
       mark_distractors, at each distractor's start tip).
If every attempt fails the kernel returns status 1 and the caller raises.
"""
import math

import numpy as np
from numba import njit, prange

from longsynth.rng import randint, stream, uniform

IMAGE_TRIES = 64
MAIN_TRIES = 32
DISTRACTOR_TRIES = 200
GROW_FAILS_PER_DASH = 4


@njit(cache=True)
def raster_capsule(r0, c0, r1, c1, h, s, level, out_r, out_c, out_v):
    """Lit pixels of the capsule (segment (r0,c0)-(r1,c1), radius h) in row-major order.

    Writes rows, cols and 8-bit values of pixels with value >= 1 into out_*; returns the
    count. ``level`` = 255 * contrast / s^2. The pixels are not clipped to any frame.
    """
    dr = r1 - r0
    dc = c1 - c0
    len2 = dr * dr + dc * dc
    h2 = h * h
    off = (s - 1.0) / (2.0 * s) * math.sqrt(2.0)  # farthest sub-sample from the pixel centre
    far = (h + off) * (h + off)
    near = h - off
    near2 = near * near if near > 0.0 else -1.0
    full = np.int64(math.floor(s * s * level + 0.5))
    rlo = int(math.floor(min(r0, r1) - h - 1.0))
    rhi = int(math.ceil(max(r0, r1) + h + 1.0))
    clo = int(math.floor(min(c0, c1) - h - 1.0))
    chi = int(math.ceil(max(c0, c1) + h + 1.0))
    n = 0
    inv = 1.0 / s
    seglen = math.sqrt(len2)
    band = (h + off) * seglen + 1e-9  # |cross product| bound of pixels with d <= h + off
    for r in range(rlo, rhi + 1):
        # columns whose distance to the segment's line is <= h + off (a superset of the
        # pixels that can be lit: the segment is never closer than its line)
        a = clo
        b = chi
        if abs(dr) > 1e-9:
            x = c0 + (r - r0) * dc / dr
            wdt = band / abs(dr)
            a = max(clo, int(math.floor(x - wdt)))
            b = min(chi, int(math.ceil(x + wdt)))
        for c in range(a, b + 1):
            t = 0.0
            if len2 > 0.0:
                t = ((r - r0) * dr + (c - c0) * dc) / len2
                t = min(max(t, 0.0), 1.0)
            er = r - (r0 + t * dr)
            ec = c - (c0 + t * dc)
            d2 = er * er + ec * ec
            if d2 > far:
                continue
            if d2 <= near2:
                v = full
            else:
                cnt = 0
                for i in range(s):
                    pr = r - 0.5 + (i + 0.5) * inv
                    for j in range(s):
                        pc = c - 0.5 + (j + 0.5) * inv
                        tt = 0.0
                        if len2 > 0.0:
                            tt = ((pr - r0) * dr + (pc - c0) * dc) / len2
                            tt = min(max(tt, 0.0), 1.0)
                        qr = pr - (r0 + tt * dr)
                        qc = pc - (c0 + tt * dc)
                        if qr * qr + qc * qc <= h2:
                            cnt += 1
                v = np.int64(math.floor(cnt * level + 0.5))
            if v >= 1:
                out_r[n] = r
                out_c[n] = c
                out_v[n] = min(v, 255)
                n += 1
    return n


@njit(cache=True)
def raster_capacity(L, h, radius):
    """Size of the out_* buffers that any dash of length L, radius h, or a disk fits."""
    side = int(math.ceil(max(L + 2.0 * h, 2.0 * radius))) + 5
    return side * side


@njit(cache=True)
def _is_free(rr, cc, n, occ, M, border):
    lo = border
    hi = M - 1 - border
    for i in range(n):
        r = rr[i]
        c = cc[i]
        if r < lo or r > hi or c < lo or c > hi:
            return False
        if occ[r, c] != 0:
            return False
    return True


@njit(cache=True)
def _stamp(rr, cc, n, occ, M, rho, sign, spans):
    """occ += sign on the footprint of the lit pixels rr, cc (row-major, n >= 1).

    Footprint: per lit row its [min col, max col] span, dilated by a disk of radius rho
    (pixel centres at distance <= rho); per output row the hull of the dilated spans.
    ``spans`` is scratch int64 [>= rows, 3].
    """
    nrows = 0
    i = 0
    while i < n:
        r = rr[i]
        a = cc[i]
        b = cc[i]
        while i < n and rr[i] == r:
            a = min(a, cc[i])
            b = max(b, cc[i])
            i += 1
        spans[nrows, 0] = r
        spans[nrows, 1] = a
        spans[nrows, 2] = b
        nrows += 1
    irho = int(math.floor(rho))
    wtab = np.empty(irho + 1, dtype=np.int64)  # half-width of the disk at row offset d
    for d in range(irho + 1):
        wtab[d] = int(math.floor(math.sqrt(rho * rho - d * d)))
    top = spans[0, 0] - irho
    bottom = spans[nrows - 1, 0] + irho
    for orow in range(max(top, 0), min(bottom, M - 1) + 1):
        lo = 1 << 30
        hi = -(1 << 30)
        for k in range(nrows):
            d = orow - spans[k, 0]
            if d < -irho or d > irho:
                continue
            w = wtab[abs(d)]
            lo = min(lo, spans[k, 1] - w)
            hi = max(hi, spans[k, 2] + w)
        if lo > hi:
            continue
        for c in range(max(lo, 0), min(hi, M - 1) + 1):
            occ[orow, c] += sign


@njit(cache=True)
def turn_table(L, margin, continuity):
    """(turns, weights) of the candidate directions relative to the previous dash."""
    R = L + margin
    ndir = max(8, int(round(2.0 * math.pi * R)))
    step = 2.0 * math.pi / ndir
    J = 0
    while continuity * (J + 1) * step < 0.5 * math.pi and J + 1 < ndir // 2:
        J += 1
    turns = np.empty(2 * J + 1, dtype=np.float64)
    weights = np.empty(2 * J + 1, dtype=np.float64)
    for j in range(-J, J + 1):
        a = j * step
        turns[j + J] = a
        c = math.cos(min(continuity * abs(a), 0.5 * math.pi))
        weights[j + J] = max(c, 0.0) ** 2
    return turns, weights


@njit(cache=True)
def _dash_raster(geom, d, h, s, level, rr, cc, vv):
    return raster_capsule(geom[d, 0], geom[d, 1], geom[d, 2], geom[d, 3], h, s, level, rr, cc, vv)


@njit(cache=True)
def _set_dash(geom, theta, d, cr, cc_, t, seg):
    ur = math.cos(t)
    uc = math.sin(t)
    # endpoints rounded to float32: the stored ``dashes`` extra reproduces them exactly
    geom[d, 0] = np.float32(cr - 0.5 * seg * ur)
    geom[d, 1] = np.float32(cc_ - 0.5 * seg * uc)
    geom[d, 2] = np.float32(cr + 0.5 * seg * ur)
    geom[d, 3] = np.float32(cc_ + 0.5 * seg * uc)
    theta[d] = t


@njit(cache=True)
def _stamp_dash(geom, d, sign, h, s, level, rho, occ, M, rr, cc, vv, spans):
    n = _dash_raster(geom, d, h, s, level, rr, cc, vv)
    _stamp(rr, cc, n, occ, M, rho, sign, spans)


@njit(cache=True)
def grow_path(st, geom, theta, base, n, ar, ac, t0, L, margin, h, s, level, rho, border, M, occ,
              turns, weights, w, rr, cc, vv, spans, tr, tc, qr, qc, lr, lc):
    """Place path dashes base..base+n-1 from start tip (ar, ac) and direction t0.

    Returns True with every dash stamped into ``occ``; False with ``occ`` as before.
    """
    seg = max(L - 2.0 * h, 0.0)  # the caps make up the rest of the dash length L
    jump = margin + 2.0 * h + 0.5 * seg  # previous end tip -> next centre: the gap is `margin`
    _set_dash(geom, theta, base, ar + 0.5 * seg * math.cos(t0), ac + 0.5 * seg * math.sin(t0), t0, seg)
    screen = h >= math.sqrt(2.0) / (2.0 * s)
    if screen and _surely_blocked(geom, base, occ, M, border):
        return False
    m = _dash_raster(geom, base, h, s, level, rr, cc, vv)
    if not _is_free(rr, cc, m, occ, M, border):
        return False
    # dashes base..base+k-2 are stamped; dash base+k-1 ("previous") is not: its lit pixels
    # are kept in lr/lc (nl of them) and those near its end tip in qr/qc (nq)
    tip = h + 1.5  # lit pixels this close to a dash tip are the ones that face the next dash
    nl = _copy_pixels(rr, cc, m, lr, lc)
    nq = _near_tip(lr, lc, nl, geom[base, 2], geom[base, 3], tip, qr, qc)
    k = 1
    fails = 0
    nt = turns.shape[0]
    while k < n:
        p = base + k - 1
        er = geom[p, 2]
        ec = geom[p, 3]
        for j in range(nt):
            w[j] = weights[j]
        placed = False
        while True:
            total = 0.0
            for j in range(nt):
                total += w[j]
            if total <= 0.0:
                break
            u = uniform(st) * total
            pick = nt - 1
            acc = 0.0
            for j in range(nt):
                if w[j] <= 0.0:
                    continue
                acc += w[j]
                if u < acc:
                    pick = j
                    break
            while w[pick] <= 0.0:  # float edge: u landed past the last positive weight
                pick -= 1
            t = theta[p] + turns[pick]
            _set_dash(geom, theta, p + 1, er + jump * math.cos(t), ec + jump * math.sin(t), t, seg)
            if screen and _surely_blocked(geom, p + 1, occ, M, border):
                w[pick] = 0.0
                continue
            m = _dash_raster(geom, p + 1, h, s, level, rr, cc, vv)
            if _is_free(rr, cc, m, occ, M, border):
                nt_ = _near_tip(rr, cc, m, geom[p + 1, 0], geom[p + 1, 1], tip, tr, tc)
                if _joined(tr, tc, nt_, qr, qc, nq, rho):
                    placed = True
                    break
            w[pick] = 0.0
        if placed:
            _stamp(lr, lc, nl, occ, M, rho, 1, spans)
            nl = _copy_pixels(rr, cc, m, lr, lc)
            nq = _near_tip(lr, lc, nl, geom[p + 1, 2], geom[p + 1, 3], tip, qr, qc)
            k += 1
            continue
        fails += 1
        if k == 1 or fails > GROW_FAILS_PER_DASH * n:
            for d in range(base, base + k - 1):
                _stamp_dash(geom, d, -1, h, s, level, rho, occ, M, rr, cc, vv, spans)
            return False
        k -= 1  # drop dash k-1 (unstamped); dash k-2 becomes "previous" again
        q = base + k - 1
        nl = _dash_raster(geom, q, h, s, level, lr, lc, vv)
        _stamp(lr, lc, nl, occ, M, rho, -1, spans)
        nq = _near_tip(lr, lc, nl, geom[q, 2], geom[q, 3], tip, qr, qc)
    _stamp(lr, lc, nl, occ, M, rho, 1, spans)
    return True


@njit(cache=True)
def _copy_pixels(rr, cc, n, out_r, out_c):
    for i in range(n):
        out_r[i] = rr[i]
        out_c[i] = cc[i]
    return n


@njit(cache=True)
def remove_path(geom, base, n, h, s, level, rho, occ, M, rr, cc, vv, spans):
    for d in range(base, base + n):
        _stamp_dash(geom, d, -1, h, s, level, rho, occ, M, rr, cc, vv, spans)


@njit(cache=True)
def _surely_blocked(geom, d, occ, M, border):
    """True when dash d certainly has a lit pixel outside the frame or on a footprint.

    Points every <= 1 px along the segment: the pixel containing such a point has a
    sub-sample within sqrt(2)/(2s) of it, so it is lit whenever h >= sqrt(2)/(2s) (the
    caller only asks then). A cheap exact rejection before rasterising the dash.
    """
    r0 = geom[d, 0]
    c0 = geom[d, 1]
    r1 = geom[d, 2]
    c1 = geom[d, 3]
    steps = int(math.ceil(math.sqrt((r1 - r0) ** 2 + (c1 - c0) ** 2))) + 1
    lo = border
    hi = M - 1 - border
    for i in range(steps + 1):
        f = i / steps
        r = int(math.floor(r0 + f * (r1 - r0) + 0.5))
        c = int(math.floor(c0 + f * (c1 - c0) + 0.5))
        if r < lo or r > hi or c < lo or c > hi:
            return True
        if occ[r, c] != 0:
            return True
    return False


@njit(cache=True)
def _near_tip(rr, cc, n, tr, tc, radius, out_r, out_c):
    """Lit pixels (rr, cc)[:n] within ``radius`` of the tip (tr, tc), copied to out_*."""
    m = 0
    r2 = radius * radius
    for i in range(n):
        dr = rr[i] - tr
        dc = cc[i] - tc
        if dr * dr + dc * dc <= r2:
            out_r[m] = rr[i]
            out_c[m] = cc[i]
            m += 1
    return m


@njit(cache=True)
def _joined(ar, ac, na, br, bc, nb, link):
    """True iff some pixel of a and some pixel of b have centres at most ``link`` apart."""
    l2 = link * link
    for i in range(na):
        for j in range(nb):
            dr = ar[i] - br[j]
            dc = ac[i] - bc[j]
            if dr * dr + dc * dc <= l2:
                return True
    return False


@njit(cache=True)
def _uniform_point(st, M, border):
    span = M - 1.0 - 2.0 * border
    r = border + uniform(st) * span
    c = border + uniform(st) * span
    return r, c


@njit(cache=True)
def place_paths(st, geom, theta, M, border, L, h, margin, continuity, contour_length,
                distractor_length, distractors, seed_distance, s, level):
    """Steps 4a-4b of the module docstring. Returns True when everything is placed."""
    rho = margin + 1.0
    turns, weights = turn_table(L, margin, continuity)
    w = np.empty(turns.shape[0], dtype=np.float64)
    cap = raster_capacity(L, h, 0.0)
    rr = np.empty(cap, dtype=np.int64)
    cc = np.empty(cap, dtype=np.int64)
    vv = np.empty(cap, dtype=np.int64)
    spans = np.empty((cap, 3), dtype=np.int64)
    tr = np.empty(cap, dtype=np.int64)
    tc = np.empty(cap, dtype=np.int64)
    qr = np.empty(cap, dtype=np.int64)
    qc = np.empty(cap, dtype=np.int64)
    lr = np.empty(cap, dtype=np.int64)
    lc = np.empty(cap, dtype=np.int64)
    occ = np.zeros((M, M), dtype=np.int16)
    n = contour_length
    lo = float(border)
    hi = M - 1.0 - border
    for _attempt in range(IMAGE_TRIES):
        occ[:, :] = 0
        main_ok = False
        for _round in range(MAIN_TRIES):
            a_ok = False
            for _t in range(MAIN_TRIES):
                ar, ac = _uniform_point(st, M, border)
                t0 = 2.0 * math.pi * uniform(st)
                if grow_path(st, geom, theta, 0, n, ar, ac, t0, L, margin, h, s, level, rho, border, M,
                             occ, turns, weights, w, rr, cc, vv, spans, tr, tc, qr, qc, lr, lc):
                    a_ok = True
                    break
            if not a_ok:
                break
            sr = geom[0, 0]
            sc = geom[0, 1]
            for _t in range(MAIN_TRIES):
                phi = 2.0 * math.pi * uniform(st)
                br = sr + seed_distance * math.cos(phi)
                bc = sc + seed_distance * math.sin(phi)
                if br < lo or br > hi or bc < lo or bc > hi:
                    continue
                t0 = 2.0 * math.pi * uniform(st)
                if grow_path(st, geom, theta, n, n, br, bc, t0, L, margin, h, s, level, rho, border, M,
                             occ, turns, weights, w, rr, cc, vv, spans, tr, tc, qr, qc, lr, lc):
                    main_ok = True
                    break
            if main_ok:
                break
            remove_path(geom, 0, n, h, s, level, rho, occ, M, rr, cc, vv, spans)
        if not main_ok:
            continue
        all_ok = True
        for j in range(distractors):
            base = 2 * n + j * distractor_length
            ok = False
            for _t in range(DISTRACTOR_TRIES):
                ar, ac = _uniform_point(st, M, border)
                t0 = 2.0 * math.pi * uniform(st)
                if grow_path(st, geom, theta, base, distractor_length, ar, ac, t0, L, margin, h, s, level,
                             rho, border, M, occ, turns, weights, w, rr, cc, vv, spans, tr, tc, qr, qc, lr, lc):
                    ok = True
                    break
            if not ok:
                all_ok = False
                break
        if all_ok:
            return True
    return False


@njit(cache=True)
def _draw_capsule(img, lab, cls, r0, c0, r1, c1, h, s, level, rr, cc, vv):
    n = raster_capsule(r0, c0, r1, c1, h, s, level, rr, cc, vv)
    M = img.shape[0]
    for i in range(n):
        r = rr[i]
        c = cc[i]
        if r < 0 or r >= M or c < 0 or c >= M:
            continue
        if vv[i] > img[r, c]:
            img[r, c] = vv[i]
        if cls > 0:
            lab[r, c] = cls


@njit(cache=True)
def render_one(seed, split, index, M, border, L, thickness, margin_min, margin_max, continuity,
               contour_length, distractor_length, distractors, seed_distance, marker_radius,
               s, contrast, mark_distractors, img, lab, markers, dashes):
    """One image into img/lab uint8 [M, M], markers float32 [2 (+ distractors), 2],
    dashes float32 [2 contour_length + distractors distractor_length, 4].

    Returns (status, connected, margin): status 0 when placed, 1 when every attempt failed.
    ``lab`` gets 2 on the main path carrying both markers, 1 on the other main path(s).
    """
    st = stream(seed, split, index)
    margin = margin_min + randint(st, margin_max - margin_min + 1)
    origin = randint(st, 2)
    connected = randint(st, 2) == 1
    h = 0.5 * thickness
    level = 255.0 * contrast / (s * s)
    n = contour_length
    total = 2 * n + distractors * distractor_length
    geom = np.empty((total, 4), dtype=np.float64)
    theta = np.empty(total, dtype=np.float64)
    ok = place_paths(st, geom, theta, M, border, L, h, float(margin), continuity, n,
                     distractor_length, distractors, seed_distance, s, level)
    img[:, :] = 0
    lab[:, :] = 0
    markers[:, :] = np.nan
    dashes[:, :] = np.nan
    if not ok:
        return 1, connected, margin
    # main path `origin` first
    for k in range(n):
        for q in range(4):
            dashes[k, q] = geom[origin * n + k, q]
            dashes[n + k, q] = geom[(1 - origin) * n + k, q]
    for d in range(2 * n, total):
        for q in range(4):
            dashes[d, q] = geom[d, q]
    cap = raster_capacity(L, h, marker_radius)
    rr = np.empty(cap, dtype=np.int64)
    cc = np.empty(cap, dtype=np.int64)
    vv = np.empty(cap, dtype=np.int64)
    for d in range(total):
        cls = 0
        if d < n:
            cls = 2 if connected else 1
        elif d < 2 * n:
            cls = 1
        _draw_capsule(img, lab, cls, float(dashes[d, 0]), float(dashes[d, 1]), float(dashes[d, 2]),
                      float(dashes[d, 3]), h, s, level, rr, cc, vv)
    # markers: start tip of main path 0, end tip of main path 0 (connected) or 1
    markers[0, 0] = dashes[0, 0]
    markers[0, 1] = dashes[0, 1]
    end = n - 1 if connected else 2 * n - 1
    markers[1, 0] = dashes[end, 2]
    markers[1, 1] = dashes[end, 3]
    if mark_distractors:
        for j in range(distractors):
            d = 2 * n + j * distractor_length
            markers[2 + j, 0] = dashes[d, 0]
            markers[2 + j, 1] = dashes[d, 1]
    for i in range(markers.shape[0]):
        _draw_capsule(img, lab, 0, float(markers[i, 0]), float(markers[i, 1]), float(markers[i, 0]),
                      float(markers[i, 1]), marker_radius, s, level, rr, cc, vv)
    return 0, connected, margin


@njit(cache=True, parallel=True)
def render_batch(seed, split, start, M, border, L, thickness, margin_min, margin_max, continuity,
                 contour_length, distractor_length, distractors, seed_distance, marker_radius, s,
                 contrast, mark_distractors, img, lab, connected, markers, main_dashes, placed,
                 margins, dashes, status):
    """Images start..start+B-1 (B = img.shape[0]) into the per-key arrays, one per prange step."""
    for b in prange(img.shape[0]):
        code, conn, margin = render_one(
            seed, split, start + b, M, border, L, thickness, margin_min, margin_max, continuity,
            contour_length, distractor_length, distractors, seed_distance, marker_radius, s,
            contrast, mark_distractors, img[b], lab[b], markers[b], dashes[b])
        status[b] = code
        connected[b] = conn
        margins[b] = margin
        main_dashes[b, 0] = contour_length if code == 0 else 0
        main_dashes[b, 1] = contour_length if code == 0 else 0
        placed[b] = distractors if code == 0 else 0


@njit(cache=True)
def path_layer(dashes, first, count, L, thickness, s, contrast, layer):
    """layer uint8 [M, M] <- the 8-bit layer of dashes first..first+count-1 (max over dashes)."""
    h = 0.5 * thickness
    level = 255.0 * contrast / (s * s)
    cap = raster_capacity(L + 1.0, h, 0.0)
    rr = np.empty(cap, dtype=np.int64)
    cc = np.empty(cap, dtype=np.int64)
    vv = np.empty(cap, dtype=np.int64)
    layer[:, :] = 0
    for d in range(first, first + count):
        _draw_capsule(layer, layer, 0, float(dashes[d, 0]), float(dashes[d, 1]), float(dashes[d, 2]),
                      float(dashes[d, 3]), h, s, level, rr, cc, vv)
