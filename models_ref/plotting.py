"""Pillow-only figures for validation reports: line panels and segmentation masks."""
from PIL import Image, ImageDraw

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189)]
MASK_COLORS = [(0, 0, 0), (70, 130, 220), (250, 200, 40)]  # classes 0, 1, 2


def _fmt(v):
    return f"{v:.3g}"


def lines(panels, path, title="", size=(460, 320)):
    """panels: list of (panel title, {series label: (xs, ys)}); one panel per column; PNG."""
    W, H = size
    top = 28 if title else 0
    img = Image.new("RGB", (W * len(panels), H + top), "white")
    d = ImageDraw.Draw(img)
    if title:
        d.text((8, 8), title, fill="black")
    for p, (ptitle, series) in enumerate(panels):
        x0, y0, x1, y1 = p * W + 60, top + 24, p * W + W - 14, top + H - 30
        d.text((x0, top + 6), ptitle, fill="black")
        d.rectangle((x0, y0, x1, y1), outline=(120, 120, 120))
        pts = [(x, y) for xs, ys in series.values() for x, y in zip(xs, ys) if y == y]
        if not pts:
            continue
        xmin, xmax = min(x for x, _ in pts), max(x for x, _ in pts)
        ymin, ymax = min(y for _, y in pts), max(y for _, y in pts)
        xmax, ymax = (xmax if xmax > xmin else xmin + 1), (ymax if ymax > ymin else ymin + 1e-9)
        def sx(x):
            return x0 + (x - xmin) / (xmax - xmin) * (x1 - x0)

        def sy(y):
            return y1 - (y - ymin) / (ymax - ymin) * (y1 - y0)
        for v in (ymin, (ymin + ymax) / 2, ymax):
            d.text((p * W + 4, sy(v) - 6), _fmt(v), fill="black")
        d.text((x0, y1 + 6), _fmt(xmin), fill="black")
        d.text((x1 - 40, y1 + 6), f"{_fmt(xmax)} steps", fill="black")
        for i, (label, (xs, ys)) in enumerate(series.items()):
            c = COLORS[i % len(COLORS)]
            xy = [(sx(x), sy(y)) for x, y in zip(xs, ys) if y == y]
            if len(xy) > 1:
                d.line(xy, fill=c, width=2)
            elif xy:
                d.ellipse((xy[0][0] - 2, xy[0][1] - 2, xy[0][0] + 2, xy[0][1] + 2), fill=c)
            d.text((x1 - 130, y0 + 6 + 14 * i), label, fill=c)
    img.save(path)


def masks(rows, path, scale=2):
    """rows: list of (label mask [M, M], predicted mask [M, M]) int arrays; gold row above prediction."""
    M = rows[0][0].shape[0]
    img = Image.new("RGB", (len(rows) * (M + 4) * scale, 2 * (M + 4) * scale), (255, 255, 255))
    for i, pair in enumerate(rows):
        for r, mask in enumerate(pair):
            tile = Image.new("RGB", (M, M))
            tile.putdata([MASK_COLORS[int(v)] for v in mask.reshape(-1)])
            img.paste(tile.resize((M * scale, M * scale), Image.NEAREST), (i * (M + 4) * scale, r * (M + 4) * scale))
    img.save(path)
