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

``positional_encodings`` (TransformerConfig's field, transformer.py 54-57; the members of
``PositionalEncodings``, positional_encodings.py 29-35, lower-cased) picks the paper's five (appendix A.4):

    "sin_cos"   (default) P above, added to the embedding, then dropout (transformer.py 267-281)
    "none"      h = sqrt(E) W_emb x: no positions and no dropout on the embedding (282-283)
    "rotary"    q and k (not v) of every head rotated pairwise, dims (2j, 2j + 1) by the angle t theta_j,
                theta_j = 10000^(-2j / d), t = 0 .. T - 1 counting up from the row's start (not the
                sin/cos countdown; transformer.py 191-197, positional_encodings.py 200-243)
    "alibi"     logit_h(t, s) += m_h (-|t - s| + 1/2 [s < t]), after the 1 / sqrt(d) (transformer.py
                201-205; positional_encodings.py 330-355: symmetric, the keys before t half a step nearer);
                m_h = 2^(-8 (h + 1) / n) for n heads a power of 2, else interleaved (306-327)
    "relative"  Transformer-XL: logit_h(t, s) = ((q_t + u_h) . k_s + (q_t + v_h) . (W_r P_rel(t - s))_h)
                / sqrt(d), P_rel(p) = [sin(p w), cos(p w)] over the h d = E attention width, w_j =
                10000^(-2j / (h d)), p = t - s of either sign (``causal=False``: the encoder passes
                ``causal_masking``, 187-188 and 304; positional_encodings.py 246-303, its shift 119-156
                and 190-197 picks R[t - s]); u, v [h, d] ~ N(0, 0.02) (not cut) and W_r [h d, h d] hk.Linear
                without bias are learned per layer: 5 (64 * 64 + 2 * 64) = 21,120 parameters more at the
                defaults

Only "sin_cos" reads L: the other four see offsets t - s or positions counted from the row's start, so the
tail padding moves nothing. The angles and biases are computed in float64 and cast to the model's dtype (the
authors' rotary angles are float32: a difference below float32's rounding).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

ENCODINGS = ("none", "sin_cos", "alibi", "relative", "rotary")  # PositionalEncodings (positional_encodings.py 29-35)


def haiku_init_(linear, std=None):
    """hk.Linear's initialisation in place: weights N(0, std) cut at +-2 std (std 1 / sqrt(fan_in) by
    default; haiku basic.py, Linear.__call__), bias zero."""
    std = 1.0 / math.sqrt(linear.in_features) if std is None else std
    nn.init.trunc_normal_(linear.weight, std=std, a=-2.0 * std, b=2.0 * std)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)
    return linear


def sin_cos(pos, E, max_time=10_000):
    """[..., E] float64: position values pos [...] (float64) as [sin(pos w), cos(pos w)], w_j = max_time^(-2j / E)
    (positional_encodings.py 99-100 and 112-116)."""
    w = max_time ** (-torch.arange(0, E, 2, dtype=torch.float64, device=pos.device) / E)  # [E / 2]
    angle = pos[..., None] * w  # [..., E / 2]
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)  # [..., E]


def sinusoid(L, T, E, max_time=10_000):
    """P [B, T, E] float64: row b's position t as value L[b] - t (positional_encodings.py 99-116, causal)."""
    pos = L.to(torch.float64)[:, None] - torch.arange(T, dtype=torch.float64, device=L.device)  # [B, T]
    return sin_cos(pos, E, max_time)  # [B, T, E]


def rotary(x, max_time=10_000):
    """RoPE of x [B, T, h, d] at positions t = 0 .. T - 1: the pair (x_2j, x_2j+1) turned by t theta_j,
    theta_j = max_time^(-j / (d / 2)) (``apply_rotary_encoding``, positional_encodings.py 200-225; its kernel
    228-243 makes x_rot = (-x_2j+1, x_2j) pair by pair). Called at transformer.py 191-197 without max_time (so
    always 10,000 there; ours passes the layer's, 10,000 by default)."""
    _, T, _, d = x.shape
    if d % 2:
        raise ValueError(f"rotary positions need an even head width, not {d}")
    theta = max_time ** (-torch.arange(d // 2, dtype=torch.float64, device=x.device) / (d // 2))  # [d / 2]
    angle = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * theta  # [T, d / 2]
    angle = angle.repeat_interleave(2, dim=-1)[:, None, :]  # [T, 1, d]  theta_0, theta_0, theta_1, ...
    x_rot = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).reshape(x.shape)  # [B, T, h, d]
    return x * torch.cos(angle).to(x.dtype) + x_rot * torch.sin(angle).to(x.dtype)  # [B, T, h, d]


def alibi_slopes(n):
    """m [n]: ALiBi's slopes (``_get_alibi_slopes``, positional_encodings.py 306-327, the official ALiBi code's):
    2^(-8 (i + 1) / n) for n a power of 2; else those of the power of 2 c below n, then every other one of
    2c's, the first n - c of them."""
    def power_of_2(c):
        return [2.0 ** (-8.0 * (i + 1) / c) for i in range(c)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    c = 2 ** math.floor(math.log2(n))
    return power_of_2(c) + alibi_slopes(2 * c)[0::2][:n - c]


def alibi(T, n, device=None):
    """[n, T, T] float64: m_h (-|t - s| + 1/2 [s < t]) (``compute_alibi_encodings_biases``, positional_encodings.py
    350-355: both triangles of the distance, the lower one lifted by 0.5 to tell left from right)."""
    t = torch.arange(T, dtype=torch.float64, device=device)  # [T]
    off = t[:, None] - t[None, :]  # [T, T]  t - s
    bias = -off.abs() + 0.5 * (off > 0)  # [T, T]
    m = torch.tensor(alibi_slopes(n), dtype=torch.float64, device=device)  # [n]
    return m[:, None, None] * bias  # [n, T, T]


class EncoderLayer(nn.Module):
    """h [B, T, E], keys [B, T] bool (True: a position to attend to) -> [B, T, E]: one block of 293-317."""

    def __init__(self, E=64, num_heads=8, widening_factor=4, dropout_prob=0.1, positional_encodings="sin_cos",
                 max_time=10_000):
        super().__init__()
        self.heads, self.d = num_heads, E // num_heads  # ``num_hiddens_per_head`` (72-73)
        self.pe, self.max_time = positional_encodings, max_time
        hid = self.heads * self.d
        self.q = haiku_init_(nn.Linear(E, hid, bias=False))  # W_q [h d, E]  (173)
        self.k = haiku_init_(nn.Linear(E, hid, bias=False))  # W_k [h d, E]  (174)
        self.v = haiku_init_(nn.Linear(E, hid, bias=False))  # W_v [h d, E]  (175)
        self.o = haiku_init_(nn.Linear(hid, E, bias=False))  # W_o [E, h d]  (222)
        if positional_encodings == "relative":  # relpos_contentbias, hk.Linear, relpos_relativebias (269-294)
            self.content_bias = nn.Parameter(nn.init.normal_(torch.empty(self.heads, self.d), std=0.02))  # u [h, d]
            self.rel = haiku_init_(nn.Linear(2 * len(range(0, hid, 2)), hid, bias=False))  # W_r [h d, h d]
            self.relative_bias = nn.Parameter(nn.init.normal_(torch.empty(self.heads, self.d), std=0.02))  # v [h, d]
        self.norm1 = nn.LayerNorm(E, eps=1e-5)  # hk.LayerNorm(axis=-1, scale, offset), eps 1e-5 (76-77)
        self.ff1 = haiku_init_(nn.Linear(E, widening_factor * E))  # W_1 [4E, E], b_1 [4E]  (311-312)
        self.ff2 = haiku_init_(nn.Linear(widening_factor * E, E))  # W_2 [E, 4E], b_2 [E]  (314)
        self.norm2 = nn.LayerNorm(E, eps=1e-5)
        self.drop = nn.Dropout(dropout_prob)

    def relative_logits(self, q, k):  # q, k [B, T, h, d]: Transformer-XL's (positional_encodings.py 246-303)
        T = q.shape[1]
        content = torch.einsum("bthd,bshd->bhts", q + self.content_bias, k)  # [B, h, T, T]  (273)
        p = torch.arange(T - 1, -T, -1, dtype=torch.float64, device=q.device)  # [2T - 1]  offsets T - 1 .. 1 - T
        r = self.rel(sin_cos(p, self.rel.in_features, self.max_time).to(q.dtype))  # [2T - 1, h d]  (275-286)
        r = r.view(2 * T - 1, self.heads, self.d)  # [2T - 1, h, d]  (287-288)
        rel = torch.einsum("bthd,rhd->bhtr", q + self.relative_bias, r)  # [B, h, T, 2T - 1]  (295-296)
        t = torch.arange(T, device=q.device)  # [T]
        at = (T - 1 - t[:, None] + t[None, :]).expand(*rel.shape[:2], T, T)  # [B, h, T, T]  p[at] = t - s (299-301)
        return content + rel.gather(-1, at)  # [B, h, T, T]  (303)

    def attention(self, h, keys):  # h [B, T, E], keys [B, T]
        B, T, _ = h.shape
        q = self.q(h).view(B, T, self.heads, self.d)  # [B, T, h, d]
        k = self.k(h).view(B, T, self.heads, self.d)  # [B, T, h, d]
        v = self.v(h).view(B, T, self.heads, self.d)  # [B, T, h, d]
        if self.pe == "rotary":  # (191-197)
            q, k = rotary(q, self.max_time), rotary(k, self.max_time)  # [B, T, h, d] each
        if self.pe == "relative":  # (184-189)
            logits = self.relative_logits(q, k) / math.sqrt(self.d)  # [B, h, T, T]  (199)
        else:
            logits = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(self.d)  # [B, h, T, T]  (198-199)
        if self.pe == "alibi":  # after the scaling (201-205)
            logits = logits + alibi(T, self.heads, h.device).to(logits.dtype)  # [B, h, T, T]
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
    (225-318) with padding masked; each row's length L is its count of keys (the padding is its tail).
    ``positional_encodings``: one of ENCODINGS (the module's docstring)."""

    def __init__(self, D, embedding_dim=64, num_layers=5, num_heads=8, widening_factor=4, dropout_prob=0.1,
                 max_time=10_000, positional_encodings="sin_cos"):
        super().__init__()
        if positional_encodings not in ENCODINGS:
            raise ValueError(f"positional_encodings: one of {', '.join(ENCODINGS)}, not {positional_encodings!r}")
        self.H, self.max_time = embedding_dim, max_time  # H: the width the head reads (models_ref/models/chomsky.py)
        self.pe = positional_encodings
        self.embed = haiku_init_(nn.Linear(D, embedding_dim, bias=False), std=0.02)  # W_emb [E, D] (253-257)
        self.drop = nn.Dropout(dropout_prob)  # used by "sin_cos" only (281-283)
        self.layers = nn.ModuleList(EncoderLayer(embedding_dim, num_heads, widening_factor, dropout_prob,
                                                 positional_encodings, max_time) for _ in range(num_layers))

    def forward(self, x, keys):  # x [B, T, D], keys [B, T]
        E = self.H
        h = self.embed(x) * math.sqrt(E)  # [B, T, E]  (255-259)
        if self.pe == "sin_cos":
            L = keys.sum(dim=1)  # [B]  the row's length: its input and empty tokens
            pos = sinusoid(L, x.shape[1], E, self.max_time)  # [B, T, E] float64, as their numpy table
            h = self.drop(h + pos.to(h.dtype))  # [B, T, E]  (280-281)
        for layer in self.layers:
            h = layer(h, keys)  # [B, T, E]
        return h  # [B, T, E]
