"""Small Pillow figures for previews and reports (no plotting library needed).

    lines(panels, path)  stacked line panels: [(label, y[T] or y[T, C] [, x[T]]), ...]
    bars(panels, path)   stacked histograms:  [(label, edges[K+1], counts[K]), ...]
    grid(images, path)   image grid of uint8 [H, W] or [H, W, 3] arrays
Each returns the PIL image and saves it when ``path`` is given. Axes carry round tick
values (1, 2, 2.5, 5 x 10^k) with light grid lines; text uses Pillow's built-in scalable
font, sized to the figure (captions grow with the tiles they label).
"""
import functools
import math

import numpy as np
from PIL import Image, ImageDraw, ImageFont

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
          (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]
INK, GRID, WHITE = (30, 30, 30), (215, 215, 215), (255, 255, 255)
FONT_PX = 13  # text size of line and bar figures
_MARGIN_L, _MARGIN_R, _HEAD, _FOOT = 70, 16, 20, 18


@functools.lru_cache(maxsize=None)
def font(size=FONT_PX):
    """Pillow's built-in font at ``size`` px (needs Pillow's FreeType support, standard in wheels)."""
    return ImageFont.load_default(size=size)


def _save(img, path):
    if path is not None:
        img.save(path)
    return img


def _canvas(width, height, title):
    top = 26 if title else 4
    img = Image.new("RGB", (width, height + top), WHITE)
    draw = ImageDraw.Draw(img)
    if title:
        draw.text((8, 5), title, fill=INK, font=font(FONT_PX + 2))
    return img, draw, top


def _fmt(v):
    if float(v).is_integer() and abs(v) < 1e7:
        return f"{int(v)}"
    return f"{v:.3g}"


def ticks(lo, hi, n=5):
    """Round values inside [lo, hi], as close to ``n`` of them as steps of 1, 2, 2.5 or 5 x 10^k
    allow (the larger step on a tie)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    k = math.floor(math.log10((hi - lo) / max(n - 1, 1)))
    best = None
    for e in (k - 1, k, k + 1):
        for m in (1, 2, 2.5, 5):
            step = m * 10.0 ** e
            first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
            score = (abs(last - first + 1 - n), -step)
            if best is None or score < best[0]:
                best = (score, [round(i * step, 12) for i in range(first, last + 1)])
    return best[1]


def _frame(draw, box, lo, hi, label, xrange=None):
    """Panel box, its label above, y ticks at the left and (given xrange) x ticks below.

    xrange: (x_lo, x_hi, to_pixel), to_pixel mapping an x value to a pixel column."""
    x0, y0, x1, y1 = box
    f = font()
    draw.text((x0, y0 - _HEAD + 3), label, fill=INK, font=f)
    for v in ticks(lo, hi):
        y = _ypix(v, lo, hi, y0, y1)
        draw.line((x0, y, x1, y), fill=GRID)
        draw.line((x0 - 4, y, x0, y), fill=INK)
        text = _fmt(v)
        draw.text((x0 - 6 - draw.textlength(text, font=f), y - FONT_PX // 2 - 1), text, fill=INK, font=f)
    if xrange is not None:
        xlo, xhi, to_pixel = xrange
        for v in ticks(xlo, xhi, 6):
            x = to_pixel(v)
            draw.line((x, y1, x, y1 + 4), fill=INK)
            text = _fmt(v)
            draw.text((x - draw.textlength(text, font=f) / 2, y1 + 4), text, fill=INK, font=f)
    draw.rectangle(box, outline=(160, 160, 160))


def _ypix(v, lo, hi, y0, y1):
    return y1 - (v - lo) / (hi - lo) * (y1 - y0)


def lines(panels, path=None, *, title=None, width=900, panel_height=120, robust=False):
    """Stacked panels of line series; long series are drawn as min/max envelopes per pixel.

    A panel is ``(label, y)`` (x = 0, 1, ...) or ``(label, y, x)`` with x[T] increasing
    (e.g. the training steps of evaluations). ``robust``: the y range spans the 0.5-99.5
    percentiles, so a few outliers (a first step's loss) do not flatten the rest; points
    outside are drawn at the frame's edge.
    """
    step = panel_height + _HEAD + _FOOT + 6
    img, draw, top = _canvas(width, step * len(panels), title)
    for p, panel in enumerate(panels):
        label, values = panel[0], panel[1]
        v = np.asarray(values, dtype=np.float64)
        v = v[:, None] if v.ndim == 1 else v.reshape(v.shape[0], -1)
        T, cols = v.shape
        xs = np.asarray(panel[2], dtype=np.float64) if len(panel) > 2 else np.arange(T, dtype=np.float64)
        box = (_MARGIN_L, top + p * step + _HEAD, width - _MARGIN_R, top + p * step + _HEAD + panel_height)
        finite = v[np.isfinite(v)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if robust and finite.size:
            lo, hi = (float(q) for q in np.percentile(finite, [0.5, 99.5]))
            v = np.clip(v, lo, hi)
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        x0, y0, x1, y1 = box
        span = x1 - x0 - 2
        xlo, xhi = (float(xs[0]), float(xs[-1])) if T else (0.0, 1.0)
        if xhi <= xlo:
            xhi = xlo + 1.0

        def to_pixel(x, xlo=xlo, xhi=xhi, x0=x0, span=span):
            return x0 + 1 + (x - xlo) / (xhi - xlo) * span

        _frame(draw, box, lo, hi, label, (xlo, xhi, to_pixel))
        if lo < 0 < hi:
            yz = _ypix(0.0, lo, hi, y0, y1)
            draw.line((x0, yz, x1, yz), fill=(150, 150, 150))
        for c in range(cols):
            color = COLORS[c % len(COLORS)]
            series = v[:, c]
            if T <= span:
                pts = [(float(to_pixel(x)), float(_ypix(y, lo, hi, y0, y1))) for x, y in zip(xs, series)
                       if np.isfinite(y)]
                if len(pts) > 1:
                    draw.line(pts, fill=color, width=1)
                if len(pts) <= 60:  # few points (e.g. evaluations): mark each one
                    for px, py in pts:
                        draw.ellipse((px - 2, py - 2, px + 2, py + 2), fill=color)
            else:  # evenly spaced x assumed: one min/max stroke per pixel column
                edges = np.linspace(0, T, span + 1).astype(int)
                for px in range(span):
                    seg = series[edges[px] : max(edges[px + 1], edges[px] + 1)]
                    seg = seg[np.isfinite(seg)]
                    if seg.size:
                        ya, yb = _ypix(seg.min(), lo, hi, y0, y1), _ypix(seg.max(), lo, hi, y0, y1)
                        draw.line((x0 + 1 + px, ya, x0 + 1 + px, yb), fill=color)
    return _save(img, path)


def bars(panels, path=None, *, title=None, width=900, panel_height=140):
    """Stacked histograms from (label, edges, counts)."""
    step = panel_height + _HEAD + _FOOT + 6
    img, draw, top = _canvas(width, step * len(panels), title)
    for p, (label, edges, counts) in enumerate(panels):
        edges = np.asarray(edges, dtype=np.float64)
        counts = np.asarray(counts, dtype=np.float64)
        box = (_MARGIN_L, top + p * step + _HEAD, width - _MARGIN_R, top + p * step + _HEAD + panel_height)
        hi = float(counts.max()) if counts.size and counts.max() > 0 else 1.0
        x0, y0, x1, y1 = box
        k = len(counts)
        w = (x1 - x0 - 2) / max(k, 1)

        def to_pixel(x, edges=edges, x0=x0, w=w):  # bins may be uneven: interpolate over the edges
            return x0 + 1 + float(np.interp(x, edges, np.arange(len(edges)))) * w

        for i, c in enumerate(counts):
            xa = x0 + 1 + i * w
            draw.rectangle((xa, _ypix(c, 0.0, hi, y0, y1), xa + max(w - 1, 1), y1), fill=COLORS[0])
        _frame(draw, box, 0.0, hi, label, (float(edges[0]), float(edges[-1]), to_pixel))
    return _save(img, path)


def caption_px(tile_width):
    """Caption text size for tiles ``tile_width`` px wide: about 1/18 of it, at least 14 px."""
    return max(14, tile_width // 18)


def grid(images, path=None, *, cols, labels=None, pad=4, scale=1):
    """Images (uint8 [H, W] or [H, W, 3], same size) in a grid, optional caption per image.

    Captions scale with the tiles (``caption_px``), so they stay readable at normal zoom
    on 512-px tiles as on 128-px ones."""
    arrs = [np.asarray(a) for a in images]
    h, w = arrs[0].shape[:2]
    h, w = h * scale, w * scale
    size = caption_px(w)
    cap = size + 8 if labels else 0
    rows = (len(arrs) + cols - 1) // cols
    img = Image.new("RGB", (cols * (w + pad) + pad, rows * (h + pad + cap) + pad), WHITE)
    draw = ImageDraw.Draw(img)
    for i, a in enumerate(arrs):
        r, c = divmod(i, cols)
        tile = Image.fromarray(a.astype(np.uint8)).convert("RGB")
        if scale != 1:
            tile = tile.resize((w, h), Image.NEAREST)
        x, y = pad + c * (w + pad), pad + r * (h + pad + cap)
        if labels:
            draw.text((x + 2, y + 2), str(labels[i]), fill=INK, font=font(size))
        img.paste(tile, (x, y + cap))
    return _save(img, path)


def colorize(labels, palette):
    """uint8 [H, W, 3] image of integer labels, palette[k] = (r, g, b) for label k."""
    lut = np.asarray(palette, dtype=np.uint8)
    return lut[np.asarray(labels, dtype=np.int64)]
