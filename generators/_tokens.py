"""What every token task (``family="tokens"``) shares: the ignore index, the stored dtype
of a vocabulary, and the ``show`` picture (docs/adding-a-task.md, "Token tasks").

A token task stores ``inputs`` and ``targets``, integer arrays [L] of token ids, with the
ignore index -100 in ``targets`` at every unscored position.
"""
import dataclasses

import numpy as np

IGNORE = -100  # targets the loss skips (torch.nn.CrossEntropyLoss's default ignore_index)
# The token tasks' revision (longsynth.task.Task.revision): 2 stores a vocabulary of at most
# 127 ids as int8 (1 stored them as int16); the ids drawn are the same.
REVISION = 2


def token_dtype(vocab_size):
    """The narrowest signed dtype that holds ids [0, vocab_size) and -100: int8 up to 127
    tokens, int16 up to 32,767. The bytes written bound the long token tasks' generation
    (docs/benchmarks.md), so a small vocabulary is stored in one byte a token."""
    if vocab_size <= np.iinfo(np.int8).max:
        return "int8"
    if vocab_size <= np.iinfo(np.int16).max:
        return "int16"
    if vocab_size <= np.iinfo(np.int32).max:
        return "int32"
    return "int64"


def _palette(ids, vocab_size):
    """uint8 [n, 3]: a colour per token id, spread over the vocabulary (0 stays near white)."""
    import matplotlib

    cmap = matplotlib.colormaps["turbo"]
    rgb = cmap(np.asarray(ids, dtype=np.float64) / max(1, vocab_size - 1))[..., :3]
    rgb = (255 * rgb).astype(np.uint8)
    rgb[np.asarray(ids) == 0] = 235
    return rgb


def _colour_key(fig, ax, vocab_size):
    """A colour bar beside the rows: each token id's colour, one band per id up to 64 ids, a gradient with a
    few ticks beyond; token 0 is light grey, not the background's white."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm, ListedColormap, Normalize
    from matplotlib.ticker import MaxNLocator

    if vocab_size <= 64:
        ids = np.arange(vocab_size)
        cmap = ListedColormap(_palette(ids, vocab_size) / 255.0)
        norm = BoundaryNorm(np.arange(vocab_size + 1) - 0.5, vocab_size)
    else:
        cmap, norm = "turbo", Normalize(0, vocab_size - 1)
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, fraction=0.03, pad=0.01)
    bar.locator = MaxNLocator(nbins=min(vocab_size, 10), integer=True)
    bar.update_ticks()
    bar.ax.tick_params(labelsize=7)
    bar.set_label("token id (0: light grey)", fontsize=8)


MAX_COLUMNS = 4096  # positions drawn per row of the picture: a longer row shows every k-th one
_SLICE = 1 << 16  # positions of a row looked at together when scored targets are counted


def _columns(row, step):
    """(ids of every ``step``-th position of ``row``, targets-style: a column holding a scored
    target shows one of them, -100 otherwise; number of scored positions; columns holding
    one), in memory of the columns, not of the row (an int64 copy of a 2^24-token row is
    128 MB, its colours 512 MB)."""
    row = np.asarray(row)
    cols = -(-row.shape[0] // step)
    ids = row[::step].astype(np.int64)
    hit = np.zeros(cols, dtype=bool)
    scored = 0
    span = step * max(1, _SLICE // step)
    for lo in range(0, row.shape[0], span):
        part = row[lo : lo + span]
        at = np.flatnonzero(part != IGNORE)
        scored += at.size
        c = (lo + at) // step
        hit[c] = True
        ids[c] = part[at]
    return ids, scored, np.flatnonzero(hit)


def preview(samples, cfg, path, vocab_size, length=None):
    """Rows of token ids (one row per sample, a colour per id) over a row of their targets;
    scored positions (targets != -100) are ringed in black. Rows longer than MAX_COLUMNS
    show every k-th position (the title says so); a column with a scored target shows it.
    ``length``: the rows' length where every row has it (a task's fixed shape), so that
    ``samples`` is read once; None: the longest row's. Returns a one-line summary."""
    from matplotlib.patches import Rectangle

    from longsynth.plot import _figure, _finish

    n = len(samples)
    # each sample is looked at once, and only its drawn columns are kept: ``samples`` may draw
    # them one at a time (show's Drawn), so 64 rows of 2^24 tokens never lie in memory together
    L = int(length) if length is not None else max(s["inputs"].shape[0] for s in samples)
    step = max(1, -(-L // MAX_COLUMNS))  # the picture is sized before any colour is made
    fig = _figure(1200, min(900, 120 + 70 * n))
    ax = fig.add_subplot(1, 1, 1)
    scored = 0
    for r, s in enumerate(samples):
        x = np.asarray(s["inputs"])[::step].astype(np.int64)
        y, count, marked = _columns(s["targets"], step)
        del s  # the row itself: its drawn columns are x and y
        top, bottom = 2 * r, 2 * r + 1
        ax.imshow(_palette(x, vocab_size)[None], extent=(-0.5, x.size * step - 0.5, top + 0.9, top), aspect="auto",
                  interpolation="nearest")
        yy = np.where(y >= 0, y, 0)
        ax.imshow(_palette(yy, vocab_size)[None], extent=(-0.5, y.size * step - 0.5, bottom + 0.9, bottom),
                  aspect="auto", interpolation="nearest")
        scored += count
        if L > 48:
            ax.scatter(marked * step + (step - 1) / 2, np.full(marked.size, bottom + 0.45), s=30, facecolors="none",
                       edgecolors="black", lw=1.2)
        else:
            for t in marked:
                ax.add_patch(Rectangle((t - 0.5, bottom), 1, 0.9, fill=False, edgecolor="black", lw=1.5))
            for t in range(x.size):
                ax.text(t, top + 0.45, str(x[t]), ha="center", va="center", fontsize=6)
                if y[t] != IGNORE:
                    ax.text(t, bottom + 0.45, str(y[t]), ha="center", va="center", fontsize=6)
    ax.set_xlim(-0.5, L - 0.5)
    ax.set_ylim(2 * n, 0)
    ax.set_yticks([2 * r + 0.45 for r in range(n)] + [2 * r + 1.45 for r in range(n)])
    ax.set_yticklabels([f"{r}: inputs" for r in range(n)] + [f"{r}: targets" for r in range(n)], fontsize=8)
    ax.set_xlabel("position")
    _colour_key(fig, ax, vocab_size)
    import textwrap

    params = ", ".join(f"{k} = {v}" for k, v in dataclasses.asdict(cfg).items())
    every = f"; {L:,} positions: 1 in {step:,} drawn" if step > 1 else ""
    head = textwrap.fill(f"{n} sample{'s' if n != 1 else ''} at {params}", 120)  # a long config wraps, not cut
    _finish(fig, path, f"{head}\ncolour = token id; outlined = scored targets (the others are -100){every}",
            top=0.9 - 0.03 * head.count("\n"))
    return f"{n} samples, {scored} scored positions ({scored / n:.1f} per sample), vocabulary {vocab_size}"


MAX_ID_BARS = 256  # token ids drawn one bar each up to this vocabulary; a larger one is binned


def _id_bins(vocab_size):
    """Edges [K + 1] of the token-id axis: one bin per id up to MAX_ID_BARS ids, else
    MAX_ID_BARS equal bins of consecutive ids."""
    if vocab_size <= MAX_ID_BARS:
        return np.arange(vocab_size + 1) - 0.5
    return np.linspace(0, vocab_size, MAX_ID_BARS + 1) - 0.5


def _binned(counts, edges):
    """counts per id [V] summed into the bins of ``edges``."""
    ids = np.arange(counts.size)
    return np.histogram(ids, bins=edges, weights=counts)[0]


def _integer_edges(values):
    """Edges of one bin per integer over the range of ``values`` (at most 200 bins)."""
    lo, hi = (int(values.min()), int(values.max())) if values.size else (0, 1)
    if hi - lo < 4:  # a few values (one scored target per row): room on either side for integer ticks
        lo, hi = lo - 2, hi + 2
    step = max(1, -(-(hi - lo + 1) // 200))
    return np.arange(lo, hi + step + 1, step) - 0.5


def show_dataset(dataset, split, path, progress=None):
    """A token dataset's statistics, every split side by side (a column each, x axes shared
    down a row so train's and test's ranges compare): scored targets per row, the share of
    each token id among inputs and among scored targets, and, for the tasks whose rows vary
    in length (parity, modular arithmetic: Task.row_length_offset; longsynth.stats.row_lengths), the rows'
    lengths. ``split`` is not used: the point is the splits against each other. Reads every
    sample (``progress`` follows the store's protocol). Returns a one-line summary."""
    from longsynth.plot import COLORS, _figure, _finish, _integer_ticks, _thousands
    from longsynth.stats import split_statistics

    per = split_statistics(dataset, progress=progress)
    splits = [s for s, st in per.items() if st.samples]
    if not splits:
        raise ValueError("no samples in any split")
    V = int(dataset.task.vocab_size(dataset.config))
    scored = {s: np.concatenate(per[s].tokens.scored) for s in splits}
    lengths = {s: per[s].lengths for s in splits} if per[splits[0]].lengths is not None else None
    ids = _id_bins(V)
    id_label = "token id" + (f" (bins of {V / MAX_ID_BARS:.3g} ids)" if V > MAX_ID_BARS else "")
    per_row = _integer_edges(np.concatenate(list(scored.values())))
    rows = [("scored targets per row", "scored targets in a row", "rows", per_row,
             {s: np.histogram(scored[s], bins=per_row)[0] for s in splits}),
            ("inputs: share of each id", id_label, "share",
             ids, {s: _share(_binned(per[s].tokens.counts["inputs"], ids)) for s in splits}),
            ("scored targets: share of each id", id_label, "share",
             ids, {s: _share(_binned(per[s].tokens.counts["targets"], ids)) for s in splits})]
    if lengths is not None:
        edges = _integer_edges(np.concatenate(list(lengths.values())))
        rows.append(("sequence length n (from the scored position)", "length n", "rows", edges,
                     {s: np.histogram(lengths[s], bins=edges)[0] for s in splits}))
    fig = _figure(1200, 200 * len(rows) + 60)
    axes = fig.subplots(len(rows), len(splits), squeeze=False, sharex="row")
    for r, (title, xlabel, ylabel, edges, counts) in enumerate(rows):
        for c, s in enumerate(splits):
            ax = axes[r][c]
            ax.bar(edges[:-1], counts[s], width=np.diff(edges), align="edge", linewidth=0,
                   color=np.array(COLORS[c % len(COLORS)]) / 255)
            pad = (edges[-1] - edges[0]) * 0.01  # a bar at either end clear of the axis line
            ax.set_xlim(edges[0] - pad, edges[-1] + pad)
            _integer_ticks(ax.xaxis)
            log = ""
            if ylabel == "rows":
                _integer_ticks(ax.yaxis)
                ax.yaxis.set_major_formatter(_thousands())
            elif _skewed(counts[s]):  # a filler id (MQAR's 0) would flatten every other bar
                ax.set_yscale("log")
                log = " (log scale)"
            ax.set_title(f"{s}: {title}{log}", loc="left", fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            if c == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            ax.grid(True, axis="y", color="0.85", lw=0.6)
            ax.tick_params(labelsize=8)
    counts = ", ".join(f"{s} {per[s].samples:,}" for s in splits)
    _finish(fig, path, f"{dataset.task.name}: statistics per split ({counts} rows), vocabulary {V}; "
                       f"scored: targets != -100", top=0.95)
    parts = [f"{s}: {per[s].samples:,} rows, {scored[s].mean():.2f} scored targets per row"
             + (f", lengths {lengths[s].min()}-{lengths[s].max()}" if lengths is not None and lengths[s].size else "")
             for s in splits]
    return "; ".join(parts)


def _skewed(shares):
    """Whether one bar dwarfs the rest: the largest share over 20 times the median nonzero one."""
    nonzero = shares[shares > 0]
    return nonzero.size > 2 and nonzero.max() > 20 * np.median(nonzero)


def _share(counts):
    total = counts.sum()
    return counts / total if total else counts.astype(np.float64)
