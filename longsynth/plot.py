"""Small Pillow figures for previews and reports (no plotting library needed).

    lines(panels, path)  stacked line panels: [(label, array[T] or array[T, C]), ...]
    bars(panels, path)   stacked histograms:  [(label, edges[K+1], counts[K]), ...]
    grid(images, path)   image grid of uint8 [H, W] or [H, W, 3] arrays
Each returns the PIL image and saves it when ``path`` is given.
"""
import numpy as np
from PIL import Image, ImageDraw, ImageFont

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
          (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]
INK, GRID, WHITE = (30, 30, 30), (215, 215, 215), (255, 255, 255)
_FONT = ImageFont.load_default()
_MARGIN_L, _MARGIN_R, _HEAD = 64, 12, 18


def _save(img, path):
    if path is not None:
        img.save(path)
    return img


def _canvas(width, height, title):
    top = 22 if title else 4
    img = Image.new("RGB", (width, height + top), WHITE)
    draw = ImageDraw.Draw(img)
    if title:
        draw.text((8, 5), title, fill=INK, font=_FONT)
    return img, draw, top


def _fmt(v):
    return f"{v:.3g}"


def _frame(draw, box, lo, hi, label):
    x0, y0, x1, y1 = box
    draw.rectangle(box, outline=GRID)
    draw.text((x0, y0 - _HEAD + 3), label, fill=INK, font=_FONT)
    draw.text((4, y0), _fmt(hi), fill=INK, font=_FONT)
    draw.text((4, y1 - 11), _fmt(lo), fill=INK, font=_FONT)


def _ypix(v, lo, hi, y0, y1):
    return y1 - (v - lo) / (hi - lo) * (y1 - y0)


def lines(panels, path=None, *, title=None, width=900, panel_height=120, robust=False):
    """Stacked panels of line series; long series are drawn as min/max envelopes per pixel.

    ``robust``: the y range spans the 0.5-99.5 percentiles, so a few outliers (a first
    step's loss) do not flatten the rest; points outside are drawn at the frame's edge.
    """
    step = panel_height + _HEAD + 6
    img, draw, top = _canvas(width, step * len(panels), title)
    for p, (label, values) in enumerate(panels):
        v = np.asarray(values, dtype=np.float64)
        v = v[:, None] if v.ndim == 1 else v.reshape(v.shape[0], -1)
        box = (_MARGIN_L, top + p * step + _HEAD, width - _MARGIN_R, top + p * step + _HEAD + panel_height)
        finite = v[np.isfinite(v)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if robust and finite.size:
            lo, hi = (float(q) for q in np.percentile(finite, [0.5, 99.5]))
            v = np.clip(v, lo, hi)
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        _frame(draw, box, lo, hi, label)
        x0, y0, x1, y1 = box
        if lo < 0 < hi:
            yz = _ypix(0.0, lo, hi, y0, y1)
            draw.line((x0, yz, x1, yz), fill=GRID)
        T, cols = v.shape
        span = x1 - x0 - 2
        for c in range(cols):
            color = COLORS[c % len(COLORS)]
            series = v[:, c]
            if T <= span:
                xs = x0 + 1 + np.arange(T) * (span / max(T - 1, 1))
                pts = [(float(x), float(_ypix(y, lo, hi, y0, y1))) for x, y in zip(xs, series) if np.isfinite(y)]
                if len(pts) > 1:
                    draw.line(pts, fill=color, width=1)
                if len(pts) <= 60:  # few points (e.g. evaluations): mark each one
                    for px, py in pts:
                        draw.ellipse((px - 2, py - 2, px + 2, py + 2), fill=color)
            else:
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
    step = panel_height + _HEAD + 18
    img, draw, top = _canvas(width, step * len(panels), title)
    for p, (label, edges, counts) in enumerate(panels):
        edges = np.asarray(edges, dtype=np.float64)
        counts = np.asarray(counts, dtype=np.float64)
        box = (_MARGIN_L, top + p * step + _HEAD, width - _MARGIN_R, top + p * step + _HEAD + panel_height)
        hi = float(counts.max()) if counts.size and counts.max() > 0 else 1.0
        _frame(draw, box, 0.0, hi, label)
        x0, y0, x1, y1 = box
        k = len(counts)
        w = (x1 - x0 - 2) / max(k, 1)
        for i, c in enumerate(counts):
            xa = x0 + 1 + i * w
            draw.rectangle((xa, _ypix(c, 0.0, hi, y0, y1), xa + max(w - 1, 1), y1), fill=COLORS[0])
        draw.text((x0, y1 + 3), _fmt(edges[0]), fill=INK, font=_FONT)
        right = _fmt(edges[-1])
        draw.text((x1 - 6 * len(right), y1 + 3), right, fill=INK, font=_FONT)
    return _save(img, path)


def grid(images, path=None, *, cols, labels=None, pad=4, scale=1):
    """Images (uint8 [H, W] or [H, W, 3], same size) in a grid, optional caption per image."""
    arrs = [np.asarray(a) for a in images]
    h, w = arrs[0].shape[:2]
    h, w = h * scale, w * scale
    cap = 14 if labels else 0
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
            draw.text((x, y), str(labels[i]), fill=INK, font=_FONT)
        img.paste(tile, (x, y + cap))
    return _save(img, path)


def colorize(labels, palette):
    """uint8 [H, W, 3] image of integer labels, palette[k] = (r, g, b) for label k."""
    lut = np.asarray(palette, dtype=np.uint8)
    return lut[np.asarray(labels, dtype=np.int64)]
