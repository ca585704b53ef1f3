"""Pathfinder's image formation from the drawn geometry: pathfinder-seg's (the DLR authors')
and classic Pathfinder's (the original generator's, with SciPy <= 1.2's bytescale)."""
import math

import numpy as np


# ---------------------------------------------------------------- pathfinder-seg (image formation)
# Written from docs/tasks/pathfinder.md, "How an image is made" (the authors' image formation): given the drawn
# geometry (dashes, markers) the image and labels follow; never from the renderer's stamps.


def pathfinder_compose(dashes, markers, margin, connected, L, thickness, aa, contrast, radius, contour_length, size):
    """Image and labels from the drawn geometry, by the authors' image formation (docs/tasks/pathfinder.md):
    every dash a PIL line of width round(thickness aa) on a float canvas aa times finer,
    of side 2 R aa + 1 (R = L + ceil(thickness) + margin) with the line's start at its
    centre, reduced to 2R + 1 with PIL's LANCZOS and centred on the dash's start pixel,
    times contrast; every marker a disk of radius ``radius`` on the whole frame drawn aa
    times finer and reduced the same way; all composed by maximum, rescaled so the peak is 255 (rounded
    half to even); a main path's pixels are those where its own layer is nonzero at 8 bits.
    Dashes: origin path, other path, distractors; rows of -1 are absent."""
    from PIL import Image, ImageDraw

    M, n = size, contour_length
    R = L + math.ceil(thickness) + margin
    image = np.zeros((M, M))
    layers = np.zeros((2, M, M))

    def put(canvas, small, r, c):
        h = small.shape[0] // 2
        for i in range(small.shape[0]):
            for j in range(small.shape[1]):
                y, x = r - h + i, c - h + j
                if 0 <= y < M and 0 <= x < M:
                    canvas[y, x] = max(canvas[y, x], small[i, j])

    for q, (r, c, dy, dx) in enumerate(np.asarray(dashes, dtype=np.int64).tolist()):
        if r < 0:
            continue
        big = Image.new("F", (2 * R * aa + 1, 2 * R * aa + 1), 0.0)
        ImageDraw.Draw(big).line([(R * aa, R * aa), (R * aa + dx, R * aa + dy)], fill=255.0,
                                 width=int(round(thickness * aa)))
        small = np.array(big.resize((2 * R + 1, 2 * R + 1), Image.LANCZOS)).astype(np.float64) / 255 * contrast
        put(image, small, r, c)
        if q < 2 * n:
            put(layers[q // n], small, r, c)
    for r, c in np.asarray(markers, dtype=np.int64).tolist():
        if r >= 0:  # a disk on the whole frame aa times finer, reduced to M x M
            yy, xx = np.ogrid[-r * aa:(M - r) * aa, -c * aa:(M - c) * aa]
            disk = (xx**2 + yy**2 <= (radius * aa) ** 2).astype(np.float64)
            image = np.maximum(image, np.array(Image.fromarray(disk).resize((M, M), Image.LANCZOS)).astype(np.float64))
    peak = image.max()
    img = np.rint(image / peak * 255).astype(np.uint8)
    tgt = np.zeros((M, M), dtype=np.uint8)
    for p in range(2):
        on = np.rint(layers[p] / peak * 255) >= 1
        tgt[on] = np.maximum(tgt[on], 2 if (connected and p == 0) else 1)
    return img, tgt, peak


def scipy_bytescale(data):
    """scipy.misc.bytescale (SciPy <= 1.2), which the original Pathfinder generator's
    imresize / imsave apply to float images: (data - min) * (255 / (max - min)), clipped,
    + 0.5, truncated to uint8."""
    data = np.asarray(data)
    lo, hi = data.min(), data.max()
    scale = 255.0 / ((hi - lo) or 1)
    return (((data - lo) * scale).clip(0, 255) + 0.5).astype(np.uint8)


def lra_pathfinder_compose(dashes, markers, margin, L, thickness, aa, contrast, dcontrast, radius,
                           contour_length, size):
    """Image by the original generator's formation (drewlinsley/pathfinder, snakes.py
    draw_line_n_mask and snakes2.py draw_circle / from_wrapper, with SciPy <= 1.2's
    imresize / imsave): every dash a PIL line on a float canvas aa times finer, bytescaled
    to 8 bits and reduced with LANCZOS as an 8-bit image, / 255 times contrast (main paths)
    or dcontrast (distractors), kept as float32 and placed centred on its start pixel; every
    marker a 0/1 disk on the whole frame aa times finer, bytescaled, reduced the same way, / 255;
    all composed by maximum and bytescaled. Rows of -1 are absent."""
    from PIL import Image, ImageDraw

    M, n = size, contour_length
    R = L + math.ceil(thickness) + margin
    image = np.zeros((M, M))
    for q, (r, c, dy, dx) in enumerate(np.asarray(dashes, dtype=np.int64).tolist()):
        if r < 0:
            continue
        big = Image.new("F", (2 * R * aa + 1, 2 * R * aa + 1), 0.0)
        ImageDraw.Draw(big).line([(R * aa, R * aa), (R * aa + dx, R * aa + dy)], fill=255.0,
                                 width=int(round(thickness * aa)))
        small8 = Image.fromarray(scipy_bytescale(np.asarray(big)), mode="L").resize((2 * R + 1, 2 * R + 1),
                                                                                    Image.LANCZOS)
        gain = contrast if q < 2 * n else dcontrast
        small = (np.asarray(small8).astype(np.float64) / 255 * gain).astype(np.float32)
        for i in range(2 * R + 1):
            for j in range(2 * R + 1):
                y, x = r - R + i, c - R + j
                if 0 <= y < M and 0 <= x < M:
                    image[y, x] = max(image[y, x], float(small[i, j]))
    for r, c in np.asarray(markers, dtype=np.int64).tolist():
        if r >= 0:
            yy, xx = np.ogrid[-r * aa:(M - r) * aa, -c * aa:(M - c) * aa]
            disk = (xx**2 + yy**2 <= (radius * aa) ** 2).astype(np.float64)
            small8 = Image.fromarray(scipy_bytescale(disk), mode="L").resize((M, M), Image.LANCZOS)
            image = np.maximum(image, np.asarray(small8).astype(np.float64) / 255)
    return scipy_bytescale(image), image.max()


def components8(mask):
    """Number of 8-connected components of a boolean image."""
    from scipy import ndimage

    return int(ndimage.label(mask, structure=np.ones((3, 3), int))[1])
