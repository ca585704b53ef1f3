"""A batch through the model, as the training loop, the evaluation pass and the step timing share it:
the readout (the outputs that meet the targets), the loss sum and the count of targets, bf16
autocast, and the sums over the ranks of a process group (torchrun).
"""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from longsynth.models_ref.training import metrics as M


def dist_info():
    """(rank, world size) of the process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_sum(t):
    """Sum a tensor over ranks (in place; a no-op without a process group)."""
    if dist_info()[1] > 1:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def trimmed(x, y, extras):
    """x [B, T, ...], y [B, T] and extras [B, T] cut after the batch's last scored position (a
    target other than IGNORE_INDEX): a causal model's output at t reads inputs 0..t only, so the
    loss and metrics of the scored positions are those of the whole rows, and the positions past
    them, padding, cost nothing (docs/evaluate.md, "Padding"). Unchanged where y is not one target
    per input position."""
    if y.dim() != 2 or x.dim() < 2 or x.shape[:2] != y.shape:
        return x, y, extras
    scored = (y != M.IGNORE_INDEX).any(dim=0).nonzero()  # [k, 1]  positions scored in some row
    end = int(scored[-1]) + 1 if len(scored) else 1
    if end == y.shape[1]:
        return x, y, extras
    return x[:, :end], y[:, :end], {k: v[:, :end] for k, v in extras.items()}  # [B, end, ...], [B, end], ...


def _unpack(batch, device, trim=False):
    """(x, y, extras) of a batch on ``device``, ``trimmed`` when ``trim``."""
    x, y = batch[0], batch[1]
    extras = batch[2] if len(batch) > 2 else {}
    if trim:
        x, y, extras = trimmed(x, y, extras)
    return x.to(device), y.to(device), {k: v.to(device) for k, v in extras.items()}


def readout(out, y, kind):
    """The outputs that meet the targets (longsynth.spec): out [B, T, d] -> [B, T', d]."""
    if kind == "rightmost":
        return out[:, out.shape[1] - y.shape[1]:]  # [B, y.shape[1], d]  the paper's rightmost positions
    if kind == "mean":
        return out.mean(dim=1, keepdim=True)  # [B, 1, d]  S4's pooled decoder
    if kind == "pool":  # position t: the mean of outputs 0..t; the label sits at a sequence's last real token
        count = torch.arange(1, out.shape[1] + 1, device=out.device, dtype=out.dtype)  # [T]
        return torch.cumsum(out, dim=1) / count[None, :, None]  # [B, T, d]
    return out  # [B, T, d]  every position; unlabelled ones carry IGNORE_INDEX


def _forward(model, x, y, cfg):
    """(out, loss sum, count of targets): the loss is the mean = sum / count."""
    out = readout(model(x), y, cfg.readout).float()  # [B, T', d_output]
    if cfg.objective == "regression":
        return out, F.mse_loss(out, y.float().reshape(out.shape), reduction="sum"), out.numel()
    y = y.reshape(-1).long()
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y, ignore_index=M.IGNORE_INDEX, reduction="sum")
    return out, loss, int((y != M.IGNORE_INDEX).sum())


def _autocast(device, cfg):
    dev = torch.device(device).type
    return torch.autocast(dev, dtype=torch.bfloat16, enabled=cfg.amp)
