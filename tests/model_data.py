"""Shared by the model tests (test_models_*.py): batches of the shift task built from its
definition, and tiny stored datasets of the real generators."""
import math

import torch


def _with_pos(x):
    """Append the positional channels cos(2 pi i / T), sin(2 pi i / T) (docs/tasks/atomic.md, "Conventions")."""
    B, L, _ = x.shape
    a = 2 * math.pi * torch.arange(L) / L
    return torch.cat([x, torch.cos(a)[None, :, None].expand(B, L, 1),
                      torch.sin(a)[None, :, None].expand(B, L, 1)], -1)


def _shift_batch(step, B=16, L=128, C=8, stream=0):
    """docs/tasks/atomic.md shift: y_ij = x_{i - jL/C} (zero before the start), x normalised noise."""
    g = torch.Generator().manual_seed(1000 * stream + step)
    x = torch.randn(B, L, generator=g)
    x = x / x.abs().amax(1, keepdim=True)
    y = torch.zeros(B, L, C)
    for j in range(C):
        s = j * L // C
        y[:, s:, j] = x[:, :L - s]
    return _with_pos(x[..., None]), y


def _stored(tmp_path, task, params, train, evaluate):
    from longsynth.store import generate

    root = tmp_path / task
    generate(str(root), task, params, seed=3, splits={"train": train, "val": evaluate, "test": evaluate}, workers=1)
    return str(root)
