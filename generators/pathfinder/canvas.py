"""Pathfinder canvas kernels: stamps on the frame.

The occupancy mask (their float mask in 1/255 steps) with its tile flags: a dash joins it
(:func:`_commit`), leaves it (:func:`_uncommit`), or is tested against it (:func:`_collides`,
their ``max(mask + stamp) >= 1.8``). Image formation: line stamps and marker disks drawn by
maximum (:func:`draw_dash`, :func:`draw_marker`; a marker the frame's edge cuts is reduced as
PIL does on the whole frame, with the ports of ``resample.py``), and :func:`compose`, the
8-bit image and per-pixel labels of one placed image.
"""
import numpy as np
from numba import njit

from longsynth.generators.pathfinder.records import (CLEAN, COLLIDE, DASHES, MARKERS, OCCUPIED, OCCUPIED_PX,
                                                    TILE)
from longsynth.generators.pathfinder.resample import PRECISION_BITS, clip8, fixed

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
    W.n[CLEAN] = 0
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
            W.n[OCCUPIED_PX] += raised
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
    W.n[OCCUPIED_PX] -= removed
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
    W.n[OCCUPIED_PX] += added


@njit(cache=True)
def _clear(P, W):
    """Empty frame: no dash placed, the border in the mask. Nothing to do while W.n[CLEAN]
    holds (no commit since the last call: most restarts of the main paths fail at a seed, at
    32 px nearly all, and seeds only write dash slots, whose flags _put leaves 0)."""
    if W.n[CLEAN]:
        return
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
    W.n[OCCUPIED_PX] = M * M - max(M - 2 * b, 0) ** 2
    W.n[CLEAN] = 1


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
        xmin, n = W.lzx[xx, 0], W.lzx[xx, 1]  # resample.coeffs(xx, big, float(aa)), tabulated
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
                    ss += 255 * fixed(W.lzk[xx, x])
            H[Y - Y0, xx - c0] = clip8(ss)
    for yy in range(r0, r1):
        ymin, n = W.lzx[yy, 0], W.lzx[yy, 1]
        for xx in range(c0, c1):
            ss = 1 << (PRECISION_BITS - 1)
            for y in range(n):
                Y = ymin + y
                if Y0 <= Y < Y1:
                    ss += H[Y - Y0, xx - c0] * fixed(W.lzk[yy, y])
            v = clip8(ss) / 255.0
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
    for i in range(W.n[DASHES]):
        k, r, c = W.dash[i, 0], W.dash[i, 1], W.dash[i, 2]
        contrast = P.contrast if i < 2 * n else P.dcontrast
        peak = max(peak, draw_dash(T, g, k, r, c, contrast, W.image, f32))
        if i < 2 * n and P.labels:
            draw_dash(T, g, k, r, c, contrast, W.layer[i // n], f32)
    for i in range(W.n[MARKERS]):
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
