"""Pathfinder placement process: the authors' process on the stamps, with local checks only
(the authors dilate the whole frame for every candidate). A preset is one
``records.Params``, its stamps one ``records.Tables``, a thread's scratch one
``records.Workspace``; :func:`render_one` / :func:`render_batch` draw whole images.

The process of one image (draws from ``stream(seed, split, index)``; the authors'
``snakes2.from_wrapper`` / ``snakes.py``):
    1. connected = randint(2); margin = margins[randint(len(margins))]
    Every step between pixels is rounded as theirs, on the absolute coordinate: a point is
    ceil(p + v) for a pixel p and a float step v (their translate_coord), so a step that is
    an integer up to rounding lands one pixel farther near 0 than far from it.
    2. main paths (P.exact, the default: restarted from scratch on any failure, as theirs,
       at most MAIN_TRIES_EXACT; else local retries, see _main_paths):
       mask := the ``border`` frame set to 1.
       a. seed A: up to 3 trials: orientation phi = randint(360) - 180 degrees; its tail
          is uniform over the pixels p where every pixel of the seed's *struct* (the mask
          stamp's full-value pixels shifted by (1, 1)) placed at p avoids the mask (> 0.3)
          and a band of 2 seed_distance at the frame's edge; head = ceil(tail + L u(phi)),
          pivot = ceil(head - (L + margin) u(phi)) must lie in the frame.
       b. seed B: up to 3 trials: phi = randint(360) - 180; tail = round(tail_A +
          seed_distance u(randint(360) degrees)); head and pivot in the frame (nothing
          else is checked, as theirs).
       c. contour_length - 1 rounds, each extending A then B. Extending: pivot :=
          ceil(pivot + (L + 2 margin) u(orientation)); the distinct in-frame points
          floor(pivot + (L + margin) u(a)) for their sample angles a (one per arc of a
          pixel's length: tables.circle_rays), in their sorted order, each get weight
          max(cos(min(continuity |turn|, pi/2)), 0)^2 (1 - max of the mask over a disk of
          radius margin about it); a point is drawn by weight, up to 3 times, until the
          dash from it back towards the pivot has a mask stamp with max(mask + stamp) <
          1.8; then the path's previous dash joins the mask. A dead end (total weight <
          1e-4) or 3 collisions fail the round.
       d. B's last dash joins the mask (A's does not: theirs).
    3. distractors in order, each up to drop_after times, then dropped (theirs: 5, the
       tasks' default; drop_after 0: up to DISTRACTOR_TRIES times, and a distractor that
       still does not fit restarts the image): if under 1% of the frame is free
       (mask <= 0.3) the try fails;
       seed as 2a with a 1-pixel band instead of 2 seed_distance, a marker at its pivot
       (mark_distractors), then distractor_length - 1 extensions as 2c; a failed try
       leaves no trace; a placed one adds its last dash to the mask. Image restarts: at
       most IMAGE_TRIES.
    4. origin = randint(2): the start marker sits at the tail of main path ``origin``'s
       seed, the end marker at the last head of the same path (connected) or the other.
    5. composition (no draws): image = max of every line stamp * contrast and every marker
       disk; peak = its maximum; 8-bit value = rint(255 v / peak); a main path's pixels
       are those where its own layer (its dashes only) is nonzero at 8 bits.
If every attempt fails the kernel returns status 1 and the caller raises.
"""
import math

import numpy as np
from numba import njit, prange

from longsynth.generators.pathfinder.canvas import _any_tile, _clear, _collides, _commit, _uncommit, compose
from longsynth.generators.pathfinder.records import (
    C_CONNECTED, C_DISTRACTORS, C_MARGIN, C_ORIGIN_DASHES, C_OTHER_DASHES, C_STATUS, DASHES, DISTRACTOR_TRIES,
    DISTRACTORS, EXTEND_TRIALS, IMAGE_TRIES, MAIN_DASHES, MAIN_TRIES, MAIN_TRIES_EXACT, MARKERS, OCCUPIED,
    OCCUPIED_PX, SEED_DRAWS, SEED_TRIALS, thread_view)
from longsynth.rng import randint, stream, uniform


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
def _seed_free_inside(T, W, g, d, r, c):
    """_seed_free where every struct pixel lies in the frame, outside the band: the mask only."""
    for q in range(T.n_struct[g, d]):
        if W.mask[r + T.struct[g, d, q, 0], c + T.struct[g, d, q, 1]] >= OCCUPIED:
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
def _head_pivot(T, g, d, r, c):
    """A seed's head and pivot from its tail (r, c) at orientation d, as their translate_coord
    rounds: up, on the absolute coordinate (ceil(2 + 2.4e-16) = 3 but ceil(4 + 2.4e-16) = 4)."""
    hr = int(math.ceil(r + T.seed_step[g, d, 0]))
    hc = int(math.ceil(c + T.seed_step[g, d, 1]))
    return hr, hc, int(math.ceil(hr + T.seed_step[g, d, 2])), int(math.ceil(hc + T.seed_step[g, d, 3]))


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
            # one pass listing them in row-major order, then the draw picks one (not a second
            # pass to find the pick-th: the test is most of the cost when the frame is nearly full)
            spots = np.empty(M * M, np.int64)
            y0, y1, x0, x1 = M, -M, M, -M  # the struct's box: tails whose box lies inside the band
            for q in range(T.n_struct[g, d]):  # need only the mask test
                y0, y1 = min(y0, T.struct[g, d, q, 0]), max(y1, T.struct[g, d, q, 0])
                x0, x1 = min(x0, T.struct[g, d, q, 1]), max(x1, T.struct[g, d, q, 1])
            free = 0
            for y in range(M):  # the tail itself may sit in the band: only struct pixels may not
                inside = band <= y + y0 and y + y1 < M - band
                for x in range(M):
                    if inside and band <= x + x0 and x + x1 < M - band:
                        ok = _seed_free_inside(T, W, g, d, y, x)
                    else:
                        ok = _seed_free(T, W, g, d, y, x, band, M)
                    if ok:
                        spots[free] = y * M + x
                        free += 1
            if free > 0:
                pick = spots[randint(st, free)]
                r, c, found = pick // M, pick % M, True
        if not found:
            return False  # theirs: no available coordinate ends the seeding
        hr, hc, pr, pc = _head_pivot(T, g, d, r, c)
        if _in_frame(hr, hc, M) and _in_frame(pr, pc, M):
            _put(W, slot, T.seed_stamp[g, d], r, c, pr, pc, d)
            return True
    return False


@njit(cache=True)
def _extend(st, P, T, W, g, slot):
    """Dash ``slot`` after dash slot - 1 of the same path (their extend_snake); on success
    dash slot - 1 joins the mask."""
    M = P.M
    o = W.hist[slot - 1, 2]
    pr = int(math.ceil(W.hist[slot - 1, 0] + T.advance[g, o, 0]))  # their translate_coord: absolute
    pc = int(math.ceil(W.hist[slot - 1, 1] + T.advance[g, o, 1]))
    nc, rc = T.n_cand[g], T.reach[g]
    w = W.weight
    for a in range(nc):  # a loop, not w[:nc] = -1: a slice is a new reference (NRT incref/decref)
        w[a] = -1.0  # not (yet) a candidate about this pivot
    total = 0.0
    m, b = T.margins[g], P.border  # the disk's rows and columns reach m from its centre
    lo, hi = b + m, M - b - m
    # their get_coords_cmf: in-frame samples, truncated, distinct; only the rays that can give a
    # point of nonzero turn weight (the others leave weight 0 where they land, as an unvisited point)
    for e in range(T.n_live[g, o]):
        a = T.live[g, o, e]
        yf, xf = pr + T.ray[g, a, 0], pc + T.ray[g, a, 1]
        if yf < 0.0 or yf >= M or xf < 0.0 or xf >= M:
            continue
        y, x = int(math.floor(yf)), int(math.floor(xf))  # their astype(int): >= 0 here, so floor
        q = T.qmap[g, y - pr + rc, x - pc + rc]
        if w[q] >= 0.0:
            continue
        cw = T.turn[g, o, q]
        if cw == 0.0:
            w[q] = 0.0
            continue
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
    for a in range(nc):
        w[a] = max(w[a], 0.0)
    if total < 1e-4:
        return False
    for _ in range(EXTEND_TRIALS):
        u = uniform(st) * total
        q = 0
        acc = w[0]
        while acc <= u and q < nc - 1:
            q += 1
            acc += w[q]
        while w[q] == 0.0:  # u fell past the last step of the running sum
            # stops at q >= 0: total >= 1e-4 sums the w >= 0, so some w[a] > 0; the loop above
            # ends at a q with w[q] > 0 (acc grew past u there) unless it reached nc - 1
            q -= 1
        hr, hc = pr + T.cand[g, q, 0], pc + T.cand[g, q, 1]
        k = T.cand_stamp[g, q]
        if _collides(T, W, g, k, hr, hc, M):
            continue
        _commit(P, T, W, g, slot - 1)
        _put(W, slot, k, hr, hc, pr, pc, 360 + q)
        return True
    return False


@njit(cache=True)
def _main_paths(st, P, T, W, g):
    """Both main paths (their two_snakes): dashes of A in slots 0..n-1, of B in n..2n-1.

    Grown in their order (A, B, A, B, ...). P.exact: any failure restarts both, as theirs
    (their exact law, heavy time tail). Otherwise a failed extension removes the path's
    last dash and grows again from the one before (at most GROW_FAILS per image, then
    both restart): local retries with a short time tail."""
    M, n = P.M, P.contour_length
    have = np.ones(2, np.int64)  # per restart: allocated once, reset below
    fails = np.zeros(2, np.int64)
    for _ in range(MAIN_TRIES_EXACT if P.exact else MAIN_TRIES):
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
            hr, hc, pr, pc = _head_pivot(T, g, d, br, bc)
            if _in_frame(hr, hc, M) and _in_frame(pr, pc, M):
                _put(W, n, T.seed_stamp[g, d], br, bc, pr, pc, d)
                ok = True
                break
        if not ok:
            continue
        have[0], have[1] = 1, 1
        fails[0], fails[1] = 0, 0
        # bounded: a pass adds a dash (have[s] <= n) or counts a failure, which ends the try
        # past grow_fails per path and removes one dash: <= 2 n + 4 (grow_fails + 1) passes
        while have[0] < n or have[1] < n:
            s = 0 if (have[0] <= have[1] and have[0] < n) or have[1] >= n else 1
            j = have[s]
            if _extend(st, P, T, W, g, s * n + j):
                have[s] += 1
                continue
            fails[s] += 1
            if P.exact or j < 2 or fails[s] > P.grow_fails:
                ok = False
                break
            _uncommit(P, T, W, g, s * n + j - 2)  # drop the last dash (and grow again from the one before)
            have[s] = j - 1
        if not ok:
            continue
        _commit(P, T, W, g, 2 * n - 1)  # theirs: B's last dash joins the mask, A's does not
        W.n[MAIN_DASHES], W.n[MAIN_DASHES + 1] = have[0], have[1]
        return True
    return False


@njit(cache=True)
def _distractor(st, P, T, W, g, base):
    """One distractor in slots base.. (their make_snake); no trace unless placed whole."""
    M = P.M
    if M * M - W.n[OCCUPIED_PX] < 0.01 * M * M:
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
        W.marker[W.n[MARKERS], 0] = W.hist[base, 0]
        W.marker[W.n[MARKERS], 1] = W.hist[base, 1]
        W.n[MARKERS] += 1
    return True


@njit(cache=True)
def place(st, P, T, W, g):
    """Steps 2-3 of the process into W.dash and W.marker[2:]. Returns 0 when placed, 1 when
    the main paths do not fit, 2 when a distractor does not."""
    n = P.contour_length
    for _ in range(IMAGE_TRIES):
        if not _main_paths(st, P, T, W, g):
            return 1
        W.n[MARKERS] = 2
        W.n[DISTRACTORS] = 0
        ok = True
        tries = P.drop_after if P.drop_after > 0 else DISTRACTOR_TRIES
        for i in range(P.distractors):
            placed = False
            for _ in range(tries):
                if _distractor(st, P, T, W, g, 2 * n + W.n[DISTRACTORS] * P.distractor_length):
                    placed = True
                    break
            if placed:
                W.n[DISTRACTORS] += 1
            elif P.drop_after == 0:
                ok = False
                break
        if ok:
            W.n[DASHES] = 2 * n + W.n[DISTRACTORS] * P.distractor_length
            return 0
    return 2


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
        counts[C_STATUS] = -failed
        return 0.0
    origin = randint(st, 2)
    end = origin if connected else 1 - origin
    n = P.contour_length
    W.marker[0, 0], W.marker[0, 1] = W.dash[origin * n, 1], W.dash[origin * n, 2]  # seed tail
    W.marker[1, 0], W.marker[1, 1] = W.dash[end * n + n - 1, 1], W.dash[end * n + n - 1, 2]  # last head
    if n == 1:  # a one-dash path ends where it starts
        W.marker[1, 0], W.marker[1, 1] = W.dash[end * n, 1], W.dash[end * n, 2]
    peak = compose(P, T, W, g, origin, connected, img, lab)
    for i in range(W.n[DASHES]):
        src = i
        if i < 2 * n:
            src = (i % n) + n * (origin if i < n else 1 - origin)
        k = W.dash[src, 0]
        dashes[i, 0], dashes[i, 1] = W.dash[src, 1], W.dash[src, 2]
        dashes[i, 2], dashes[i, 3] = T.key[g, k, 0], T.key[g, k, 1]
    for i in range(W.n[MARKERS]):
        markers[i, 0], markers[i, 1] = W.marker[i, 0], W.marker[i, 1]
    counts[C_CONNECTED] = 1 if connected else 0
    counts[C_ORIGIN_DASHES] = W.n[MAIN_DASHES + origin]
    counts[C_OTHER_DASHES] = W.n[MAIN_DASHES + 1 - origin]
    counts[C_DISTRACTORS] = W.n[DISTRACTORS]
    counts[C_MARGIN] = T.margins[g]
    counts[C_STATUS] = 1
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
    for t in prange(nt):  # t as int64: the loop's own uint64 index compiled a second _render_strided (7 s)
        _render_strided(np.int64(t), nt, seed, split, start, P, T, works, img, lab, dashes, markers, counts, peak)
