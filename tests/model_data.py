"""Shared by the model tests (test_models_*.py, test_recurrent.py, test_baselines_new.py): batches
of the shift task built from its definition, tiny stored datasets of the real generators, and a
layer trained on parity."""
import math

import torch
import torch.nn.functional as F

from longsynth.models_ref.models.stack import Model, ModelConfig


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


def parity_accuracy(layer, steps, L=32, H=32, batch=64, seed=0, **extra):
    """Train one layer on the running parity of L random bits (a label per position) with Adam at
    lr 0.01; its accuracy at the last position (the parity of all L bits) on 512 fresh sequences."""
    torch.manual_seed(seed)
    m = Model(ModelConfig(d_input=1, d_output=2, H=H, layer=layer, vocab_size=2, **extra))
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(seed + 100)
    for _ in range(steps):
        x = torch.randint(0, 2, (batch, L), generator=g)
        loss = F.cross_entropy(m(x).flatten(0, 1), (x.cumsum(1) % 2).flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    x = torch.randint(0, 2, (512, L), generator=g)
    with torch.no_grad():
        return (m(x)[:, -1].argmax(-1) == x.sum(1) % 2).float().mean().item()
