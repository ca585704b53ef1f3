"""The evaluation pass: loss and metrics of the evaluation batches, each metric twice - the
paper's (computed per batch, averaged over batches, so it depends on the batch size) and
``exact`` (from counts summed over the whole evaluation set: one confusion matrix, one
correct/count pair, one set of R^2 sums) - summed across the ranks of a process group; and
``finite``, the test of a record for a diverged run.
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from longsynth.models_ref.training import metrics as M
from longsynth.models_ref.training.config import TrainConfig
from longsynth.models_ref.training.forward import _autocast, _forward, _unpack, all_sum, dist_info


def _batch_metrics(out, y, extras, cfg):
    """(the paper's metrics of this batch, exact-metric sums to add over batches)."""
    if cfg.objective == "regression":
        y = y.reshape(out.shape)
        return {"r2": M.r2(out, y)}, M.r2_sums(out, y)
    if cfg.objective == "tokens":
        y = y.long()
        allowed = extras.pop("allowed", None) if cfg.dfa_metric else None  # a mask, not a breakdown group
        strings = cfg.string_metrics is not None
        if strings and cfg.string_metrics:
            y = torch.where(torch.isin(y, torch.tensor(cfg.string_metrics, device=y.device)), M.IGNORE_INDEX, y)
        m = M.token_accuracy(out, y, groups=extras)
        scored = out.argmax(-1)[y != M.IGNORE_INDEX]  # [n]  the answers given at scored positions
        given = torch.bincount(scored.cpu(), minlength=out.shape[-1]).to(torch.float64)  # [d_output]
        sums = [torch.tensor([m["correct"], m["count"]], dtype=torch.float64), given]
        if strings:
            rows = _strings(out, y)
            if rows[1]:  # a batch without a scored row adds nothing (a NaN would read as a diverged run)
                m.update(string_accuracy=rows[0] / rows[1], char_accuracy=rows[2] / rows[1])
            sums.append(torch.tensor(rows, dtype=torch.float64))
        if cfg.dfa_metric:
            right, scored = _dfa(out, y, allowed)
            if scored:
                m["dfa_accuracy"] = right / scored
            sums.append(torch.tensor([right, scored], dtype=torch.float64))
        return m, torch.cat(sums)
    cm = M.confusion(out, y.long(), cfg.num_classes)
    s = M.macro_from_confusion(cm)
    return {"macro_f1": s["macro_f1"], "macro_accuracy": s["macro_accuracy"]}, cm.flatten()


def _strings(out, y):
    """(rows whose every scored target is right, rows with a scored target, the sum over those rows of the share
    right) of a batch: Repeat After Me's ``get_score`` per row (teacher-forced: the answer given the true prefix),
    string accuracy and character accuracy summed."""
    valid = y != M.IGNORE_INDEX  # [B, T]
    hit = (out.argmax(-1) == y) & valid  # [B, T]
    count, right = valid.sum(1), hit.sum(1)  # [B], [B]
    rows = count > 0  # [B]
    share = right[rows].double() / count[rows].double()  # [rows]
    return [int((right[rows] == count[rows]).sum()), int(rows.sum()), float(share.sum())]


def _dfa(out, y, allowed):
    """(predictions the row's DFA allows, scored positions) of a batch: RegBench's DFA accuracy
    (generators/regbench/scoring.py): at a scored position the prediction counts when it is a letter (token a + 1)
    whose bit is set in ``allowed`` [B, T], the letters the DFA allows after the current string."""
    if allowed is None:
        raise ValueError("a DFA-accuracy protocol's evaluation batch carries no 'allowed' mask")
    valid = y != M.IGNORE_INDEX  # [B, T]
    letter = out.argmax(-1) - 1  # [B, T]  bit of the predicted letter; -1 for '.', > letters for '|'
    ok = (letter >= 0) & (letter < 62) & ((allowed >> letter.clamp(0, 62)) & 1).bool()  # [B, T]
    return int((ok & valid).sum()), int(valid.sum())


def _exact(sums, cfg):
    if cfg.objective == "regression":
        return {"r2": M.r2_from_sums(sums)}
    if cfg.objective == "tokens":
        c, n = int(sums[0]), int(sums[1])
        strings = cfg.string_metrics is not None
        if cfg.dfa_metric:  # the last two: predictions the DFAs allow, scored positions
            right, scored, sums = int(sums[-2]), int(sums[-1]), sums[:-2]
        given = sums[2:-3] if strings else sums[2:]
        # the share of the scored positions given the model's most frequent answer: near 1, one answer for all
        res = {"accuracy": c / n if n else float("nan"), "correct": c, "count": n,
               "top_share": float(given.max()) / n if n else float("nan")}
        if strings:
            right, rows, share = int(sums[-3]), int(sums[-2]), float(sums[-1])
            res["rows"] = rows
            if rows:
                res.update(string_accuracy=right / rows, char_accuracy=min(1.0, share / rows))
        if cfg.dfa_metric:
            res.update(dfa_correct=right, dfa_count=scored, dfa_accuracy=right / scored if scored else float("nan"))
        return res
    cm = sums.reshape(cfg.num_classes, cfg.num_classes)
    s = M.macro_from_confusion(cm)
    return {**s, "confusion": cm.long().tolist()}


def finite(record):
    """Whether every number of an evaluation's record (its metrics, loss, exact counts and
    breakdown tables) is finite: a NaN or an infinity means the run diverged
    (docs/evaluate.md, "Diverged runs")."""
    if isinstance(record, dict):
        return all(finite(v) for v in record.values())
    if isinstance(record, (list, tuple)):
        return all(finite(v) for v in record)
    return not isinstance(record, float) or math.isfinite(record)


@torch.no_grad()
def evaluate(model, batches, cfg: TrainConfig, device="cpu"):
    """Loss and metrics of the evaluation batches (this rank's share under DDP).

    The top-level metrics (and loss) are the paper's: computed per batch, averaged over the
    batches of all ranks; ``batch_size`` is the size of those batches. ``exact`` holds the
    same metrics from counts summed over the whole set (all ranks). Breakdown tables
    (``by_*`` keys) are summed over batches and ranks and reported as accuracies.
    """
    model.eval()
    sums, tables, n, exact, batch_size = {}, {}, 0, None, None
    names = []
    for b, batch in enumerate(batches):
        if cfg.eval_batches is not None and b >= cfg.eval_batches:
            break
        x, y, extras = _unpack(batch, device, cfg.trim)
        batch_size = batch_size or x.shape[0]
        with _autocast(device, cfg):
            out, loss, count = _forward(model, x, y, cfg)
        m, e = _batch_metrics(out, y, extras, cfg)
        exact = e.cpu() if exact is None else exact + e.cpu()
        m["loss"] = float(loss) / max(count, 1)
        for k, v in m.items():
            if k.startswith("by_"):
                tables.setdefault(k, []).append(v)
            elif k not in ("correct", "count"):
                sums[k] = sums.get(k, 0.0) + v
        n += 1
    model.train()
    rank, world = dist_info()
    names = sorted(sums)
    if world > 1:  # every rank evaluates at least one batch (validate's sources ensure it)
        packed = torch.tensor([n] + [sums[k] for k in names], dtype=torch.float64)
        if device != "cpu" and dist.get_backend() == "nccl":
            packed, exact = packed.to(device), exact.to(device)
        all_sum(packed)
        all_sum(exact)
        packed, exact = packed.cpu(), exact.cpu()
        n, sums = int(packed[0]), {k: float(v) for k, v in zip(names, packed[1:])}
        gathered = [None] * world
        dist.all_gather_object(gathered, tables)
        tables = {}
        for t in gathered:
            for k, ts in t.items():
                tables.setdefault(k, []).extend(ts)
    res = {k: v / max(n, 1) for k, v in sums.items()}
    for k, ts in tables.items():
        res[k] = {str(g): {"accuracy": c / t, "count": t} for g, (c, t) in sorted(M.merge_counts(ts).items())}
    res["batches"] = n
    res["batch_size"] = batch_size
    res["averaging"] = "paper: each metric computed per batch of batch_size, then averaged over batches"
    res["exact"] = _exact(exact, cfg) if exact is not None else None
    return res
