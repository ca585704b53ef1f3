"""Mamba Table 1's "No gate" architecture around S4D (Gu, Dao 2023, Table 1 and section 3.4; docs/models.md "No gate").

Table 1 crosses three architectures (No gate, H3, Mamba) with three inner layers (S4, S6, Hyena). The
Mamba block (state-spaces/mamba mamba_simple.py ``Mamba``, l. 62-117 and 169-191) is

    x, z = u W_in;  x = SiLU(conv_K(x));  y = SSM(x);  out = (y * SiLU(z)) W_out

and "No gate" drops its multiplicative branch z: out = SSM(SiLU(conv_K(u W_in))) W_out. With S6 as the
SSM it is ``S6(gate=False)`` (s6.py); here the SSM is S4D's (s4d.py), linear and time-invariant:

    x = SiLU(conv_K(u W_in))          W_in [EH, H] no bias; conv depthwise, K taps, with bias (as Mamba's)
    y = K_S4D * x + D x               per channel of EH: S4D's Vandermonde kernel, FFT of size 2L, D learned
    out = y W_out                     W_out [H, EH] no bias

S4D keeps its own choices (init, Delta range, D ~ N(0, 1), SSM parameters at ``lr``) but not its GELU or
output Linear: the block's W_out takes their place, as Mamba's after its SSM. Only torch is imported here.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import fft_conv, short_conv
from longsynth.models_ref.layers.s4d import S4D


class S4DNoGate(nn.Module):
    """The "No gate" block with S4D inside, on u [b, L, H] -> [b, L, H] (causal)."""

    def __init__(self, H, N=64, *, expand=2, d_conv=4, init="legs", dt_min=1e-3, dt_max=1e-1, lr=None, chunk=None):
        super().__init__()
        EH = expand * H
        self.in_proj = nn.Linear(H, EH, bias=False)  # W_in [EH, H]
        self.conv1d = nn.Conv1d(EH, EH, d_conv, groups=EH, padding=d_conv - 1)  # [EH, 1, K] + [EH]
        self.ssm = S4D(EH, N, init=init, dt_min=dt_min, dt_max=dt_max, lr=lr, chunk=chunk)  # kernel and D [EH]
        del self.ssm.out  # S4D's output Linear: the block's W_out replaces it
        self.out_proj = nn.Linear(EH, H, bias=False)  # W_out [H, EH]

    def forward(self, u):
        L = u.shape[1]
        x = self.in_proj(u)  # [b, L, EH]
        x = F.silu(short_conv(self.conv1d, x)).transpose(1, 2)  # [b, EH, L]  taps t-K+1..t
        with torch.autocast(u.device.type, enabled=False):  # kernel and FFT in full precision
            x = x.to(self.ssm.D.dtype)  # [b, EH, L]
            y = fft_conv(x, self.ssm.real_kernel(L)) + self.ssm.D[:, None] * x  # [b, EH, L]  K * x + D x
        return self.out_proj(y.transpose(1, 2).to(u.dtype))  # [b, L, H]
