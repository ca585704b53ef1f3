"""zoology's gated-convolution sequence mixers of its MQAR Figure 2: BaseConv, Hyena, H3 (docs/models.md
"zoology's mixers"), for the LanguageModel of models_ref/models/zoology.py (its ``sequence_mixer``).

HazyResearch/zoology @ d88d6f5, read side by side; "configs.py" is
``experiments/paper_configs/iclr24_zoology_figure2/configs.py``. Every module maps u [b, L, D] -> [b, L, D];
names follow zoology's so that its state_dict loads into ours (H3's kernels: ``shift.`` for its
``ssm_k_kernel.kernel.``, ``diag.`` for ``kernel.kernel.``). Long convolutions are FFTs of size 2L
(zoology's ``rfft(k, n) / n`` with ``irfft(.., norm="forward")`` is the same product). zoology's
``_optim`` hints are not kept: its train.py gives every parameter to AdamW at one lr (train.py 185-189),
as the harness does for a model that ``decays_every_parameter``; safari's train.py keeps them, and its H3 (H3's
Table 1) is this H3 with head_dim 1 and ``ssm_lr``: the kernels' log_dt, A and B at their own lr, no weight decay.

- BaseConv (mixers/base_conv.py 13-63; configs.py 74-81: kernel_size [3, -1, 3, -1] indexed by the layer):
  y = conv(u) * (u W + b) + u, conv a short depthwise Conv1d of 3 taps (convolution.py 32-62) or, for -1,
  the implicit long convolution k * u + u, k = MLP(z_t) of a 3-feature time embedding (convolution.py
  112-200: Linear(3, 16), ReLU, Linear(16, D); z frozen).
- Hyena (mixers/hyena.py 216-358; configs.py 62-67, defaults otherwise): x1, x2, v = conv_3(u W_in + b);
  v = (h * (v x1) + bias v) x2; out = v W_out + b_out; the filter h_t = Filter(z_t) exp(-t |delta|)
  (hyena.py 64-213: z the trainable time embedding, 3 Linear + Sin(freq), Linear(64, D) without bias).
- H3 (mixers/h3/h3.py 16-184; configs.py 82-89: d_state = l_max, head_dim 2): q, k, v = u W + b;
  k = K_shift * k + D_k k (ss_kernel_shift.py: K_shift[j] = sum_n B_n C_{n+j}, B = e_0, both trained);
  kv_{d1 d2} = k_{h d1} v_{h d2} per head h of head_dim; y = K_diag * kv + D kv (S4D-Lin, bilinear:
  ss_kernel.py 37-119, ss_kernel_diag.py 41-201, dplr.py 13-65); out_{(d2 h)} = sum_d1 q_{h d1} y_{d1 d2 h};
  then output_linear.
Only torch is imported here.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import fft_conv

BASE_CONV_KERNELS = (3, -1, 3, -1)  # configs.py 79: a kernel size per layer, -1 the implicit long convolution


def long_conv(u, k):
    """k * u along L, causal: u [b, D, L], k [D, L], at float32 or above (autocast off: bf16 has no FFT)."""
    dtype = torch.promote_types(k.dtype, torch.float32)
    with torch.autocast(u.device.type, enabled=False):
        return fft_conv(u.to(dtype), k.to(dtype))  # [b, D, L]


def time_embedding(l_max):
    """z [1, l_max, 3] = (t, Re, Im of exp(-i 1e-4 2 pi j / l_max)), t = linspace(0, 1): one band, as both
    zoology's PositionalEmbedding (convolution.py 112-133, hyena.py 64-86) compute it for emb_dim 3."""
    t = torch.linspace(0, 1, l_max)[None, :, None]  # [1, l_max, 1]
    w = 2 * math.pi * torch.linspace(0, l_max - 1, l_max)[None, :, None] / l_max  # [1, l_max, 1]
    z = torch.exp(-1j * torch.linspace(1e-4, 0, 1)[None, None] * w)  # [1, l_max, 1]  bands = (3 - 1) // 2 = 1
    return torch.cat([t, z.real, z.imag], dim=-1), t  # [1, l_max, 3], [1, l_max, 1]


class ShortConv(nn.Module):
    """zoology's ShortConvolution (convolution.py 32-62): depthwise Conv1d with bias, the first L outputs."""

    def __init__(self, D, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(D, D, kernel_size, groups=D, padding=kernel_size - 1)  # [D, 1, k] + [D]

    def forward(self, u):  # u [b, L, D]
        return self.conv(u.transpose(1, 2))[..., :u.shape[1]].transpose(1, 2)  # [b, L, D]


class ImplicitLongConv(nn.Module):
    """zoology's ImplicitLongConvolution (convolution.py 135-200): y = k * u + u, k [D, L] = MLP(z)."""

    def __init__(self, D, l_max, d_hidden=16):
        super().__init__()
        self.pos_emb = nn.Module()
        self.pos_emb.z = nn.Parameter(time_embedding(l_max)[0], requires_grad=False)  # [1, l_max, 3]
        self.mlp = nn.Sequential(nn.Linear(3, d_hidden), nn.ReLU(), nn.Linear(d_hidden, D))

    def filter(self, L):
        return self.mlp(self.pos_emb.z[:, :L])[0].T  # [D, L]

    def forward(self, u):  # u [b, L, D]
        x = u.transpose(1, 2)  # [b, D, L]
        y = long_conv(x, self.filter(u.shape[1])) + x  # [b, D, L]  fft_conv's "out = y + u" (convolution.py 23)
        return y.transpose(1, 2).to(u.dtype)  # [b, L, D]


class BaseConv(nn.Module):
    """y = conv(u) * (u W + b) + u (base_conv.py 50-63; use_act off)."""

    def __init__(self, D, l_max, kernel_size=3):
        super().__init__()
        self.projection = nn.Linear(D, D)  # W [D, D] + b [D]
        self.conv = ImplicitLongConv(D, l_max) if kernel_size == -1 else ShortConv(D, kernel_size)

    def forward(self, u):  # u [b, L, D]
        return self.conv(u) * self.projection(u) + u  # [b, L, D]


class Sin(nn.Module):
    """sin(freq x), freq [1, order] trained from w = 1 (hyena.py 51-61); one instance serves the whole MLP."""

    def __init__(self, order, w=1.0):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, order))  # [1, order]

    def forward(self, x):
        return torch.sin(self.freq * x)


class HyenaFilter(nn.Module):
    """Filter (hyena.py 114-213) at its defaults: h_t = MLP(z_t) exp(-t |delta|), and its bias [D]."""

    def __init__(self, D, l_max, order=64, num_inner_mlps=2, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(D))  # [D]  hyena.py 153
        self.pos_emb = nn.Module()
        z, t = time_embedding(l_max)
        self.pos_emb.z = nn.Parameter(z)  # [1, l_max, 3]  trained (its lr_pos_emb hint is not zoology's optimizer's)
        self.pos_emb.register_buffer("t", t)  # [1, l_max, 1]
        act = Sin(order)
        layers = [nn.Linear(3, order), act]
        for _ in range(num_inner_mlps):
            layers += [nn.Linear(order, order), act]
        self.implicit_filter = nn.Sequential(*layers, nn.Linear(order, D, bias=False))
        self.modulation = nn.Module()
        deltas = torch.linspace(math.log(target) / slow_decay_pct, math.log(target) / fast_decay_pct, D)
        self.modulation.register_buffer("deltas", deltas[None, None])  # [1, 1, D]  modulation_lr 0: a buffer

    def filter(self, L):
        h = self.implicit_filter(self.pos_emb.z[:, :L])  # [1, L, D]
        return (h * torch.exp(-self.pos_emb.t[:, :L] * self.modulation.deltas.abs()))[0].T  # [D, L]


class Hyena(nn.Module):
    """The Hyena operator of order 2, one head, one block (hyena.py 216-358)."""

    def __init__(self, D, l_max, filter_order=64, short_filter_order=3):
        super().__init__()
        self.D, self.l_max = D, l_max
        self.in_proj = nn.Linear(D, 3 * D)  # [3D, D] + [3D]
        self.out_proj = nn.Linear(D, D)  # [D, D] + [D]
        self.short_filter = nn.Conv1d(3 * D, 3 * D, short_filter_order, groups=3 * D,
                                      padding=short_filter_order - 1)  # [3D, 1, 3] + [3D]
        self.filter_fn = HyenaFilter(D, l_max, order=filter_order)

    def forward(self, u):  # u [b, L, D]
        L = u.shape[1]
        if L > self.l_max:
            raise ValueError(f"hyena: {L} positions, its filter has {self.l_max}")
        uc = self.short_filter(self.in_proj(u).transpose(1, 2))[..., :L]  # [b, 3D, L]
        x1, x2, v = uc.split(self.D, dim=1)  # [b, D, L] each
        v = v * x1  # [b, D, L]  pre-gating
        v = long_conv(v, self.filter_fn.filter(L)) + v * self.filter_fn.bias[:, None]  # [b, D, L]  h * v + bias v
        return self.out_proj((v * x2).transpose(1, 2))  # [b, L, D]  post-gating


class ShiftSSM(nn.Module):
    """H3's shift SSM (ss_kernel_shift.py 18-58): K[j] = sum_n B_n C_{n+j}, j < min(N, L), zero beyond."""

    def __init__(self, D, N):
        super().__init__()
        B = torch.zeros(D, N)
        B[:, 0] = 1.0
        self.B = nn.Parameter(B)  # [D, N]  e_0 (ss_kernel.py 122-123)
        C = torch.empty(D, 1, N)
        nn.init.kaiming_uniform_(C, a=math.sqrt(5))  # ss_kernel.py 125-127: U(-N^-1/2, N^-1/2)
        self.C = nn.Parameter(C.transpose(0, 1).contiguous())  # [1, D, N]

    def kernel(self, L):
        N = self.B.shape[-1]
        B_f = torch.fft.rfft(self.B, n=2 * N)  # [D, N+1]
        C_f = torch.fft.rfft(self.C[0], n=2 * N)  # [D, N+1]
        K = torch.fft.irfft(B_f.conj() * C_f, n=2 * N)[..., :min(N, L)]  # [D, min(N, L)]  correlation of B and C
        return F.pad(K, (0, L - K.shape[-1]))  # [D, L]


class DiagSSM(nn.Module):
    """H3's S4D kernel (ss_kernel_diag.py 41-201 at measure "diag-lin", disc "bilinear"): per channel h,
    A_n = -exp(inv_A_real_n) + i A_imag_n (init -1/2 + i pi n), Abar = (1 + dt A/2) / (1 - dt A/2),
    K[l] = 2 Re sum_n C_n B_n dt / (1 - dt A_n/2) Abar_n^l, n < N/2."""

    def __init__(self, H, N, dt_min=1e-3, dt_max=1e-1):
        super().__init__()
        self.log_dt = nn.Parameter(torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))  # [H]
        self.C = nn.Parameter(torch.view_as_real(torch.randn(1, H, N // 2, dtype=torch.cfloat)))  # [1, H, N/2, 2]
        self.B = nn.Parameter(torch.view_as_real(torch.ones(H, N // 2, dtype=torch.cfloat)))  # [H, N/2, 2]
        self.inv_A_real = nn.Parameter(torch.full((H, N // 2), math.log(0.5)))  # [H, N/2]
        self.A_imag = nn.Parameter(math.pi * torch.arange(N // 2, dtype=torch.float).expand(H, -1).clone())  # [H, N/2]

    def kernel(self, L):
        dt = torch.exp(self.log_dt)[:, None]  # [H, 1]
        A = torch.complex(-torch.exp(self.inv_A_real), self.A_imag)  # [H, N/2]
        CB = torch.view_as_complex(self.C[0].contiguous()) * torch.view_as_complex(self.B.contiguous())  # [H, N/2]
        dtA = A * dt  # [H, N/2]
        CB = CB * (1.0 - dtA / 2).reciprocal() * dt  # [H, N/2]  C Bbar
        log_Abar = ((1.0 + dtA / 2) / (1.0 - dtA / 2)).log()  # [H, N/2]
        powers = torch.exp(log_Abar[..., None] * torch.arange(L, device=dt.device).to(log_Abar))  # [H, N/2, L]
        return 2 * torch.einsum("hn,hnl->hl", CB, powers).real  # [H, L]


class H3(nn.Module):
    """H3 (h3.py 16-184) with its kernels at length min(L, l_max)."""

    def __init__(self, D, l_max, d_state=None, head_dim=2, ssm_lr=None):
        super().__init__()
        if D % head_dim:
            raise ValueError(f"h3: head_dim {head_dim} must divide d_model {D}")
        N = d_state or l_max
        self.head_dim, self.H, self.l_max = head_dim, D // head_dim, l_max
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)  # [D, D] + [D]
        self.shift = ShiftSSM(D, N)
        self.ssm_k_D = nn.Parameter(torch.randn(D))  # [D]
        self.diag = DiagSSM(self.H, N)
        self.D = nn.Parameter(torch.randn(self.H))  # [H]
        self.output_linear = nn.Linear(D, D)  # [D, D] + [D]
        if ssm_lr is not None:  # safari's: SSKernel's lr (h3.py 67-70; ss_kernel_diag.py 83-86, ss_kernel_shift.py 33)
            for p in (self.shift.B, self.diag.log_dt, self.diag.B, self.diag.inv_A_real, self.diag.A_imag):
                p._optim = {"lr": ssm_lr, "weight_decay": 0.0}  # src/utils/train.py 145-156

    def forward(self, u):  # u [b, L, D]
        b, L, D = u.shape
        L_k = L if self.l_max is None else min(L, self.l_max)
        q, k, v = (proj(u).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj))  # [b, D, L] each
        k = long_conv(k, F.pad(self.shift.kernel(L_k), (0, L - L_k))) + self.ssm_k_D[:, None] * k  # [b, D, L]
        hd = self.head_dim
        k = k.unflatten(1, (self.H, hd))[:, :, :, None]  # [b, H, d1, 1, L]
        v = v.unflatten(1, (self.H, hd))[:, :, None]  # [b, H, 1, d2, L]
        kv = (k * v).flatten(1, 3)  # [b, H d1 d2, L]
        K = F.pad(self.diag.kernel(L_k), (0, L - L_k)).repeat_interleave(hd * hd, 0)  # [H d1 d2, L]
        y = long_conv(kv, K) + kv * self.D.repeat_interleave(hd * hd)[:, None]  # [b, H d1 d2, L]
        y = (y.unflatten(1, (self.H, hd, hd)) * q.unflatten(1, (self.H, hd))[:, :, :, None]).sum(2)  # [b, H, d2, L]
        y = y.transpose(1, 2).reshape(b, D, L)  # [b, D, L]  channel d2 H + h ('b d h l -> b (d h) l')
        return self.output_linear(y.transpose(1, 2).to(u.dtype))  # [b, L, D]


def make_mixer(cfg, layer_idx):
    """The mixer ``cfg.sequence_mixer`` of a ZoologyConfig for one layer: Figure 2's (configs.py 62-89) or
    safari's S4D (safari_s4d.py)."""
    name, D, l_max = cfg.sequence_mixer, cfg.d_model, cfg.l_max
    if name == "base-conv":
        return BaseConv(D, l_max, kernel_size=BASE_CONV_KERNELS[layer_idx])
    if name == "hyena":
        return Hyena(D, l_max)
    if name == "h3":
        return H3(D, l_max, d_state=cfg.d_state or l_max, head_dim=cfg.head_dim, ssm_lr=cfg.ssm_lr)
    if name == "s4d":
        from longsynth.models_ref.models.safari_s4d import SafariS4D

        return SafariS4D(D, N=cfg.d_state or l_max, ssm_lr=cfg.ssm_lr)
    raise ValueError(f"sequence_mixer: one of attention, base-conv, hyena, h3, s4d, got {name!r}")
