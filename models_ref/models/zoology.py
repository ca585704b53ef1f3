"""zoology-attention: the exact model of zoology's MQAR Figure 2 attention runs (docs/models.md).

HazyResearch/zoology @ d88d6f5, ``iclr24_zoology_figure2/configs.py`` lines 54-61 and 138-146:
two ``TransformerBlock``s of width D (the grid 64..512), one-head ``MHA`` with dropout 0.1, the
state mixer ``torch.nn.Identity``, learned positions up to the input length, V 8192. With
``config.py`` 101-110's defaults (embed_dropout 0.1, resid_dropout 0, drop_path 0, eps 1e-5) and
``model.py`` (citations below), token ids x [B, T] -> logits [B, T, V]:

    e_0 = E[x] + P[0..T-1]                                   TokenEmbeddings (model.py 108-124)
    block i (model.py 205-215):  r = drop_i(h) + r   (r = drop_0(e_0) at i = 0; drop_0 p 0.1, else 0)
                                 r = MHA(LN1(r)) + r,  h = LN2(r)             (Identity state mixer)
    logits = LN_f(h + r) E^T                                 LMBackbone 247-255, tied lm_head 306-313
    MHA (mixers/attention.py 8-68): Q, K, V = LN1(r) W_qkv + b;  A = softmax(Q K^T / sqrt(d) + M),
    M = -10000 above the diagonal, dropout(A) (p 0.1) while training;  out = (A V) W_o + b_o

So the normalised h = LN2(r) of a block is added to the residual r again by the next block (and
by LN_f's input): the quirk of zoology's prenorm stream with an Identity state mixer, kept. Init
(model.py 127-182): every Linear and Embedding N(0, 0.02), biases 0, W_o N(0, 0.02 / sqrt(2 n_layers)),
LayerNorms (1, 0). At this commit ``LanguageModel.forward`` returns the hidden states unless
``return_embeddings=False`` (model.py 315-321); the figure's runs are the lm_head path, which this is.

The same LanguageModel with Figure 2's gated convolutions as ``sequence_mixer`` ("base-conv", "hyena",
"h3": models_ref/models/zoology_mixers.py) is the built-ins ``base-conv``, ``hyena``, ``h3``: no position table
(configs.py 142: ``max_position_embeddings=0`` but for attention, model.py 69-74, 117), the mixers' l_max
the input length (configs.py 65, 71, 76, 85), every Linear inside the mixers initialised as above too
(model.py 144-150 apply to every module; Hyena's ``out_proj`` is the depth-scaled one, 172-177).

``state_mixer="mlp"`` is the transformer of Akyürek et al.'s RegBench (berlino/seq_icl @ 9b9223d, the built-in
``seq-icl-transformer``): their ``SimpleLMHeadModel`` (src/models/sequence/simple_lm.py 505-545) is the same safari
LanguageModel, with flash-attn's prenorm ``Block`` (258-340) whose second mixer is ``Mlp`` (236-256; ``create_mlp_cls``
383-390: d_inner hidden units, GELU with the tanh approximation) where zoology's figure has Identity:

    block i (simple_lm.py 314-337):  r = drop_i(h) + r,  r = MHA(LN1(r)) + r,  h = fc2(gelu_tanh(fc1(LN2(r))))

so no normalised h is added twice. The rest is the model above, line for line: ``GPT2Embeddings`` (195-234: E[x] +
P[t], positions 0..T-1 from their ``position_id`` encoder), ``MHA``/``SelfAttention`` (102-193, 26-100: Wqkv and
out_proj with biases, scale 1/sqrt(head_dim), -10000 above the diagonal, dropout on A), block 0's dropout1 the
embed_dropout and every other dropout resid_dropout (``LMBackbone`` 463-475), LayerNorms of eps
``layer_norm_epsilon`` 1e-5 (``create_block`` 407, ln_f 475), ``_init_weights`` (415-444, applied by the backbone
and again by the head, 477-478 and 533-534: the same law) with ``out_proj.weight`` and ``fc2.weight`` (exact names,
module by module) N(0, 0.02 / sqrt(2 n_layers)), lm_head ``Linear(D, V, bias=False)`` tied to E after init (530,
535-538). Their ``configs/experiment/dfa/transformer.yaml``: d_model 128, n_layer 8, d_inner 512, attn_cfg
num_heads 2 and dropout 0.1, embed_dropout 0.1, resid_dropout 0, max_position_embeddings ``__l_max`` =
input_seq_len + 2 = 4098 (configs/dataset/icl_dfa.yaml), vocab_size 20. Their optimizer is
``AdamW(self.parameters(), weight_decay=0.1)`` whole: no ``optimizer_param_grouping`` in the DFA configs
(train.py 756-786 only splits parameters that carry ``_optim``, which none of these does), hence
``decays_every_parameter`` here too.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.errors import LongsynthError
from longsynth.models_ref.models.zoology_mixers import make_mixer

MIXERS = ("attention", "base-conv", "hyena", "h3", "s4d")  # s4d: safari's, H3 Table 1's (safari_s4d.py)
STATE_MIXERS = ("identity", "mlp")  # zoology's Figure 2 (Identity); seq_icl's transformer (Mlp, simple_lm.py 236-256)


@dataclass
class ZoologyConfig:
    vocab_size: int  # V, zoology's vocab_size (the logits' width: the head is tied to E)
    max_position_embeddings: int  # rows of P: the input length for attention, 0 (none) for the others (configs.py 142)
    d_model: int = 64  # D
    n_layers: int = 2
    num_heads: int = 1  # configs.py 59
    attn_dropout: float = 0.1  # MHA dropout on A (configs.py 58)
    embed_dropout: float = 0.1  # config.py 107: block 0's dropout1
    resid_dropout: float = 0.0  # config.py 106: the other dropouts
    layer_norm_epsilon: float = 1e-5  # config.py 109 (ln_f's; norm1 and norm2 keep LayerNorm's 1e-5)
    sequence_mixer: str = "attention"  # MIXERS: MHA, or Figure 2's BaseConv, Hyena, H3 (configs.py 54-89)
    l_max: int = 0  # the mixers' l_max: the input length (configs.py 65, 71, 76, 85); attention: unused
    state_mixer: str = "identity"  # STATE_MIXERS: zoology's Identity, or seq_icl's Mlp (simple_lm.py 236-256)
    d_inner: int | None = None  # the Mlp's hidden width; None: 4 d_model (simple_lm.py 383-386)
    head_dim: int = 2  # h3's: zoology's Figure 2 (configs.py 87); safari's Table 1 runs have 1 (layer/h3.yaml 3)
    d_state: int | None = None  # h3's and s4d's N; None: l_max (zoology configs.py 85-86); safari's 64
    ssm_lr: float | None = None  # safari's _optim: the SSM kernels' lr, no weight decay; None: one group (zoology)
    layer: str = "zoology-attention"  # what trainer.load_model rebuilds: zoology's LanguageModel, any mixer

    def __post_init__(self):
        if self.sequence_mixer not in MIXERS:
            raise LongsynthError(f"sequence_mixer: must be one of {MIXERS}, got {self.sequence_mixer!r}")
        if self.state_mixer not in STATE_MIXERS:
            raise LongsynthError(f"state_mixer: must be one of {STATE_MIXERS}, got {self.state_mixer!r}")
        if self.d_inner is not None and self.d_inner < 1:
            raise LongsynthError(f"d_inner: must be >= 1, got {self.d_inner}")
        attention = self.sequence_mixer == "attention"
        for name in ("vocab_size", "d_model", "n_layers", "num_heads") + (
                ("max_position_embeddings",) if attention else ("l_max",)):
            if getattr(self, name) < 1:
                raise LongsynthError(f"{name}: must be >= 1, got {getattr(self, name)}")
        if self.max_position_embeddings < 0:
            raise LongsynthError(f"max_position_embeddings: must be >= 0, got {self.max_position_embeddings}")
        if self.sequence_mixer == "base-conv" and self.n_layers > 4:  # base_conv.py 38-41: a kernel size per layer
            raise LongsynthError(f"n_layers: base-conv has kernel sizes for 4 layers, got {self.n_layers}")
        if self.sequence_mixer == "h3" and (self.head_dim < 1 or self.d_model % self.head_dim):
            raise LongsynthError(f"head_dim: must be >= 1 and divide d_model = {self.d_model}, got {self.head_dim}")
        if self.d_state is not None and (self.d_state < 2 or self.d_state % 2):
            raise LongsynthError(f"d_state: N/2 modes are kept, N must be even and >= 2, got {self.d_state}")
        if self.ssm_lr is not None and not 0 < self.ssm_lr < math.inf:
            raise LongsynthError(f"ssm_lr: must be a positive number, got {self.ssm_lr}")
        if self.d_model % self.num_heads:
            raise LongsynthError(f"num_heads: must divide d_model = {self.d_model}, got {self.num_heads}")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)


class MHA(nn.Module):
    """Causal softmax attention, h heads of d = D / h (mixers/attention.py 34-68)."""

    def __init__(self, D, heads, dropout):
        super().__init__()
        self.heads, self.p = heads, dropout
        self.Wqkv = nn.Linear(D, 3 * D)  # [3D, D] + [3D]: Q, K, V, each h heads of d (attention.py 54-56, 63-65)
        self.out_proj = nn.Linear(D, D)  # W_o [D, D] + b_o [D] (attention.py 58)

    def forward(self, u):  # u [B, T, D]
        B, T, D = u.shape
        q, k, v = self.Wqkv(u).view(B, T, 3, self.heads, D // self.heads).unbind(2)  # 3 x [B, T, h, d]
        s = torch.einsum("bthd,bshd->bhts", q, k * (1.0 / math.sqrt(q.shape[-1])))  # [B, h, T, T]  attention.py 22-23
        M = torch.triu(torch.full((T, T), -10000.0, device=u.device), 1)  # [T, T]  attention.py 24-26
        A = torch.softmax(s + M.to(s.dtype), dim=-1, dtype=v.dtype)  # [B, h, T, T]  attention.py 27-28
        A = F.dropout(A, self.p if self.training else 0.0)  # [B, h, T, T]  attention.py 29
        y = torch.einsum("bhts,bshd->bthd", A, v)  # [B, T, h, d]  attention.py 30
        return self.out_proj(y.reshape(B, T, D))  # [B, T, D]


class Mlp(nn.Module):
    """seq_icl's second mixer (simple_lm.py 236-256, 383-390): fc2(gelu_tanh(fc1(u))), both Linears with biases."""

    def __init__(self, D, d_inner):
        super().__init__()
        self.fc1 = nn.Linear(D, d_inner)  # [d_inner, D] + [d_inner]  simple_lm.py 248
        self.fc2 = nn.Linear(d_inner, D)  # [D, d_inner] + [D]  simple_lm.py 250

    def forward(self, u):  # u [B, T, D]
        return self.fc2(F.gelu(self.fc1(u), approximate="tanh"))  # [B, T, D]  simple_lm.py 252-256, 387-388


class Block(nn.Module):
    """zoology's TransformerBlock (model.py 185-215) with the Identity state mixer, or seq_icl's Block (simple_lm.py
    258-340, prenorm) with its Mlp: (h, r) -> (h, r)."""

    def __init__(self, cfg: ZoologyConfig, i):
        super().__init__()
        self.drop1 = nn.Dropout(cfg.embed_dropout if i == 0 else cfg.resid_dropout)  # model.py 198
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)  # model.py 200, 203
        self.mixer = (MHA(cfg.d_model, cfg.num_heads, cfg.attn_dropout) if cfg.sequence_mixer == "attention"
                      else make_mixer(cfg, i))  # model.py 190-193
        self.drop2 = nn.Dropout(cfg.resid_dropout)  # model.py 201 (drop_path 0: StochasticDepth is the identity)
        self.state_mixer = (Mlp(cfg.d_model, cfg.d_inner or 4 * cfg.d_model) if cfg.state_mixer == "mlp"
                            else nn.Identity())  # zoology configs.py 145; seq_icl simple_lm.py 297, 405-406

    def forward(self, h, r):  # h [B, T, D], r [B, T, D] or None
        r = self.drop1(h) if r is None else self.drop1(h) + r  # [B, T, D]  model.py 206-207
        h = self.mixer(self.norm1(r))  # [B, T, D]  model.py 208-209
        r = self.drop2(h) + r  # [B, T, D]  model.py 211-212
        return self.state_mixer(self.norm2(r)), r  # [B, T, D], [B, T, D]  model.py 213-215, simple_lm.py 329-337


class ZoologyAttention(nn.Module):
    """zoology's LanguageModel (model.py 294-321) on a Figure 2 config (``sequence_mixer``): x [B, T] -> [B, T, V]."""

    decays_every_parameter = True  # train.py 185-189: AdamW(model.parameters(), weight_decay): embeddings, norms too

    def __init__(self, cfg: ZoologyConfig):
        super().__init__()
        self.cfg = cfg
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model)  # E [V, D]  model.py 49-52
        if cfg.max_position_embeddings > 0:  # model.py 69-74: none for the convolutions (configs.py 142)
            self.position = nn.Embedding(cfg.max_position_embeddings, cfg.d_model)  # P [T_max, D]
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.drop_f = nn.Dropout(cfg.resid_dropout)  # model.py 243
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_epsilon)  # model.py 244
        for module in self.modules():  # model.py 144-150 (applied twice there, the same law)
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for name, p in self.named_parameters():  # model.py 172-177: "out_proj.weight" (MHA's, Hyena's), "fc2.weight"
            # (the Mlp's: simple_lm.py 431-434), scaled
            if "out_proj.weight" in name or "fc2.weight" in name:
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layers))

    def forward(self, x):  # x [B, T] int64
        T = x.shape[1]
        longest = self.cfg.max_position_embeddings if self.cfg.sequence_mixer == "attention" else self.cfg.l_max
        if T > longest:
            raise ValueError(f"zoology {self.cfg.sequence_mixer}: {T} positions, it has {longest}")
        h = self.word(x)  # [B, T, D]  model.py 114
        if self.cfg.max_position_embeddings > 0:
            h = h + self.position(torch.arange(T, device=x.device))  # [B, T, D]  model.py 117-123
        r = None
        for block in self.blocks:
            h, r = block(h, r)  # [B, T, D], [B, T, D]
        r = self.drop_f(h) + r  # [B, T, D]  model.py 252-253
        return F.linear(self.ln_f(r), self.word.weight)  # [B, T, V]  model.py 254, lm_head tied to E (313)
