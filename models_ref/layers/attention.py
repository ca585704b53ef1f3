"""ATTENTION and LOCALATTENTION: the DLR paper's attention baselines (section 3.3, 3.4; docs/models.md).

The paper's ATTENTION block is the reference block with the DLR contextualisation replaced
by 4-head self-attention with rotary position embeddings, as the official layer orders it
(ag1988/dlr src/models/sequence/ss/standalone/dss.py ``forward_attn``, lines 695-700):

    u [B, L, H] -> y = u + GELU(MHA(u)) -> output Linear (Linear(H, H), or Linear(H, 2H) + GLU)

MHA (its attention.py ``Attention``, lines 63-104): q, k, v = u W_qkv split into heads of
d = H / heads; rotary embeddings turn q and k by position-dependent angles (so q_i . k_j
depends on i - j); q is scaled by a learned temperature initialised at d^-1/2 (line 76, 98);
attention through ``scaled_dot_product_attention`` (CUDA's fused kernels), causal when the
protocol is; then the output projection. ATTENTION + 2 x FF (the paper's Table 4, its
``attn_ff``, lines 86-90 and 114-116) adds two pre-LayerNorm residual feed-forward layers
right after that projection, inside the GELU.

LOCALATTENTION (section 3.4): the sequence is cut into non-overlapping chunks of ``chunk``
positions; each chunk attends to itself and its neighbours - the previous chunk only when
causal, the previous and the next otherwise. Memory O(L * chunk), not O(L^2), so
ListOps-Subtrees (8K) and Pathfinder-128 (16K) fit. With L <= chunk it is full attention.
Only torch is imported here.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import OutputLinear


def rotary(x, base=10000.0):
    """Rotary position embedding of x [B, heads, L, d] (d even): pairs (x_2i, x_2i+1) at
    position t turn by t * base^(-2i/d)."""
    B, h, L, d = x.shape
    inv = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)  # [d/2]
    angle = torch.arange(L, device=x.device, dtype=torch.float32)[:, None] * inv[None]  # [L, d/2]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # [L, d/2]
    x1, x2 = x[..., 0::2], x[..., 1::2]  # [B, h, L, d/2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # [B, h, L, d/2, 2]
    return out.flatten(-2)  # [B, h, L, d]


def local_mask(c, causal, device):
    """Which keys each query of a chunk sees, over [previous, own, next] chunks: bool [c, 3c]."""
    i = torch.arange(c, device=device)[:, None]  # [c, 1]  query offset in its chunk
    j = torch.arange(3 * c, device=device)[None] - c  # [1, 3c]  key offset relative to the chunk start
    if causal:
        return j <= i  # previous chunk whole, own chunk up to the query, no next chunk
    return torch.ones(c, 3 * c, dtype=torch.bool, device=device)


def local_attention(q, k, v, chunk, causal):
    """Chunked attention: q, k, v [B, h, L, d] -> [B, h, L, d]; chunk n attends to chunks n-1,
    n and (not causal) n+1. Padded positions past L and the missing neighbours at the ends
    are masked."""
    B, h, L, d = q.shape
    c = min(chunk, L)
    n = -(-L // c)
    pad = n * c - L
    q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))  # [B, h, n*c, d]
    q = q.view(B, h, n, c, d)  # [B, h, n, c, d]

    def neighbours(t):  # [B, h, n*c, d] -> [B, h, n, 3c, d]: previous, own, next chunk
        t = F.pad(t, (0, 0, c, c)).view(B, h, n + 2, c, d)  # [B, h, n+2, c, d]
        return torch.cat((t[:, :, :-2], t[:, :, 1:-1], t[:, :, 2:]), dim=3)  # [B, h, n, 3c, d]

    k, v = neighbours(k), neighbours(v)  # [B, h, n, 3c, d]
    pos = torch.arange(n, device=q.device)[:, None] * c + torch.arange(3 * c, device=q.device)[None] - c  # [n, 3c]
    real = (pos >= 0) & (pos < L)  # [n, 3c]  keys that exist
    mask = local_mask(c, causal, q.device)[None] & real[:, None, :]  # [n, c, 3c]
    # as [B*h, n, c, d] with a 4-D mask, which CPU's fused (flash) kernel takes: 5-D went the unfused way, which
    # holds the [B, h, n, c, 3c] scores (at 16K positions, batch 4, chunk 256: forward 2.0 s -> 0.55 s, backward
    # 2.0 s -> 1.4 s on a core; the same up to float rounding, masked keys exactly 0)
    out = F.scaled_dot_product_attention(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), attn_mask=mask[None],
                                         scale=1.0)  # [B*h, n, c, d]  q is pre-scaled
    return out.reshape(B, h, n * c, d)[:, :, :L]  # [B, h, L, d]


class Attention(nn.Module):
    """One ATTENTION (``chunk=None``) or LOCALATTENTION layer on u [B, L, H] -> [B, L, H].

    ``ff_layers`` pre-LayerNorm residual feed-forward layers of hidden width ``ff_width`` follow
    the attention's projection (Table 4's ATTENTION + 2 x FF: two of width 2048).
    """

    def __init__(self, H, heads=4, *, causal=True, chunk=None, glu=False, ff_layers=0, ff_width=2048):
        super().__init__()
        if H % heads or (H // heads) % 2:
            raise ValueError(f"attention: H ({H}) must split into {heads} heads of even size")
        self.H, self.heads, self.causal, self.chunk = H, heads, causal, chunk
        self.qkv = nn.Linear(H, 3 * H)
        self.scale = nn.Parameter(torch.full((1,), (H // heads) ** -0.5))  # [1]  the learned temperature
        self.proj = nn.Linear(H, H)  # the attention's output projection
        self.ffs = nn.ModuleList(FeedForward(H, ff_width) for _ in range(ff_layers))
        self.out = OutputLinear(H, glu)  # the block's position-wise output, as in the DLR layer

    def forward(self, u):  # u [B, L, H]
        B, L, H = u.shape
        q, k, v = self.qkv(u).view(B, L, 3, self.heads, H // self.heads).permute(2, 0, 3, 1, 4)  # 3 x [B, h, L, d]
        q, k = rotary(q) * self.scale.to(q.dtype), rotary(k)  # [B, h, L, d]  temperature on q
        if self.chunk is None or L <= self.chunk:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, scale=1.0)  # [B, h, L, d]
        else:
            a = local_attention(q, k, v, self.chunk, self.causal)  # [B, h, L, d]
        o = self.proj(a.transpose(1, 2).reshape(B, L, H))  # [B, L, H]
        for ff in self.ffs:
            o = o + ff(o)  # [B, L, H]
        return self.out(u + F.gelu(o))  # [B, L, H]  residual after the activation


class FeedForward(nn.Module):
    """x -> Linear(width, H)(GELU(Linear(H, width)(LayerNorm(x)))); the caller adds x."""

    def __init__(self, H, width):
        super().__init__()
        self.norm, self.up, self.down = nn.LayerNorm(H), nn.Linear(H, width), nn.Linear(width, H)

    def forward(self, x):  # x [B, L, H]
        return self.down(F.gelu(self.up(self.norm(x))))  # [B, L, H]
