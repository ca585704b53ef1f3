"""Pathfinder stamp tables (Python and PIL, once per preset and process).

:func:`build_tables` draws every dash the process can place, with PIL exactly as the
authors' ``draw_line_n_mask`` does: a line of width ``round(thickness * aa)`` on a float
canvas ``aa`` times finer, reduced with PIL's LANCZOS filter (the *line stamp*), and the same
line dilated by a disk of radius ``margin * aa``, as 8-bit, reduced the same way (the *mask
stamp*). The set is finite: a path's first dash points at a whole number of degrees, every
later dash at one of the integer offsets on the circle of radius ``paddle_length + margin``.
The marker disk is drawn once the same way. So the kernels never resample anything: they add
stamps (``canvas.py``).
"""
import math
from functools import lru_cache

import numpy as np

from longsynth.generators.pathfinder.records import HOT, Tables

def _ceil_off(v, base):
    """Their translate_coord rounding from a blown canvas's centre ``base``: ceil(base + v) - base
    (where v is an integer up to rounding, e.g. 4 cos(120 deg) = -1.9999999999999991, the
    float sum depends on base, so the centre itself is used)."""
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


def circle_rays(step):
    """Their get_coords_cmf samples: float offsets (dy, dx) [K, 2] on the circle of radius step,
    one per arc of a pixel's length, computed as theirs (vectorised sin and cos). A pivot p's
    candidates are the distinct in-frame floor(p + offset): absolute coordinates, so an offset
    an ulp below an integer gives that integer at a large p (the sum rounds up) and one less
    near 0."""
    deg = 360. / (2 * step * np.pi)
    a = np.arange(0, 360, deg) * np.pi / 180
    return np.stack([step * np.sin(a), step * np.cos(a)], axis=1)


def circle_points(rays):
    """Every integer offset a ray can give about some pivot (see circle_rays), sorted as their
    np.unique sorts the candidates: floor(offset), and the integer above where the sum can
    round up to it (the offset is within 1e-12 below it; pivots are < 2^20)."""
    pts = set()
    for dy, dx in rays:
        ys = {math.floor(dy)} | ({math.floor(dy) + 1} if 0 < math.ceil(dy) - dy < 1e-12 else set())
        xs = {math.floor(dx)} | ({math.floor(dx) + 1} if 0 < math.ceil(dx) - dx < 1e-12 else set())
        pts |= {(y, x) for y in ys for x in xs}
    return np.array(sorted(pts), dtype=np.int64)


@lru_cache(maxsize=8)
def build_tables(L, thickness, margins, aa, marker_radius, continuity, eight_bit=False):
    """Every stamp of a preset (see the module docstring and records.Tables); margins is a
    tuple. eight_bit: line stamps and the marker disk as the original generator makes them
    (8-bit). A dash's end on its blown canvas is rounded from the canvas's centre R aa, as
    theirs; the steps between pixels of the frame stay floats, rounded in the kernels on
    absolute coordinates (process.py)."""
    per = []
    for m in margins:
        R = L + int(math.ceil(thickness)) + m
        cb = R * aa
        keys, index = [], {}

        def stamp(dyb, dxb):
            k = (dyb, dxb)
            if k not in index:
                index[k] = len(keys)
                keys.append(k)
            return index[k]

        seed_stamp, seed_step, angles, advance = [], [], [], []
        for deg in range(-180, 180):
            phi = deg * np.pi / 180
            seed_stamp.append(stamp(_ceil_off(L * aa * np.sin(phi), cb), _ceil_off(L * aa * np.cos(phi), cb)))
            back = phi + np.pi if phi + np.pi < np.pi else phi - np.pi
            seed_step.append((L * np.sin(phi), L * np.cos(phi), (L + m) * np.sin(back), (L + m) * np.cos(back)))
            angles.append(phi)
        rays = circle_rays(L + m)
        cand = circle_points(rays)
        cand_stamp = []
        for a in np.arctan2(cand[:, 0], cand[:, 1]):  # vectorised, as theirs
            f = _flip(a)
            cand_stamp.append(stamp(_ceil_off(L * aa * np.sin(f), cb), _ceil_off(L * aa * np.cos(f), cb)))
            angles.append(a)
        for a in angles:
            advance.append(((L + 2 * m) * np.sin(a), (L + 2 * m) * np.cos(a)))
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
        per.append(dict(R=R, keys=keys, drawn=drawn, seed_stamp=seed_stamp, seed_step=seed_step,
                        structs=structs, rays=rays, cand=cand, cand_stamp=cand_stamp,
                        angles=angles, advance=advance, disk=rows, dead=dead))
    G = len(per)
    S = max(2 * p["R"] + 1 for p in per)
    K = max(len(p["keys"]) for p in per)
    C = max(len(p["cand"]) for p in per)
    NR = max(len(p["rays"]) for p in per)
    reach = max(L + m for m in margins) + 1  # |floor(offset) + 1| <= L + margin + 1
    Q = max(len(s) for p in per for s in p["structs"])
    H = max(int(np.count_nonzero(mk >= HOT)) for p in per for _, mk in p["drawn"])
    t = dict(
        margins=np.array(margins, dtype=np.int64), R=np.array([p["R"] for p in per], dtype=np.int64),
        key=np.zeros((G, K, 2), np.int64), line=np.zeros((G, K, S, S), np.float32),
        mask=np.zeros((G, K, S, S), np.uint8), span=np.zeros((G, K, S, 2), np.int64),
        lspan=np.zeros((G, K, S, 2), np.int64),
        hot=np.zeros((G, K, H, 2), np.int64), hspan=np.zeros((G, K, S, 2), np.int64),
        hbox=np.zeros((G, K, 4), np.int64),
        n_hot=np.zeros((G, K), np.int64), seed_stamp=np.zeros((G, 360), np.int64),
        seed_step=np.zeros((G, 360, 4)),
        struct=np.zeros((G, 360, Q, 2), np.int64), n_struct=np.zeros((G, 360), np.int64),
        seed_dead=np.zeros((G, 360), np.int64),
        cand=np.zeros((G, C, 2), np.int64), cand_stamp=np.zeros((G, C), np.int64),
        n_cand=np.zeros(G, np.int64), ray=np.zeros((G, NR, 2)), n_ray=np.zeros(G, np.int64),
        reach=np.full(G, reach, np.int64), qmap=np.full((G, 2 * reach + 1, 2 * reach + 1), -1, np.int64),
        angle=np.zeros((G, 360 + C)), advance=np.zeros((G, 360 + C, 2)),
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
            hot = np.argwhere(mk >= HOT)  # HOT / 255 = 0.8: mask + stamp >= 1.8 needs stamp >= 0.8
            t["hot"][g, k, :len(hot)] = hot
            t["n_hot"][g, k] = len(hot)
        t["seed_stamp"][g] = p["seed_stamp"]
        t["seed_step"][g] = p["seed_step"]
        for d, st in enumerate(p["structs"]):
            t["struct"][g, d, :len(st)] = st
            t["n_struct"][g, d] = len(st)
            t["seed_dead"][g, d] = p["dead"][d]
        c = len(p["cand"])
        t["cand"][g, :c] = p["cand"]
        t["cand_stamp"][g, :c] = p["cand_stamp"]
        t["n_cand"][g] = c
        for q, (dy, dx) in enumerate(p["cand"]):
            t["qmap"][g, dy + reach, dx + reach] = q
        t["ray"][g, :len(p["rays"])] = p["rays"]
        t["n_ray"][g] = len(p["rays"])
        t["angle"][g, :len(p["angles"])] = p["angles"]
        t["advance"][g, :len(p["advance"])] = p["advance"]
        for row, (dy, half) in enumerate(p["disk"]):
            t["disk"][g, row] = (dy, half)
    t["turn"] = np.zeros((G, 360 + C, C))
    for g, p in enumerate(per):
        c = len(p["cand"])
        a = np.asarray(p["angles"])
        delta = np.abs(a[:, None] - a[None, 360:])
        delta = np.minimum(delta, 2 * np.pi - delta)
        w = np.maximum(np.cos(np.minimum(delta * continuity, 0.5 * np.pi)), 0) ** 2
        w[w <= 1e-12] = 0.0  # cos(pi/2)^2 = 4e-33 is their "zero": never drawn
        t["turn"][g, :len(a), :c] = w
    # rays worth visiting per orientation: a ray whose pixel (floor(pivot + offset), one
    # either side of floor(offset) by rounding) has turn weight 0 at every candidate only ever
    # weighs 0, and skipping it changes nothing (process._extend)
    t["live"] = np.zeros((G, 360 + C, NR), np.int32)
    t["n_live"] = np.zeros((G, 360 + C), np.int64)
    for g, p in enumerate(per):
        nr = len(p["rays"])
        near = np.full((nr, 9), -1, np.int64)  # the candidate indices each ray can give
        for a, (dy, dx) in enumerate(p["rays"]):
            fy, fx = math.floor(dy), math.floor(dx)
            near[a] = [t["qmap"][g, fy + sy + reach, fx + sx + reach] if max(abs(fy + sy), abs(fx + sx)) <= reach
                       else -1 for sy in (-1, 0, 1) for sx in (-1, 0, 1)]
        for o in range(360 + len(p["cand"])):
            tw = np.append(t["turn"][g, o], 0.0)  # index -1: no candidate, weight 0
            keep = np.nonzero((tw[near] != 0.0).any(axis=1))[0]
            t["live"][g, o, :len(keep)] = keep
            t["n_live"][g, o] = len(keep)
    for v in t.values():
        v.setflags(write=False)
    return Tables(**t)
