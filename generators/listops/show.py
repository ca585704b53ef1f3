"""ListOps previews and dataset audits: expressions with their tags as text or PNG, length
and height histograms, template uniqueness (``longsynth show`` / ``info`` for both tasks)."""
import numpy as np

from longsynth.generators.listops.tree import CLOSE, DIGIT0, IGNORE, VOCAB


def _read_column(dataset, key):
    """(values concatenated over all splits, split names, indices) of a scalar key, checked."""
    parts, names, idx = [], [], []
    for split in dataset.splits:
        a = dataset[split].column(key)
        if a.shape[0]:
            parts.append(a)
            names.extend([split] * a.shape[0])
            idx.append(np.arange(a.shape[0]))
    if not parts:
        return np.zeros(0), [], np.zeros(0, dtype=np.int64)
    return np.concatenate(parts), names, np.concatenate(idx)


def _template_tokens(tokens):
    tokens = np.asarray(tokens)
    return tokens[tokens < DIGIT0]


def audit(dataset, examples=5):
    """Template uniqueness over all splits: hash clashes, with the first few pairs checked."""
    hashes, names, idx = _read_column(dataset, "template")
    order = np.argsort(hashes, kind="stable")
    sorted_h = hashes[order]
    dup = np.nonzero(sorted_h[1:] == sorted_h[:-1])[0]
    pairs = []
    for j in dup[:examples]:
        a, b = order[j], order[j + 1]
        ta = _template_tokens(dataset[names[a]][int(idx[a])]["inputs"])
        tb = _template_tokens(dataset[names[b]][int(idx[b])]["inputs"])
        pairs.append({
            "a": [names[a], int(idx[a])],
            "b": [names[b], int(idx[b])],
            "same_template": bool(ta.shape == tb.shape and np.array_equal(ta, tb)),
        })
    return {"templates": int(hashes.shape[0]), "distinct": int(np.unique(hashes).shape[0]),
            "clashes": int(dup.shape[0]), "examples": pairs}


# ---------------------------------------------------------------- previews


def render(tokens, tags, width=100):
    """Expression text with one tag per token aligned under it, wrapped at ``width`` chars."""
    words = [VOCAB[t] for t in np.asarray(tokens).tolist()]
    marks = ["-" if int(v) < 0 else str(int(v)) for v in np.asarray(tags).tolist()]
    lines, top, bottom = [], [], []
    used = 0
    for w, m in zip(words, marks):
        cell = max(len(w), len(m))
        if used and used + cell + 1 > width:
            lines += [" ".join(top), " ".join(bottom), ""]
            top, bottom, used = [], [], 0
        top.append(w.ljust(cell))
        bottom.append(m.ljust(cell))
        used += cell + 1
    if top:
        lines += [" ".join(top), " ".join(bottom), ""]
    return "\n".join(line.rstrip() for line in lines)


def _tags(sample):
    t = np.asarray(sample["targets"])
    if t.ndim == 1:
        return t
    tokens = np.asarray(sample["inputs"])
    tags = np.full(tokens.shape[0], IGNORE, dtype=np.int64)
    tags[np.nonzero(tokens == CLOSE)[0][-1]] = int(t)
    return tags


def show(samples, cfg, path):
    """Each sample's expression with its tags under it, written to ``path``: a PNG, or the
    plain text when path ends in .txt. Returns one summary line per sample (a whole
    expression of 8,000 tokens is ~40 KB of text: it goes to the file, not the terminal)."""
    blocks, heads = [], []
    for k, s in enumerate(samples):
        n_close = len(s["heights"])
        head = (f"sample {k}: length {int(s['length'])}, root value {int(_tags(s)[-1])}, "
                f"{n_close} operators, height {int(np.max(s['heights']))}")
        heads.append(head)
        blocks.append(head + "\n" + render(s["inputs"], _tags(s)))
    text = "\n".join(blocks)
    if path is not None and str(path).lower().endswith(".txt"):
        from longsynth.plot import save

        save(text + "\n", path)
    elif path is not None:
        _text_png(text, path)
    return "\n".join(heads)


def _text_png(text, path, max_lines=400, size=14):
    """The text as a PNG, tokens placed on a fixed character grid so tags stay under their
    tokens; at most ``max_lines`` lines (the .txt output has everything)."""
    import re

    from PIL import Image, ImageDraw

    from longsynth.plot import font, save

    lines = text.split("\n")
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... {len(lines) - max_lines} more lines: write --out FILE.txt for all"]
    f = font(size)
    draw = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    cw = max(draw.textlength(ch, font=f) for ch in "[]MINAXEDS0123456789-")  # one grid column
    lh = size + 4
    width = int(8 + cw * max((len(line) for line in lines), default=1))
    img = Image.new("RGB", (width, 8 + lh * len(lines)), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        if line.startswith("sample ") or line.startswith("... "):
            draw.text((4, 4 + lh * i), line, fill=(30, 30, 30), font=f)
            continue
        for m in re.finditer(r"\S+", line):
            draw.text((4 + cw * m.start(), 4 + lh * i), m.group(), fill=(30, 30, 30), font=f)
    save(img, path)


def show_dataset(dataset, split, path):
    """Histograms of token lengths and of `]` heights for one split (PNG at path)."""
    from longsynth import plot

    cfg = dataset.config
    hcounts = np.zeros(cfg.max_depth + 1, dtype=np.int64)
    for s in dataset[split].iter_samples(["heights"]):
        hcounts += np.bincount(s["heights"], minlength=cfg.max_depth + 1)[: cfg.max_depth + 1]
    lengths = _read_split_column(dataset, split, "length")
    ledges = np.linspace(cfg.min_length + 1, cfg.max_length, 41)
    lcounts, _ = np.histogram(lengths, bins=ledges)
    hedges = np.arange(cfg.max_depth + 2) - 0.5
    panels = [
        (f"token length ({lengths.size} samples, median {np.median(lengths):.0f})", ledges, lcounts),
        ("subtree height at each ] (0..max_depth)", hedges, hcounts),
    ]
    plot.bars(panels, path, title=f"{dataset.task.name} {split}")
    return (f"{split}: {lengths.size} samples, length min {lengths.min()} median {np.median(lengths):.0f} "
            f"max {lengths.max()}; {int(hcounts.sum())} subtrees, max height {int(np.nonzero(hcounts)[0].max())}")


def _read_split_column(dataset, split, key):
    return dataset[split].column(key)
