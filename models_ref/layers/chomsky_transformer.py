"""Transformer encoder: the Chomsky-hierarchy paper's ``transformer_encoder`` (Delétang, Ruoss et al., ICLR
2023; docs/models.md "Chomsky hierarchy baselines"; google-deepmind/neural_networks_chomsky_hierarchy @
2b8eb4be models/transformer.py 225-318, built by ``make_transformer_encoder`` 453-501 at its defaults,
experiments/constants.py 63-64): embedding E = 64, 5 layers of 8 heads of d = E / 8 = 8 (30-73, 72-73),
feed-forward E -> 4E -> E (``widening_factor``, 66), dropout 0.1 (45), sin/cos positions (54-57, 474-476),
post-norm (``layer_norm(h + sublayer)``, 308 and 317), no attention mask (``causal_masking`` False, 68 and
470: every position sees every other). Per row of length L (the input and its empty tokens):

    h = sqrt(E) W_emb x + P                              no bias; W_emb ~ N(0, 0.02) cut at 2 sigma (253-259)
    P[t] = [sin((L - t) w), cos((L - t) w)]              w_j = 10000^(-2j / E), j < E / 2; positions count
                                                          down from L to 1 (``causal=True``, 271-279;
                                                          positional_encodings.py 99-116)
    per layer:  a = LN(h + Drop(W_o concat_heads(softmax(q k^T / sqrt(d)) v)))   q, k, v, W_o without bias
                h = LN(a + Drop(W_2 relu(W_1 a + b_1) + b_2))                     (transformer.py 293-317)

Dropout after the positions too (281). The authors' rows are never padded (one length per batch); ours
are (docs/tasks/chomsky.md "Row layout"), so the padding is masked out of the keys (their own way of
masking, transformer.py 215-216: the logit set to the dtype's lowest value) and L is each row's own length,
so a padded row's outputs are those of the unpadded one. Linear weights start as hk.Linear's (truncated
normal of std 1 / sqrt(fan_in), zero bias). Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def haiku_init_(linear, std=None):
    """hk.Linear's initialisation in place: weights N(0, std) cut at +-2 std (std 1 / sqrt(fan_in) by
    default; haiku basic.py, Linear.__call__), bias zero."""
    std = 1.0 / math.sqrt(linear.in_features) if std is None else std
    nn.init.trunc_normal_(linear.weight, std=std, a=-2.0 * std, b=2.0 * std)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)
    return linear


def sinusoid(L, T, E, max_time=10_000):
    """P [B, T, E] float64: row b's position t as value L[b] - t (positional_encodings.py 99-116, causal)."""
    w = max_time ** (-torch.arange(0, E, 2, dtype=torch.float64, device=L.device) / E)  # [E / 2]
    pos = L.to(torch.float64)[:, None] - torch.arange(T, dtype=torch.float64, device=L.device)  # [B, T]
    angle = pos[..., None] * w  # [B, T, E / 2]
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)  # [B, T, E]


class EncoderLayer(nn.Module):
    """h [B, T, E], keys [B, T] bool (True: a position to attend to) -> [B, T, E]: one block of 293-317."""

    def __init__(self, E=64, num_heads=8, widening_factor=4, dropout_prob=0.1):
        super().__init__()
        self.heads, self.d = num_heads, E // num_heads  # ``num_hiddens_per_head`` (72-73)
        hid = self.heads * self.d
        self.q = haiku_init_(nn.Linear(E, hid, bias=False))  # W_q [h d, E]  (173)
        self.k = haiku_init_(nn.Linear(E, hid, bias=False))  # W_k [h d, E]  (174)
        self.v = haiku_init_(nn.Linear(E, hid, bias=False))  # W_v [h d, E]  (175)
        self.o = haiku_init_(nn.Linear(hid, E, bias=False))  # W_o [E, h d]  (222)
        self.norm1 = nn.LayerNorm(E, eps=1e-5)  # hk.LayerNorm(axis=-1, scale, offset), eps 1e-5 (76-77)
        self.ff1 = haiku_init_(nn.Linear(E, widening_factor * E))  # W_1 [4E, E], b_1 [4E]  (311-312)
        self.ff2 = haiku_init_(nn.Linear(widening_factor * E, E))  # W_2 [E, 4E], b_2 [E]  (314)
        self.norm2 = nn.LayerNorm(E, eps=1e-5)
        self.drop = nn.Dropout(dropout_prob)

    def attention(self, h, keys):  # h [B, T, E], keys [B, T]
        B, T, _ = h.shape
        q = self.q(h).view(B, T, self.heads, self.d)  # [B, T, h, d]
        k = self.k(h).view(B, T, self.heads, self.d)  # [B, T, h, d]
        v = self.v(h).view(B, T, self.heads, self.d)  # [B, T, h, d]
        logits = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(self.d)  # [B, h, T, T]  (198-199)
        logits = logits.masked_fill(~keys[:, None, None, :], torch.finfo(logits.dtype).min)  # [B, h, T, T]
        weights = torch.softmax(logits, dim=-1)  # [B, h, T, T]  (218)
        out = torch.einsum("bhts,bshd->bthd", weights, v).reshape(B, T, self.heads * self.d)  # [B, T, h d]
        return self.o(out)  # [B, T, E]

    def forward(self, h, keys):  # h [B, T, E], keys [B, T]
        a = self.norm1(h + self.drop(self.attention(h, keys)))  # [B, T, E]  (306-308)
        f = self.ff2(F.relu(self.ff1(a)))  # [B, T, E]  (311-314)
        return self.norm2(a + self.drop(f))  # [B, T, E]  (316-317)


class TransformerEncoder(nn.Module):
    """x [B, T, D] (one-hot rows), keys [B, T] bool (False: padding) -> h [B, T, E]: ``TransformerEncoder``
    (225-318) with padding masked; each row's length L is its count of keys (the padding is its tail)."""

    def __init__(self, D, embedding_dim=64, num_layers=5, num_heads=8, widening_factor=4, dropout_prob=0.1,
                 max_time=10_000):
        super().__init__()
        self.H, self.max_time = embedding_dim, max_time  # H: the width the head reads (models_ref/models/chomsky.py)
        self.embed = haiku_init_(nn.Linear(D, embedding_dim, bias=False), std=0.02)  # W_emb [E, D] (253-257)
        self.drop = nn.Dropout(dropout_prob)
        self.layers = nn.ModuleList(EncoderLayer(embedding_dim, num_heads, widening_factor, dropout_prob)
                                    for _ in range(num_layers))

    def forward(self, x, keys):  # x [B, T, D], keys [B, T]
        E = self.H
        L = keys.sum(dim=1)  # [B]  the row's length: its input and empty tokens
        pos = sinusoid(L, x.shape[1], E, self.max_time)  # [B, T, E] float64, as their numpy table
        h = self.embed(x) * math.sqrt(E)  # [B, T, E]  (255-259)
        h = self.drop(h + pos.to(h.dtype))  # [B, T, E]  (280-281)
        for layer in self.layers:
            h = layer(h, keys)  # [B, T, E]
        return h  # [B, T, E]
