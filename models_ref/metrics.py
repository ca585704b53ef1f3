"""The paper's metrics, per batch (TASKS.md, MODELS.md); the trainer averages over batches.

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


def macro_scores(logits, labels, num_classes=3):
    """Macro F1 and macro accuracy of one batch over ``num_classes`` classes.

    For each class c: precision TP/(TP+FP), recall TP/(TP+FN), F1 their harmonic mean
    (0 where undefined), accuracy = recall. Averages are over all classes.
    """
    pred = logits.argmax(-1).reshape(-1)
    labels = labels.reshape(-1)
    f1s, accs = [], []
    for c in range(num_classes):
        tp = int(((pred == c) & (labels == c)).sum())
        fp = int(((pred == c) & (labels != c)).sum())
        fn = int(((pred != c) & (labels == c)).sum())
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
        accs.append(tp / (tp + fn) if tp + fn else 0.0)
    return {"macro_f1": sum(f1s) / num_classes, "macro_accuracy": sum(accs) / num_classes,
            "f1": f1s, "accuracy": accs}
