"""The paper's metrics, per batch (docs/models.md, "Metrics"); the trainer averages over batches.
Beside them, the exact metrics of a whole evaluation set from summed counts
(``confusion``, ``macro_from_confusion``, ``r2_from_sums``), which do not depend on the
batch size and add up across batches and ranks.

- ``r2``: 1 - MSE(pred, true) / MSE(mean(true), true), mean over the whole batch.
- ``token_accuracy``: accuracy over positions whose label is not ``ignore_index``, with
  optional breakdowns by per-position annotations (ListOps: subtree height, operator).
- ``macro_scores``: per-class F1 and per-class accuracy, averaged over the classes
  (Pathfinder-Segmentation; "accuracy" of class c is its recall, TP_c / (TP_c + FN_c),
  so the macro average is balanced accuracy).
"""
import torch

IGNORE_INDEX = -100


def r2(pred, true):
    """R^2 of one batch (a float); the mean of ``true`` is taken over the whole batch."""
    pred, true = pred.double(), true.double()
    mse = torch.mean((pred - true) ** 2)
    var = torch.mean((true - true.mean()) ** 2)
    return float(1.0 - mse / var)


def token_accuracy(logits, labels, groups=None, ignore_index=IGNORE_INDEX):
    """Accuracy over labelled positions.

    logits [..., C], labels [...] (long, ``ignore_index`` skipped); groups maps a name
    (e.g. "height", "operator") to a long tensor shaped like labels. Returns
    {"accuracy", "correct", "count", "by_<name>": {value: [correct, count]}}.
    """
    mask = labels != ignore_index
    hit = (logits.argmax(-1) == labels) & mask
    count = int(mask.sum())
    out = {"correct": int(hit.sum()), "count": count}
    out["accuracy"] = out["correct"] / count if count else float("nan")
    for name, g in (groups or {}).items():
        table = {}
        for v in torch.unique(g[mask]).tolist():
            sel = mask & (g == v)
            table[int(v)] = [int((hit & sel).sum()), int(sel.sum())]
        out["by_" + name] = table
    return out


def merge_counts(tables):
    """Sum {value: [correct, count]} tables from several batches."""
    total = {}
    for t in tables:
        for k, (c, n) in t.items():
            a = total.setdefault(k, [0, 0])
            a[0] += c
            a[1] += n
    return total


def r2_sums(pred, true):
    """[sum (pred - true)^2, sum true, sum true^2, count] of one batch (float64), to be summed."""
    pred, true = pred.double(), true.double()
    return torch.stack([((pred - true) ** 2).sum(), true.sum(), (true ** 2).sum(),
                        torch.tensor(float(true.numel()), dtype=torch.float64, device=true.device)])


def r2_from_sums(s):
    """R^2 of a whole set from summed ``r2_sums``: 1 - SSE / sum (true - mean(true))^2."""
    sse, sy, syy, n = (float(v) for v in s)
    return 1.0 - sse / (syy - sy * sy / n)


def confusion(logits, labels, num_classes=3, ignore_index=IGNORE_INDEX):
    """Confusion counts [C, C] (row: true class, column: predicted) of one batch, float64."""
    pred = logits.argmax(-1).reshape(-1)
    labels = labels.reshape(-1)
    keep = labels != ignore_index
    idx = labels[keep].long() * num_classes + pred[keep]
    return torch.bincount(idx, minlength=num_classes * num_classes).reshape(
        num_classes, num_classes).to(torch.float64)


def macro_from_confusion(cm):
    """Macro F1 and macro accuracy from confusion counts [C, C].

    For each class c: precision TP/(TP+FP), recall TP/(TP+FN), F1 their harmonic mean
    (0 where undefined), accuracy = recall. Averages are over all classes.
    """
    cm = cm.double()
    tp = cm.diagonal()  # [C]
    fp = cm.sum(0) - tp  # [C]  predicted c, another class
    fn = cm.sum(1) - tp  # [C]  class c, predicted another
    f1 = [2 * a / (2 * a + b + c) if a + b + c else 0.0 for a, b, c in zip(tp.tolist(), fp.tolist(), fn.tolist())]
    acc = [a / (a + c) if a + c else 0.0 for a, c in zip(tp.tolist(), fn.tolist())]
    C = cm.shape[0]
    return {"macro_f1": sum(f1) / C, "macro_accuracy": sum(acc) / C, "f1": f1, "accuracy": acc}


def macro_scores(logits, labels, num_classes=3):
    """Macro F1 and macro accuracy of one batch over ``num_classes`` classes (see
    ``macro_from_confusion``)."""
    return macro_from_confusion(confusion(logits, labels, num_classes))
