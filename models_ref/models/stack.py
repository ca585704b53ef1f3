"""The reference model stack (docs/models.md, "Model stack" and "Training").

encoder (Linear(d_input, H), or Embedding(vocab_size, H) for token inputs)
-> n_layers blocks -> decoder Linear(H, d_output) per position: [B, T, d_output], the
model contract of ``longsynth evaluate`` (longsynth.spec). The protocol's readout (the
rightmost positions, every labelled one, or the mean over positions, which equals S4's
pooled decoder since the decoder is linear) is the trainer's.

A block (S4-style): z = layer(norm(x) if prenorm else x); z = dropout(z); x = x + z;
x = norm(x) if post-norm. With ``glu`` the layer's output Linear(H, H) becomes
Linear(H, 2H) + GLU (the official ``postact: glu``; kernel.py). The norm is LayerNorm over
H per position, or BatchNorm per channel over batch and positions (S4's `norm: batch`,
which its LRA Pathfinder setting uses), or RMSNorm (``norm="rms"``, fla's DeltaNet blocks). With ``mlp``
("swiglu", fla's DeltaNetBlock) a second residual sublayer follows: x = x + MLP(norm2(x)) (prenorm).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from longsynth.errors import LongsynthError
from longsynth.models_ref.layers.attention import Attention
from longsynth.models_ref.layers.deltanet import DeltaNet, SwiGLU
from longsynth.models_ref.layers.dlr import DLR, DLRReal
from longsynth.models_ref.layers.dss import INITS as DSS_INITS
from longsynth.models_ref.layers.dss import DSSExp
from longsynth.models_ref.layers.essm import ESSM
from longsynth.models_ref.layers.gru import GRU
from longsynth.models_ref.layers.s4 import S4
from longsynth.models_ref.layers.kernel import SKIPS
from longsynth.models_ref.layers.nogate import S4DNoGate
from longsynth.models_ref.layers.s4d import INITS, S4D
from longsynth.models_ref.layers.s6 import S6
from longsynth.models_ref.layers.torch_lstm import TorchLSTM

LAYERS = ("dlr", "dss", "s4", "s4d", "essm", "dlr-real", "attention", "local-attention", "s6", "gru", "lstm",
          "deltanet")
RECURRENT = ("s6", "gru", "lstm", "deltanet")  # left to right only, with their own output: no bidirectional, glu, skip
KERNELS = ("real", "prod")
NORMS = ("layer", "batch", "rms")
MLPS = (None, "swiglu")


@dataclass
class ModelConfig:
    d_input: int  # input channels (ignored for token inputs, see vocab_size)
    d_output: int  # output channels per position (classes for classification)
    H: int = 128
    N: int = 1024  # state size (s6: d_state, Mamba's 16; gru, lstm: unused)
    n_layers: int = 1
    layer: str = "dlr"  # "dlr" | "dss" | "s4" | "s4d" | "essm" | "dlr-real" | "attention" | "local-attention"
    #                     | "s6" (Mamba; N its d_state, chunk its scan chunk) | "gru"
    #                     | "lstm" (torch's nn.LSTM)
    #                     | "deltanet" (heads its heads, d_conv its short convolutions, chunk its chunk length)
    kernel: str = "real"  # DLR kernel cast: "real" (Re K) | "prod" (Re K * Im K)
    bidirectional: bool = False  # all layers but dss, s6, gru, lstm, deltanet and no_gate; attention: not causal
    max_kernel_length: int | None = None
    dt_min: float = 5e-4
    dt_max: float = 5e-1
    ssm_lr: float | None = None  # learning rate of the SSM parameters (None: the model's)
    prenorm: bool = False
    glu: bool = False
    vocab_size: int | None = None  # token inputs: Embedding(vocab_size, H) instead of Linear
    dropout: float = 0.0
    chunk: int | None = None  # kernel chunk length (None: automatic)
    norm: str = "layer"  # "layer": LayerNorm over H per position | "batch": BatchNorm over (B, L) per channel
    #                      | "rms": RMSNorm over H per position, eps 1e-6 (fla's DeltaNet blocks)
    init: str = "legs"  # s4d: "legs" (S4D-LegS) | "lin" (S4D-Lin); dss: "lin" | "skew-hippo" ("legs" = "lin" for dss)
    skip: str = "learned"  # D u: D learned from N(0, 1) (the official code) | "one": D = 1 (the DLR paper's prose)
    heads: int = 1  # essm: s, the number of diagonal blocks (heads); deltanet: its heads; divides H
    attention_heads: int = 4  # attention heads (the paper's ATTENTION block: 4)
    attention_chunk: int = 1024  # local-attention: chunk length (the paper's LOCALATTENTION: 1024)
    ff_layers: int = 0  # attention only: feed-forward sublayers inside each block (Table 4's ATTENTION + 2xFF: 2)
    ff_width: int = 2048  # their hidden width
    expand: int = 2  # s6 (and s4d with no_gate): E, the inner width E H (Mamba's expand)
    d_conv: int = 4  # s6, s4d with no_gate, deltanet: taps of the causal depthwise convolution(s)
    dt_rank: int | None = None  # s6 only: rank R of Delta's projection (None: ceil(H / 16), Mamba's "auto")
    signed: bool = False  # s6: Abar = 2 exp(Delta A) - 1 in (-1, 1] (Grazzi et al. 2025; built-in s6-signed);
    #                       deltanet: beta = 2 sigmoid in [0, 2], eigenvalues in [-1, 1] (built-in deltanet-signed)
    no_gate: bool = False  # s6, s4d: Mamba Table 1's "No gate" block around the SSM (built-ins s6-nogate, s4d-nogate)
    mlp: str | None = None  # "swiglu": a second prenorm sublayer per block, fla's DeltaNetMLP (built-in deltanet)

    def __post_init__(self):
        if self.layer not in LAYERS:
            raise LongsynthError(f"layer: must be one of {LAYERS}, got {self.layer!r}")
        if self.kernel not in KERNELS:
            raise LongsynthError(f"kernel: must be one of {KERNELS}, got {self.kernel!r}")
        if self.norm not in NORMS:
            raise LongsynthError(f"norm: must be one of {NORMS}, got {self.norm!r}")
        if self.layer == "dss" and (self.bidirectional or self.kernel != "real"):
            raise LongsynthError("layer: dss supports only kernel='real', bidirectional=False")
        if self.layer != "dlr" and self.kernel != "real":
            raise LongsynthError(f"kernel: the prod cast is DLR's; {self.layer} has kernel='real' only")
        if self.layer in ("s4", "s4d") and self.N % 2:
            raise LongsynthError(f"N: {self.layer} keeps N/2 conjugate pairs, N must be even, got {self.N}")
        if self.init not in INITS + DSS_INITS:
            raise LongsynthError(f"init: must be one of {INITS + DSS_INITS}, got {self.init!r}")
        if self.skip not in SKIPS:
            raise LongsynthError(f"skip: must be one of {SKIPS}, got {self.skip!r}")
        if self.layer == "essm" and self.glu:
            raise LongsynthError("glu: eSSM has its own gated activation (docs/models.md); use glu=False")
        if self.layer == "essm" and self.N % self.heads:
            raise LongsynthError(f"N: eSSM divides its N states over {self.heads} heads; N must be a multiple, "
                                 f"got {self.N}")
        if self.ff_layers and self.layer not in ("attention", "local-attention"):
            raise LongsynthError(f"ff_layers: the feed-forward sublayers are attention's (Table 4), not {self.layer}'s")
        if self.layer in RECURRENT:
            why = {"bidirectional": "is causal only: its recurrence runs left to right",
                   "glu": {"gru": "has no output Linear to gate", "lstm": "has no output Linear to gate",
                           "s6": "gates its output by SiLU(z)"}.get(self.layer, "ends in its own RMSNorm and W_o"),
                   "skip": "learns D from 1 (Mamba's)" if self.layer == "s6" else "has no D u skip"}
            for name, off in (("bidirectional", False), ("glu", False), ("skip", "learned")):
                if getattr(self, name) != off:
                    raise LongsynthError(f"{name}: {self.layer} {why[name]} (docs/models.md); use {name}={off!r}")
        if self.dt_rank is not None and self.dt_rank < 1:
            raise LongsynthError(f"dt_rank: must be >= 1 or None (ceil(H / 16)), got {self.dt_rank}")
        if self.signed and self.layer not in ("s6", "deltanet"):
            raise LongsynthError(f"signed: the signed transition is s6's and deltanet's, not {self.layer}'s")
        if self.no_gate and self.layer not in ("s6", "s4d"):
            raise LongsynthError(f"no_gate: Mamba's \"No gate\" block is around s6 or s4d, not {self.layer}")
        if self.no_gate and self.layer == "s4d" and (self.bidirectional or self.glu or self.skip != "learned"):
            raise LongsynthError("no_gate: the \"No gate\" block is causal and ends in its own W_out; use "
                                 "bidirectional=False, glu=False, skip='learned' (docs/models.md)")
        if self.mlp not in MLPS:
            raise LongsynthError(f"mlp: must be one of {MLPS}, got {self.mlp!r}")
        if self.heads < 1 or self.H % self.heads:
            raise LongsynthError(f"heads: must be >= 1 and divide H = {self.H}, got {self.heads}")
        for name in ("d_input", "d_output", "H", "N", "n_layers", "expand", "d_conv"):
            if getattr(self, name) < 1:
                raise LongsynthError(f"{name}: must be >= 1, got {getattr(self, name)}")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)


class ChannelBatchNorm(nn.Module):
    """BatchNorm over batch and positions, per channel, on x [B, L, H] (S4's `norm: batch`).

    Training normalises with the statistics of the global batch: under torchrun the per-channel
    sums are all-reduced (differentiably) over the ranks, so N processes compute what one
    process at the same global batch computes, on the CPU (gloo) as on GPUs. Evaluation uses
    the running mean and (unbiased) variance, updated with ``momentum`` as nn.BatchNorm1d.
    """

    def __init__(self, H, eps=1e-5, momentum=0.1):
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.weight = nn.Parameter(torch.ones(H))  # [H]
        self.bias = nn.Parameter(torch.zeros(H))  # [H]
        self.register_buffer("running_mean", torch.zeros(H))  # [H]
        self.register_buffer("running_var", torch.ones(H))  # [H]

    def forward(self, x):  # x [B, L, H]
        xf = x.float()  # [B, L, H]  (a no-op for float32 input)
        if not self.training:
            mean, var = self.running_mean, self.running_var  # [H], [H]
        else:
            n = torch.full((1,), xf.shape[0] * xf.shape[1], dtype=xf.dtype, device=xf.device)  # [1]
            stats = torch.cat([xf.sum((0, 1)), (xf * xf).sum((0, 1)), n])  # [2H + 1]
            if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                from torch.distributed.nn import all_reduce

                stats = all_reduce(stats)  # [2H + 1]  summed over ranks, with its gradient
            H = xf.shape[-1]
            count = stats[-1]  # [] global B * L
            mean = stats[:H] / count  # [H]
            var = (stats[H:2 * H] / count - mean * mean).clamp_min(0)  # [H]  biased, as BatchNorm normalises
            with torch.no_grad():
                m = self.momentum
                self.running_mean.mul_(1 - m).add_(m * mean)
                self.running_var.mul_(1 - m).add_(m * var * count / (count - 1).clamp_min(1))
        y = (xf - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias  # [B, L, H]
        return y.to(x.dtype)  # [B, L, H]


def make_norm(cfg: ModelConfig):
    if cfg.norm == "rms":  # fla's RMSNorm(hidden_size, eps=norm_eps 1e-6) (configuration_delta_net.py 34)
        return nn.RMSNorm(cfg.H, eps=1e-6)
    return nn.LayerNorm(cfg.H) if cfg.norm == "layer" else ChannelBatchNorm(cfg.H)


def make_layer(cfg: ModelConfig):
    """The contextualisation of a block: u [B, L, H] -> [B, L, H]."""
    ssm = dict(max_kernel_length=cfg.max_kernel_length, dt_min=cfg.dt_min, dt_max=cfg.dt_max, lr=cfg.ssm_lr,
               chunk=cfg.chunk, skip=cfg.skip, glu=cfg.glu)
    if cfg.layer == "dlr":
        return DLR(cfg.H, cfg.N, kernel=cfg.kernel, bidirectional=cfg.bidirectional, **ssm)
    if cfg.layer == "dlr-real":
        return DLRReal(cfg.H, cfg.N, bidirectional=cfg.bidirectional, **ssm)
    if cfg.layer == "dss":
        return DSSExp(cfg.H, cfg.N, init="skew-hippo" if cfg.init == "skew-hippo" else "lin", **ssm)
    if cfg.layer == "s4":  # the S4 family (docs/models.md): s4, s4d, essm
        return S4(cfg.H, cfg.N, bidirectional=cfg.bidirectional, **ssm)
    if cfg.layer == "s4d" and cfg.no_gate:  # Mamba Table 1's "No gate" block around S4D (layers/nogate.py)
        return S4DNoGate(cfg.H, cfg.N, expand=cfg.expand, d_conv=cfg.d_conv, init=cfg.init, dt_min=cfg.dt_min,
                         dt_max=cfg.dt_max, lr=cfg.ssm_lr, chunk=cfg.chunk)
    if cfg.layer == "s4d":
        return S4D(cfg.H, cfg.N, init=cfg.init, bidirectional=cfg.bidirectional, **ssm)
    if cfg.layer == "essm":
        for name in ("chunk", "skip", "glu"):  # eSSM: D starts at 1 (its D_init: one), its own activation
            ssm.pop(name)
        return ESSM(cfg.H, cfg.N, heads=cfg.heads, bidirectional=cfg.bidirectional, **ssm)
    if cfg.layer == "s6":  # Mamba (docs/models.md "S6"): N is d_state, chunk the scan's chunk length
        return S6(cfg.H, cfg.N, expand=cfg.expand, d_conv=cfg.d_conv, dt_rank=cfg.dt_rank, dt_min=cfg.dt_min,
                  dt_max=cfg.dt_max, signed=cfg.signed, lr=cfg.ssm_lr, chunk=cfg.chunk, gate=not cfg.no_gate)
    if cfg.layer == "deltanet":  # docs/models.md "DeltaNet": chunk is its chunk length (fla's 64)
        return DeltaNet(cfg.H, cfg.heads, d_conv=cfg.d_conv, signed=cfg.signed, chunk=cfg.chunk or 64)
    if cfg.layer == "gru":
        return GRU(cfg.H)
    if cfg.layer == "lstm":
        return TorchLSTM(cfg.H)
    chunk = cfg.attention_chunk if cfg.layer == "local-attention" else None
    return Attention(cfg.H, cfg.attention_heads, causal=not cfg.bidirectional, chunk=chunk, glu=cfg.glu,
                     ff_layers=cfg.ff_layers, ff_width=cfg.ff_width)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.layer = make_layer(cfg)
        self.prenorm = cfg.prenorm
        self.norm = make_norm(cfg)
        self.dropout = nn.Dropout(cfg.dropout)
        if cfg.mlp == "swiglu":  # fla's DeltaNetBlock: a second residual sublayer (modeling_delta_net.py 118-134)
            self.mlp, self.mlp_norm = SwiGLU(cfg.H, cfg.n_layers), make_norm(cfg)

    def forward(self, x):  # x [B, L, H]
        z = self.layer(self.norm(x) if self.prenorm else x)  # [B, L, H]
        z = self.dropout(z)  # [B, L, H]
        x = x + z  # [B, L, H]
        x = x if self.prenorm else self.norm(x)  # [B, L, H]
        if hasattr(self, "mlp"):
            z = self.dropout(self.mlp(self.mlp_norm(x) if self.prenorm else x))  # [B, L, H]
            x = x + z if self.prenorm else self.mlp_norm(x + z)  # [B, L, H]
        return x  # [B, L, H]


class Model(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        if cfg.vocab_size is not None:
            self.encoder = nn.Embedding(cfg.vocab_size, cfg.H)
        else:
            self.encoder = nn.Linear(cfg.d_input, cfg.H)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.final_norm = make_norm(cfg) if cfg.prenorm else nn.Identity()
        self.decoder = nn.Linear(cfg.H, cfg.d_output)
        self.checkpoint_activations = False  # a training choice (TrainConfig), not part of the model

    def forward(self, x):
        """x [B, L, d_input] float (or [B, L] long tokens) -> [B, L, d_output]."""
        h = self.encoder(x)  # [B, L, H]
        for block in self.blocks:
            if self.checkpoint_activations and torch.is_grad_enabled():  # keep only block inputs
                h = checkpoint(block, h, use_reentrant=False)  # [B, L, H]
            else:
                h = block(h)  # [B, L, H]
        h = self.final_norm(h)  # [B, L, H]
        return self.decoder(h)  # [B, L, d_output]
