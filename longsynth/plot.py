"""Figures for previews, dataset summaries and certificates.

    lines(panels, path)  stacked line panels: [(label, y[T] or y[T, C] [, x[T]]), ...]
    bars(panels, path)   stacked histograms:  [(label, edges[K+1], counts[K]), ...]
    image_rows(rows, path)  rows of images with row labels, captions and a class legend
    grid(images, path)   image mosaic of uint8 [H, W] or [H, W, 3] arrays (Pillow, pixel exact)

``lines``, ``bars`` and ``image_rows`` draw with matplotlib (imported when a figure is
made, so generation never pays for it) and return the matplotlib Figure, saved as a PNG
when ``path`` is given. Axes whose quantity is an integer (steps, heights, counts) get
integer ticks; titles are words (``escape.drawn``: a model file's name in a title draws as itself).
"""
import functools
import io
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from longsynth.escape import drawn

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
          (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]
INK, WHITE = (30, 30, 30), (255, 255, 255)
DPI = 100


@functools.lru_cache(maxsize=None)
def font(size=13):
    """Pillow's built-in font at ``size`` px (needs Pillow's FreeType support, standard in wheels)."""
    return ImageFont.load_default(size=size)


def save(figure, path):
    """Write ``figure`` (a matplotlib Figure or a Pillow Image, as PNG; or text) to ``path``
    as every command writes its output (longsynth/outdir.py, docs/format.md "Every command
    that writes"): drawn into memory, then written as ``.{name}.tmp`` created with O_EXCL |
    O_NOFOLLOW in the folder and renamed. A link (or a folder) at ``path`` is refused in one
    line (LongsynthError) and what it points to is never written."""
    from longsynth.outdir import Folder

    if isinstance(figure, str):
        data = figure.encode("utf-8")
    else:
        buf = io.BytesIO()
        if hasattr(figure, "savefig"):
            figure.savefig(buf, format="png", dpi=DPI)
        else:
            figure.save(buf, format="PNG")
        data = buf.getvalue()
    path = os.path.abspath(os.fspath(path))
    Folder(os.path.dirname(path)).write_bytes(os.path.basename(path), data)


def _save(img, path):
    if path is not None:
        save(img, path)
    return img


def plain_text():
    """Text drawn as it is, never typeset by LaTeX: matplotlib reads a ``matplotlibrc`` in the current folder before
    any other, so one in a stranger's dataset folder, where ``show`` or ``evaluate`` may run, sets matplotlib's
    defaults; its ``text.usetex`` would hand every label, and its own ``text.latex.preamble``, to LaTeX to run
    (docs/format.md, "Trust"). Called before a figure's text is made (each text keeps the setting it was made with)."""
    import matplotlib

    matplotlib.rcParams["text.usetex"] = False


def _figure(width_px, height_px):
    """A matplotlib Figure on the Agg canvas (no display, no pyplot state), its text never LaTeX's (``plain_text``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    plain_text()
    fig = Figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _finish(fig, path, title, bottom=0.0, top=0.97):
    """Title, layout (``bottom``/``top``: the figure's share kept below and above the axes
    for a legend and the title) and the PNG when ``path`` is given."""
    if title:
        fig.suptitle(drawn(title), fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, bottom, 1, top if title else 1))
    if path is not None:
        save(fig, path)
    return fig


def _integer(values):
    a = np.asarray(values, dtype=np.float64)
    a = a[np.isfinite(a)]
    return a.size > 0 and bool(np.all(np.abs(a - np.round(a)) < 1e-9))


def _integer_ticks(axis):
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _thousands():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:,.0f}")


def lines(panels, path=None, *, title=None, width=900, panel_height=120, robust=False):
    """Stacked panels of line series; returns the Figure.

    A panel is ``(label, y)`` (x = 0, 1, ...) or ``(label, y, x)`` with x[T] increasing
    (e.g. the training steps of evaluations). Integer x values get integer ticks (one
    evaluation at step 20 is not drawn at 19.5..20.5); a series of up to 60 points marks
    each one. ``robust`` (True for every panel, or one bool per panel): the y range spans the
    0.5-99.5 percentiles, so a few outliers (a first step's loss) do not flatten the rest; points
    outside are drawn at the edge. Meant for long series: on a few points it would move a real one.
    """
    robust = [robust] * len(panels) if isinstance(robust, bool) else list(robust)
    if len(robust) != len(panels):
        raise ValueError(f"robust: {len(robust)} flags for {len(panels)} panels")
    fig = _figure(width, (panel_height + 50) * len(panels) + (30 if title else 0))
    for p, panel in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, p + 1)
        label, values = panel[0], panel[1]
        v = np.asarray(values, dtype=np.float64)
        v = v[:, None] if v.ndim == 1 else v.reshape(v.shape[0], -1)
        T = v.shape[0]
        xs = np.asarray(panel[2], dtype=np.float64) if len(panel) > 2 else np.arange(T, dtype=np.float64)
        finite = v[np.isfinite(v)]
        if robust[p] and finite.size:
            lo, hi = (float(q) for q in np.percentile(finite, [0.5, 99.5]))
            v = np.clip(v, lo, hi)
            pad = (hi - lo) * 0.05 or max(abs(hi) * 0.05, 0.05)  # a flat series: a band about its value
            ax.set_ylim(lo - pad, hi + pad)
        for c in range(v.shape[1]):
            ax.plot(xs, v[:, c], color=np.array(COLORS[c % len(COLORS)]) / 255, lw=1,
                    marker="o" if T <= 60 else None, ms=3)
        if finite.size and finite.min() < 0 < finite.max():
            ax.axhline(0, color="0.6", lw=0.8)
        if _integer(xs):
            _integer_ticks(ax.xaxis)
            if T == 1:
                ax.set_xlim(xs[0] - 1, xs[0] + 1)
        ax.set_title(drawn(label), loc="left", fontsize=9)
        ax.grid(True, color="0.85", lw=0.6)
        ax.tick_params(labelsize=8)
    return _finish(fig, path, title)


def bars(panels, path=None, *, title=None, width=900, panel_height=140, ylabel="count"):
    """Stacked histograms from (label, edges, counts); returns the Figure. Bins centred on
    integers (edges at k - 0.5), or with integer edges, get integer x ticks."""
    fig = _figure(width, (panel_height + 55) * len(panels) + (30 if title else 0))
    for p, (label, edges, counts) in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, p + 1)
        edges = np.asarray(edges, dtype=np.float64)
        counts = np.asarray(counts, dtype=np.float64)
        ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color=np.array(COLORS[0]) / 255,
               edgecolor="white", linewidth=0.5)
        if _integer(edges) or _integer((edges[:-1] + edges[1:]) / 2):
            _integer_ticks(ax.xaxis)
        _integer_ticks(ax.yaxis)
        ax.yaxis.set_major_formatter(_thousands())
        ax.set_xlim(edges[0], edges[-1])
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(drawn(label), loc="left", fontsize=9)
        ax.grid(True, axis="y", color="0.85", lw=0.6)
        ax.tick_params(labelsize=8)
    return _finish(fig, path, title)


def image_rows(rows, path=None, *, row_labels, captions=None, legend=None, title=None, width=1200, height=800):
    """Rows of images (``rows[r][c]``: uint8 [H, W] grey or [H, W, 3] colour), a label per
    row, a caption per column and a legend of ``(rgb, text)`` entries; returns the Figure,
    at most ``width`` x ``height`` px (one laptop screen)."""
    from matplotlib.patches import Patch

    n_rows, n_cols = len(rows), max(len(r) for r in rows)
    extra = 40 * n_rows + (70 if legend else 0) + (30 if title else 0)
    tile = min(300, (width - 120) // n_cols, (height - extra) // n_rows)
    fig = _figure(max(120 + tile * n_cols, 640), tile * n_rows + extra)
    for r, row in enumerate(rows):
        for c, a in enumerate(row):
            ax = fig.add_subplot(n_rows, n_cols, r * n_cols + c + 1)
            a = np.asarray(a)
            ax.imshow(a, cmap="gray" if a.ndim == 2 else None, vmin=0, vmax=255, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(drawn(row_labels[r]), fontsize=10)
            if captions is not None and r == 0:
                ax.set_title(drawn(captions[c]), fontsize=9)
    if legend:
        fig.legend(handles=[Patch(facecolor=np.array(rgb) / 255, edgecolor="0.5", label=drawn(text))
                            for rgb, text in legend],
                   loc="lower center", ncol=len(legend), fontsize=9, frameon=False)
    return _finish(fig, path, title, bottom=0.06 if legend else 0.0, top=0.95)


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
