"""The reference model stack (MODELS.md "Model and training").

encoder (Linear(d_input, H), or Embedding(vocab_size, H) for token inputs)
-> n_layers blocks -> decoder Linear(H, d_output) per position -> rightmost target_len;
or, with pool, the decoder applied to the mean over positions (one output per sequence,
S4's `decoder.mode: pool` for LRA classification).

A block (S4-style): z = layer(norm(x) if prenorm else x); z = dropout(z);
z = GLU(Linear(H, 2H)(z)) when glu; x = x + z; x = norm(x) if post-norm.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from longsynth.errors import LongsynthError
from longsynth.models_ref.dlr import DLR
from longsynth.models_ref.dss import DSSExp

LAYERS = ("dlr", "dss")
KERNELS = ("real", "prod")


@dataclass
class ModelConfig:
    d_input: int  # input channels (ignored for token inputs, see vocab_size)
    d_output: int  # output channels per position (classes for classification)
    H: int = 128
    N: int = 1024
    n_layers: int = 1
    layer: str = "dlr"  # "dlr" | "dss"
    kernel: str = "real"  # DLR kernel cast: "real" (Re K) | "prod" (Re K * Im K)
    bidirectional: bool = False  # DLR only
    max_kernel_length: int | None = None
    dt_min: float = 5e-4
    dt_max: float = 5e-1
    ssm_lr: float | None = None  # learning rate of the SSM parameters (None: the model's)
    prenorm: bool = False
    glu: bool = False
    vocab_size: int | None = None  # token inputs: Embedding(vocab_size, H) instead of Linear
    dropout: float = 0.0
    chunk: int | None = None  # kernel chunk length (None: automatic)
    pool: bool = False  # one output per sequence: decoder(mean over positions), [B, 1, d_output]

    def __post_init__(self):
        if self.layer not in LAYERS:
            raise LongsynthError(f"layer: must be one of {LAYERS}, got {self.layer!r}")
        if self.kernel not in KERNELS:
            raise LongsynthError(f"kernel: must be one of {KERNELS}, got {self.kernel!r}")
        if self.layer == "dss" and (self.bidirectional or self.kernel != "real"):
            raise LongsynthError("layer: dss supports only kernel='real', bidirectional=False")
        for name in ("d_input", "d_output", "H", "N", "n_layers"):
            if getattr(self, name) < 1:
                raise LongsynthError(f"{name}: must be >= 1, got {getattr(self, name)}")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.layer == "dlr":
            self.layer = DLR(cfg.H, cfg.N, kernel=cfg.kernel, bidirectional=cfg.bidirectional,
                             max_kernel_length=cfg.max_kernel_length, dt_min=cfg.dt_min,
                             dt_max=cfg.dt_max, lr=cfg.ssm_lr, chunk=cfg.chunk)
        else:
            self.layer = DSSExp(cfg.H, cfg.N, max_kernel_length=cfg.max_kernel_length,
                                dt_min=cfg.dt_min, dt_max=cfg.dt_max, lr=cfg.ssm_lr, chunk=cfg.chunk)
        self.prenorm = cfg.prenorm
        self.norm = nn.LayerNorm(cfg.H)
        self.dropout = nn.Dropout(cfg.dropout)
        self.glu = nn.Linear(cfg.H, 2 * cfg.H) if cfg.glu else None

    def forward(self, x):  # x [B, L, H]
        z = self.layer(self.norm(x) if self.prenorm else x)  # [B, L, H]
        z = self.dropout(z)  # [B, L, H]
        if self.glu is not None:
            z = F.glu(self.glu(z), dim=-1)  # [B, L, H]
        x = x + z  # [B, L, H]
        return x if self.prenorm else self.norm(x)  # [B, L, H]


class Model(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        if cfg.vocab_size is not None:
            self.encoder = nn.Embedding(cfg.vocab_size, cfg.H)
        else:
            self.encoder = nn.Linear(cfg.d_input, cfg.H)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.final_norm = nn.LayerNorm(cfg.H) if cfg.prenorm else nn.Identity()
        self.decoder = nn.Linear(cfg.H, cfg.d_output)
        self.checkpoint_activations = False  # a training choice (TrainConfig), not part of the model


    def forward(self, x, target_len=None):
        """x [B, L, d_input] float (or [B, L] long tokens) -> [B, target_len or L, d_output]
        ([B, 1, d_output] with pool)."""
        h = self.encoder(x)  # [B, L, H]
        for block in self.blocks:
            if self.checkpoint_activations and torch.is_grad_enabled():  # keep only block inputs
                h = checkpoint(block, h, use_reentrant=False)  # [B, L, H]
            else:
                h = block(h)  # [B, L, H]
        h = self.final_norm(h)  # [B, L, H]
        if self.cfg.pool:
            return self.decoder(h.mean(dim=1, keepdim=True))  # [B, 1, d_output]
        if target_len is not None:
            h = h[:, h.shape[1] - target_len:]  # [B, target_len, H]  rightmost positions
        return self.decoder(h)  # [B, T, d_output]
