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


# ----------------------------------------------------------------- chance levels
# The score a model that learned nothing about the task gets (docs/evaluate.md, "Reading a
# report"): a uniform guess among the candidate answers of a token task, the mean
# prediction (R^2 0) of a regression. A report draws it beside every task and says "at chance"
# of a result within noise of it.


def chance(task, params=None):
    """(level, why) of a task with its resolved parameters (a dict; None: the task's defaults),
    or (None, why) where no level is well defined (macro F1 depends on the class frequencies)."""
    from longsynth import registry

    t = registry.get(task)
    if t.family == "atomic":
        return 0.0, "R^2 of predicting the mean"
    if task == "pathfinder-seg":
        return None, "macro F1 of a guess depends on the class frequencies"
    if task == "pathfinder":
        return 0.5, "1 of 2 classes"
    if t.family == "listops":
        return 0.1, "1 of 10 values"
    n, why = _candidates(task, t.make_config(**(params or {})))
    return (None, why) if n is None else (n[0] / n[1] if isinstance(n, tuple) else 1.0 / n, why)


def _candidates(task, cfg):
    """(candidate answers, or (expected correct, positions) where positions differ, why) of a
    token task's scored positions."""
    if task == "mqar":  # values from [V/2, V)
        n = cfg.vocab_size - cfg.vocab_size // 2
        return n, f"1 of {n:,} values (V/2)"
    if task == "associative-recall":  # values K+1..n of n = V - 2 ordinary tokens, "." too with allow_dot
        ordinary = cfg.vocab_size - 2
        n = ordinary - ordinary // 2 + (1 if cfg.allow_dot else 0)
        return n, f"1 of {n:,} values"
    if task == "induction-head":  # the copied tokens are ordinary ones
        n = cfg.vocab_size - 2
        return n, f"1 of {n:,} ordinary tokens"
    if task == "selective-copying":  # data tokens 1..A-2
        n = cfg.A - 2
        return n, f"1 of {n:,} data tokens"
    if task == "parity":  # the sum mod V - 1
        n = cfg.vocab_size - 1
        return n, f"1 of {n:,} answers"
    if task == "modular-arithmetic":  # residues mod M
        n = cfg.vocab_size - (7 if cfg.brackets else 5)
        return n, f"1 of {n:,} residues"
    if task == "word-problem":  # BOS (scored, always the same) and k prefix products of |G|
        from longsynth.generators.state.word_problem import group_order, parse_group

        g = group_order(parse_group(cfg.group))
        return (1 + cfg.k / g, cfg.k + 1), f"BOS right, each of the {cfg.k} products 1 of {g:,}"
    if task in ("mad-recall", "mad-noisy-recall"):
        ns = cfg.vocab_size - cfg.noise_vocab_size - (0 if cfg.multi_query else 1)
        n = ns - ns // 2
        return n, f"1 of {n:,} value tokens"
    if task == "mad-fuzzy-recall":
        ns = cfg.vocab_size - cfg.noise_vocab_size - (1 if cfg.multi_query else 2)
        n = ns - ns // 2
        return n, f"1 of {n:,} value tokens"
    if task == "mad-selective-copying":
        n = cfg.vocab_size - 2
        return n, f"1 of {n:,} data tokens"
    if task == "mad-compression":
        n = cfg.vocab_size - cfg.noise_vocab_size - 1
        return n, f"1 of {n:,} data tokens"
    if task == "mad-memorization":
        ns = cfg.vocab_size - cfg.noise_vocab_size - 1
        n = ns - ns // 2
        return n, f"1 of {n:,} values"
    if task == "flipflop":  # a read's bit
        return 2, "1 of 2 bits"
    if task.startswith("repeat-"):  # the answer's letters (the protocol leaves its '.' out of the metrics)
        return cfg.vocab_size, f"1 of {cfg.vocab_size:,} letters"
    if task.startswith("chomsky-"):  # a uniform guess among the output classes at every scored position
        from longsynth.generators.chomsky._common import LAYOUTS

        n = LAYOUTS[task].output_size(cfg)
        return n, f"1 of {n:,} output classes"
    return None, "no chance level computed for this task"


def answer_chance(task, params=None):
    """The chance level of one scored answer where it differs from the task's over all its scored
    positions (word problems: 1 / |G| per prefix product, their BOS aside), else ``chance``'s."""
    if task == "word-problem":
        from longsynth import registry
        from longsynth.generators.state.word_problem import group_order, parse_group

        return 1.0 / group_order(parse_group(registry.get(task).make_config(**(params or {})).group))
    return chance(task, params)[0]


def plateau(task, params=None):
    """(level, name) of a known plateau a model sits on before it learns the task, or None:
    MQAR's copy plateau, 1 / pairs (a value of the context, not its key's: docs/validation.md)."""
    if task != "mqar":
        return None
    from longsynth import registry

    cfg = registry.get(task).make_config(**(params or {}))
    return 1.0 / cfg.num_kv_pairs, "the copy plateau"


def content_free(batches, ignore_index=IGNORE_INDEX):
    """What two predictors that never read a row's content score on token batches [(x, y, ...)]
    (y [B, T], ``ignore_index`` unscored), as a fraction of the scored positions (docs/evaluate.md,
    "Reading a report"): ``majority``, the most frequent answer of the set; ``position``, the most
    frequent answer at each (length, position) of a row, its length being the index of its last
    scored position plus one. Each is fitted on half of the rows (the even ones, then the odd
    ones) and scored on the other half, so that a few rows per cell do not flatter it; ties go to
    the smallest answer. None without two rows that have a scored position.
    """
    import numpy as np

    rows, pos, lengths, answers, offset = [], [], [], [], 0
    for batch in batches:
        y = np.asarray(batch[1]).reshape(len(batch[1]), -1).astype(np.int64)  # [B, T]
        scored = y != ignore_index  # [B, T]
        r, t = np.nonzero(scored)  # row-major: a row's positions in order
        last = np.full(y.shape[0], -1)
        np.maximum.at(last, r, t)  # [B]  each row's last scored position
        rows.append(r + offset)
        pos.append(t)
        lengths.append(last[r] + 1)
        answers.append(y[r, t])
        offset += y.shape[0]
    if not rows:
        return None
    row, t, length, answer = (np.concatenate(v) for v in (rows, pos, lengths, answers))  # [n] each
    if len(np.unique(row)) < 2 or answer.min() < 0:
        return None
    cell = length * (t.max() + 1) + t  # [n]  one key per (length, position)
    fold = np.unique(row, return_inverse=True)[1] % 2  # [n]  alternate rows among those scored
    hits = {"majority": 0, "position": 0}
    for f in (0, 1):
        fit, score = fold != f, fold == f
        common = int(np.argmax(np.bincount(answer[fit])))
        hits["majority"] += int((answer[score] == common).sum())
        width = int(answer.max()) + 1
        code, count = np.unique(cell[fit] * width + answer[fit], return_counts=True)  # sorted by cell, then answer
        key, value = code // width, code % width
        order = np.lexsort((value, -count, key))  # per cell: the most frequent first, then the smallest answer
        key, value = key[order], value[order]
        first = np.r_[True, key[1:] != key[:-1]]
        key, value = key[first], value[first]  # one answer per fitted cell, cells sorted
        at = np.clip(np.searchsorted(key, cell[score]), 0, len(key) - 1)
        guess = np.where(key[at] == cell[score], value[at], common)  # an unseen cell: the majority
        hits["position"] += int((guess == answer[score]).sum())
    n = len(answer)
    return {"majority": hits["majority"] / n, "position": hits["position"] / n, "rows": int(len(np.unique(row))),
            "count": int(n)}
