"""The S4D of H3's Table 1: safari's standalone S4D layer as the sequence mixer of its ``lm_simple`` model
(docs/models.md, "H3's Table 1 models"), for the LanguageModel of models_ref/models/zoology.py
(``sequence_mixer="s4d"``).

HazyResearch/safari @ 02220c6: configs/experiment/synthetics/{induction_head,associative_recall}/s4d.yaml
(``/model/layer: s4d``, ``transposed: False``), configs/model/layer/s4d.yaml (d_state 64, lr min(1e-3, lr)) and
src/models/sequence/ssm/s4d.py, whose defaults set the rest: ``S4DKernel`` with ``scaling="inverse"``,
``n_ssm=1`` (one A shared by every channel), ``channels=1``, dt in [1e-3, 1e-1]; ``S4D`` with a GELU and a
plain ``Linear(H, H)`` after it (``postact=None``: no gate), dropout 0. Per channel h of H, N/2 modes n:

    w_n = -exp(log_w_real_n) + i w_imag_n            shared by the channels (n_ssm 1; s4d.py 135-141)
    init: log_w_real_n = log(1/2 + 1e-4), w_imag_n = N/pi (N/(2n + 1) - 1)   S4D-Inv (random_dplr, 71-96)
    C'_hn = conj(C_hn B_n), C ~ CN(0, 2), B ~ CN(0, 2) / sqrt(2 sum_n |B_n / w_n|^2)   B folded in (238-246, 126)
    K_h[l] = 2 Re sum_n C'_hn (exp(dt_h w_n) - 1) / w_n exp(dt_h w_n l)   zero-order hold (143-164)
    y = GELU(K * u + D u),  out = y W + b                                   (327-362; FFT of size 2L)

log_dt, log_w_real and w_imag take their own lr (``ssm_lr``) and no weight decay (s4d.py 127-132, 189-203);
C and D are plain parameters (the model's weight decay applies). Only torch is imported here.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import fft_conv, register


def s4d_inverse(N):
    """(w [N/2] complex, B [N/2] complex): safari's ``random_dplr(N, H=1, scaling="inverse")`` (s4d.py 71-96)."""
    n = torch.arange(N // 2, dtype=torch.float)  # [N/2]
    w = torch.complex(torch.full_like(n, -0.5), N / math.pi * (N / (1 + 2 * n) - 1))  # [N/2]
    B = torch.randn(N // 2, dtype=torch.cfloat)  # [N/2]  CN(0, 1): variance 1/2 per part (torch's randn)
    zeta = 2 * ((-B / w).abs() ** 2).sum()  # the kernel's variance with a random C (s4d.py 92-93)
    return w, B / zeta.sqrt()  # [N/2], [N/2]


class SafariS4D(nn.Module):
    """u [b, L, H] -> [b, L, H]: the S4D above; ``ssm_lr`` the lr of log_dt and A (None: the model's)."""

    def __init__(self, H, N=64, ssm_lr=None, dt_min=1e-3, dt_max=1e-1):
        super().__init__()
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # [H]
        w, B = s4d_inverse(N)  # [N/2], [N/2]
        C = torch.randn(H, N // 2, dtype=torch.cfloat) * B  # [H, N/2]  B folded into C (s4d.py 246)
        self.C = nn.Parameter(torch.view_as_real(C.conj().resolve_conj()))  # [H, N/2, 2]  stored conjugated (126)
        register(self, "log_dt", log_dt, ssm_lr)  # [H]
        register(self, "log_w_real", torch.log(-w.real + 1e-4)[None], ssm_lr)  # [1, N/2]  one A for every channel
        register(self, "w_imag", w.imag[None].clone(), ssm_lr)  # [1, N/2]
        self.D = nn.Parameter(torch.randn(H))  # [H]  (s4d.py 304: channels 1)
        self.output_linear = nn.Linear(H, H)  # W [H, H] + b [H]  LinearActivation, postact None (318-324)

    def kernel(self, L):
        """K [H, L] (s4d.py 143-164)."""
        dt = torch.exp(self.log_dt)  # [H]
        w = torch.complex(-torch.exp(self.log_w_real), self.w_imag)  # [1, N/2]
        dtA = w * dt[:, None]  # [H, N/2]
        C = torch.view_as_complex(self.C) * (torch.exp(dtA) - 1.0) / w  # [H, N/2]  C' (exp(dt w) - 1) / w
        powers = torch.exp(dtA[..., None] * torch.arange(L, device=dt.device))  # [H, N/2, L]
        return 2 * torch.einsum("hn,hnl->hl", C, powers).real  # [H, L]

    def forward(self, u):  # u [b, L, H]
        L = u.shape[1]
        with torch.autocast(u.device.type, enabled=False):  # kernel and FFT in full precision
            x = u.to(torch.promote_types(u.dtype, torch.float32)).transpose(1, 2)  # [b, H, L]  bf16 has no FFT
            y = fft_conv(x, self.kernel(L)) + self.D[:, None] * x  # [b, H, L]  K * u + D u (s4d.py 346-353)
        y = F.gelu(y.transpose(1, 2).to(u.dtype))  # [b, L, H]  nn.GELU, exact (s4d.py 39, 358)
        return self.output_linear(y)  # [b, L, H]
