"""The figures of a run's certificate: curves.png (training loss, validation loss and metric) and,
for Pathfinder-Segmentation, predictions.png (inputs, gold labels and the model's labels).
"""
from __future__ import annotations

import numpy as np

from longsynth import plot


MASK_PALETTE = [(0, 0, 0), (70, 130, 220), (250, 200, 40)]  # Pathfinder classes 0, 1, 2
MASK_NAMES = ["0: background", "1: on a main path", "2: on the path that carries both markers"]


def _evaluations(n):
    return f"{n} evaluation{'s' if n != 1 else ''}"


def curves(history, primary, path, title, test_sets=None):
    """Training loss per step, validation loss and metric per evaluation (x: steps); with ``test_sets``
    ({label: metrics} of a protocol's test sets whose labels are lengths: the Chomsky hierarchy's) a last
    panel of the metric by test length."""
    val = history["val"]
    at = (f"at step {val[0]['step']}" if len(val) == 1 else f"at steps {val[0]['step']}..{val[-1]['step']}"
          if val else "")
    train_rows = history["train"]
    # Only the training loss is clipped to its 0.5-99.5th percentiles (a first step's spike); the
    # validation panels have few points, and clipping them would move a real one (a lone first reading).
    panels = [("training loss at each step (y: 0.5-99.5th percentile)", [r["loss"] for r in train_rows],
               np.arange(1, len(train_rows) + 1))]
    if val:
        steps = [r["step"] for r in val]
        panels += [(f"validation loss ({_evaluations(len(val))} {at})", [r["loss"] for r in val], steps),
                   (f"validation {primary} ({_evaluations(len(val))} {at})", [r[primary] for r in val], steps)]
    if test_sets and all(k.isdigit() and primary in v for k, v in test_sets.items()):
        at = sorted(test_sets, key=int)
        mean = sum(test_sets[k][primary] for k in at) / len(at)
        panels.append((f"test {primary} by test length (the best model; mean {mean:.3f}, the score)",
                       [test_sets[k][primary] for k in at], [int(k) for k in at]))
    return plot.lines(panels, path, title=title, robust=[True] + [False] * (len(panels) - 1))


def _grey(image, side):
    """A model input's pixel channel as uint8 [side, side] (any affine normalisation undone)."""
    a = np.asarray(image, dtype=np.float64).reshape(side, side)
    lo, hi = a.min(), a.max()
    return np.zeros((side, side), np.uint8) if hi <= lo else np.round((a - lo) / (hi - lo) * 255).astype(np.uint8)


def prediction_figure(images, labels, predictions, side, path, title=None):
    """Pathfinder-Segmentation: the input image, the gold labels and the model's labels,
    one column per sample, with the classes' legend (at most 1200 px wide)."""
    gold = [plot.colorize(np.asarray(m).reshape(side, side), MASK_PALETTE) for m in labels]
    pred = [plot.colorize(np.asarray(m).reshape(side, side), MASK_PALETTE) for m in predictions]
    acc = [float(np.mean(np.asarray(g) == np.asarray(q))) for g, q in zip(labels, predictions)]
    return plot.image_rows([[_grey(x, side) for x in images], gold, pred], path,
                           row_labels=["input", "gold labels", "model"],
                           captions=[f"sample {i}: {100 * a:.1f}% of pixels right" for i, a in enumerate(acc)],
                           legend=list(zip(MASK_PALETTE, MASK_NAMES)), title=title)
