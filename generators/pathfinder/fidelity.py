"""Pathfinder image statistics, for comparing our images with the authors' generator.

One function computes the same per-image statistics from either source, so that
``bench/fidelity.py`` and the tests compare like with like:

* :func:`read_authors` reads a directory in the authors' layout (``imgs/<b>/sample_<k>.png``,
  ``paths/<b>/sample_<k>.pkl``, ``metadata/<b>.npy``) into (image, targets, tips) records,
  targets built by their rule (2 on the path carrying both markers, 1 on any path);
* :func:`ours` turns our samples into the same records;
* :func:`image_stats` / :func:`summary` give per-image numbers and their means, plus the
  intensity histogram of nonzero pixels;
* :func:`classifier_accuracy` is a two-sample test: how well a small CNN (and a logistic
  regression on intensity histograms) tells two sets of images apart, held out (needs torch).
"""
import glob
import os
import pickle
import re

import numpy as np
from scipy import ndimage

from longsynth.errors import LongsynthError

STATS = {  # name: what it is (means over images)
    "nonzero": "share of pixels > 0",
    "bright": "share of pixels >= 128",
    "class1": "share of pixels labelled 1",
    "class2": "share of pixels labelled 2",
    "labelled": "share of pixels labelled 1 or 2",
    "distinct": "distinct intensities in an image",
    "faint_labelled": "share of labelled pixels with intensity <= 10",
    "lit_mean": "mean intensity of nonzero pixels",
    "components": "8-connected components of pixels >= 128",
    "tip_to_tip": "distance between the two ends of a main path (px, mean of both)",
    "markers": "marker disks found (thick blobs of pixels >= 128)",
    "max": "brightest pixel",
}
EIGHT = np.ones((3, 3), dtype=bool)


def _markers(img, thickness):
    """Count marker disks: components of pixels >= 128 whose distance to the outside
    exceeds what a dash of this thickness can reach."""
    core = ndimage.distance_transform_edt(img >= 128) > thickness / 2 + 1.0
    return ndimage.label(core, structure=EIGHT)[1]


def image_stats(img, tgt, tips, thickness):
    """Per-image statistics (see STATS); tips = [(origin tip, terminal tip) per main path]."""
    img = np.asarray(img)
    tgt = np.asarray(tgt)
    lab = tgt > 0
    lit = img > 0
    return {
        "nonzero": float(lit.mean()),
        "bright": float((img >= 128).mean()),
        "class1": float((tgt == 1).mean()),
        "class2": float((tgt == 2).mean()),
        "labelled": float(lab.mean()),
        "distinct": float(len(np.unique(img))),
        "faint_labelled": float((img[lab] <= 10).mean()) if lab.any() else 0.0,
        "lit_mean": float(img[lit].mean()) if lit.any() else 0.0,
        "components": float(ndimage.label(img >= 128, structure=EIGHT)[1]),
        "tip_to_tip": float(np.mean([np.hypot(*(np.asarray(a, float) - np.asarray(b, float))) for a, b in tips])),
        "markers": float(_markers(img, thickness)),
        "max": float(img.max()),
    }


def summary(records, thickness):
    """Means of image_stats over records [(img, tgt, tips)], the image count and the
    normalised histogram (256 bins) of nonzero intensities."""
    rows = [image_stats(img, tgt, tips, thickness) for img, tgt, tips in records]
    hist = np.zeros(256)
    for img, _, _ in records:
        hist += np.bincount(np.asarray(img).ravel(), minlength=256)
    hist[0] = 0
    out = {k: float(np.mean([r[k] for r in rows])) for k in STATS}
    out["images"] = len(rows)
    out["hist_nonzero"] = (hist / hist.sum()).tolist()
    return out


def tv_distance(p, q):
    """Total-variation distance of two histograms (each summing to 1)."""
    return 0.5 * float(np.abs(np.asarray(p) - np.asarray(q)).sum())


# What the authors' path pickles hold: dicts, lists and tuples of NumPy arrays (written by
# NumPy 1.x as numpy.core, by 2.x as numpy._core) and ints; protocol 2 adds _codecs.encode.
_PICKLE_TYPES = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                 ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
                 ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}
_META_ROW = re.compile(r"^imgs/\d+$"), re.compile(r"^sample_\d+\.png$")


class _AuthorsUnpickler(pickle.Unpickler):
    """An unpickler that builds only the types of _PICKLE_TYPES: a path pickle in a folder
    from elsewhere cannot run code."""

    def find_class(self, module, name):
        if (module, name) not in _PICKLE_TYPES:
            raise LongsynthError(f"path pickle holds {module}.{name}, not one of the authors' types; not loaded")
        return super().find_class(module, name)


def read_authors(root, limit=None):
    """(image, targets, tips) records from a directory in the authors' layout. Their path
    pickles are read with _AuthorsUnpickler, and a metadata row must name
    ``imgs/<b>`` and ``sample_<k>.png`` inside ``root``."""
    from PIL import Image

    records = []
    metas = sorted(glob.glob(os.path.join(root, "metadata", "*.npy")), key=lambda p: int(os.path.basename(p)[:-4]))
    for meta in metas:
        for row in np.load(meta).tolist():
            if not (_META_ROW[0].match(str(row[0])) and _META_ROW[1].match(str(row[1]))):
                raise LongsynthError(f"{meta}: row {row[:2]} does not name imgs/<b> and sample_<k>.png")
            img = np.asarray(Image.open(os.path.join(root, row[0], row[1])).convert("L"))
            with open(os.path.join(root, row[0].replace("imgs/", "paths/"), row[1].replace(".png", ".pkl")), "rb") as f:
                d = _AuthorsUnpickler(f).load()
            o, t = d["marker_indices"]
            tgt = np.zeros(img.shape, dtype=np.uint8)
            for k, (rr, cc) in enumerate(d["segs"]):
                cls = 2 if o == t == k else 1
                at = (rr.astype(np.int64), cc.astype(np.int64))
                tgt[at] = np.maximum(tgt[at], cls)
            tips = [(d["origin_tips"][k], d["terminal_tips"][k]) for k in range(2)]
            records.append((img, tgt, tips))
            if limit is not None and len(records) >= limit:
                return records
    return records


def ours(samples, contour_length):
    """(image, targets, tips) records from our samples (tips from ``dashes``)."""
    n = contour_length
    out = []
    for s in samples:
        d = np.asarray(s["dashes"])
        tips = [(d[0, :2], d[n - 1, :2]), (d[n, :2], d[2 * n - 1, :2])]
        out.append((np.asarray(s["inputs"]), np.asarray(s["targets"]), tips))
    return out


# statistics that need no labels or path tips: classic Pathfinder, whose original generator
# stores images and a label only
PLAIN_STATS = ("nonzero", "bright", "distinct", "lit_mean", "components", "markers", "max")


def plain(images):
    """(image, targets, tips) records for images alone (empty targets, dummy tips): only
    PLAIN_STATS and the histogram are meaningful in their summary."""
    out = []
    for img in images:
        img = np.asarray(img)
        out.append((img, np.zeros(img.shape, np.uint8), [((0, 0), (0, 0))]))
    return out


def read_original(root, limit=None):
    """(images, labels) from a directory in the original generator's layout (imgs/<b>/
    sample_<k>.png, metadata/<b>.npy as np.save or as the LRA release's text rows)."""
    from PIL import Image

    images, labels = [], []
    metas = sorted(glob.glob(os.path.join(root, "metadata", "*.npy")), key=lambda p: int(os.path.basename(p)[:-4]))
    for meta in metas:
        try:
            rows = np.load(meta).tolist()
        except ValueError:  # the release's text rows
            with open(meta) as f:
                rows = [line.split() for line in f.read().splitlines() if line.strip()]
        for row in rows:
            images.append(np.asarray(Image.open(os.path.join(root, row[0], row[1])).convert("L")))
            labels.append(int(row[3]))
            if limit is not None and len(images) >= limit:
                return images, labels
    return images, labels


# ---------------------------------------------------------------- two-sample tests


def features(img):
    """Intensity histogram (32 bins of nonzero values, as shares of the image) + nonzero share."""
    h = np.bincount(np.asarray(img).ravel() // 8, minlength=32).astype(np.float64) / img.size
    return np.concatenate([h, [(img > 0).mean()]])


def classifier_accuracy(a, b, folds=5, seed=0, epochs=30):
    """Held-out accuracies (CNN, logistic regression) of telling images a from b, k-fold
    (chance 0.5). Runs on torch's CPU threads as set by the caller."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x = np.concatenate([a, b]).astype(np.float32)[:, None] / 255.0
    y = np.concatenate([np.zeros(len(a)), np.ones(len(b))]).astype(np.int64)
    order = rng.permutation(len(y))
    parts = np.array_split(order, folds)
    accs_cnn, accs_lr = [], []
    f = np.stack([features(im) for im in np.concatenate([a, b])]).astype(np.float32)
    f = (f - f.mean(0)) / (f.std(0) + 1e-9)
    for k in range(folds):
        test = parts[k]
        train = np.concatenate([parts[j] for j in range(folds) if j != k])
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 5, stride=2, padding=2), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 5, stride=2, padding=2), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 2))
        opt = torch.optim.Adam(net.parameters(), lr=2e-3)
        xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
        for epoch in range(epochs):
            perm = torch.randperm(len(train))
            for i in range(0, len(train), 32):
                idx = perm[i:i + 32]
                loss = torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            pred = net(torch.from_numpy(x[test])).argmax(1).numpy()
        accs_cnn.append(float((pred == y[test]).mean()))
        lin = torch.nn.Linear(f.shape[1], 2)
        opt = torch.optim.Adam(lin.parameters(), lr=1e-2, weight_decay=1e-3)
        ft, fy = torch.from_numpy(f[train]), torch.from_numpy(y[train])
        for _ in range(500):
            loss = torch.nn.functional.cross_entropy(lin(ft), fy)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            pred = lin(torch.from_numpy(f[test])).argmax(1).numpy()
        accs_lr.append(float((pred == y[test]).mean()))
    return float(np.mean(accs_cnn)), float(np.mean(accs_lr))
