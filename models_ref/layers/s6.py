"""S6: Mamba's selective SSM block (Gu, Dao 2023, section 3 and Algorithm 2; docs/models.md "S6").

Shapes: b batch, L positions, H the model's width, EH = expand * H inner channels, N states,
R = dt_rank = ceil(H / 16). Per position t, as state-spaces/mamba mamba_simple.py ``Mamba``:

    x, z = u W_in                                      in_proj H -> 2 EH (no bias)
    x = SiLU(conv(x))                                  causal depthwise conv, d_conv taps per channel
    Delta = softplus(W_Delta (x W_R) + b_Delta)        s_Delta: low rank R, then EH
    B = x W_B,  C = x W_C                              s_B, s_C: [N] per position (input-dependent)
    Abar = exp(Delta A),  Bbar x = Delta B x           A = -exp(A_log) [EH, N], A_log = log(1..N) (S4D-real)
    h_t = Abar_t h_{t-1} + Bbar_t x_t,  y_t = C_t h_t + D x_t,   out = (y * SiLU(z)) W_out

``gate=False``: Mamba Table 1's "No gate" architecture, the block without z and its SiLU(z) product
(x = u W_in, W_in [EH, H]; out = y W_out), built-in ``s6-nogate`` (docs/models.md "No gate").

``signed``: Abar = 2 exp(Delta A) - 1, in (-1, 1] (Grazzi et al. 2025, automl/unlocking_state_tracking
mamba_mod.py ``PositiveNegativeMambaBlock``); Bbar unchanged. The recurrence is selective_scan.py's
``SelectiveScan``: a position at a time, its states kept for the backward pass up to 256 MiB and
recomputed by chunks of Q positions past that, no logarithm or division, so negative Abar scans as
positive. Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import register, short_conv
from longsynth.models_ref.layers.selective_scan import SelectiveScan, transition


class S6(nn.Module):
    """One Mamba block on u [b, L, H] -> [b, L, H] (causal; ``chunk``: the scan's Q, None: about 16M
    numbers a chunk tensor).

    ``lr``: learning rate of A_log and D (None: the model's; 0: frozen), without weight decay
    (the official ``_no_weight_decay``); the Linear and conv weights train as the model's.
    """

    def __init__(self, H, N=16, *, expand=2, d_conv=4, dt_rank=None, dt_min=1e-3, dt_max=1e-1, signed=False,
                 lr=None, chunk=None, gate=True):
        super().__init__()
        EH, R = expand * H, dt_rank or math.ceil(H / 16)
        self.N, self.R, self.signed, self.chunk, self.gate = N, R, signed, chunk, gate
        self.in_proj = nn.Linear(H, (2 if gate else 1) * EH, bias=False)  # W_in [2EH, H] ([EH, H] without z)
        self.conv1d = nn.Conv1d(EH, EH, d_conv, groups=EH, padding=d_conv - 1)  # [EH, 1, d_conv] + [EH]
        self.x_proj = nn.Linear(EH, R + 2 * N, bias=False)  # W_R, W_B, W_C [R + 2N, EH]
        self.dt_proj = nn.Linear(R, EH)  # W_Delta [EH, R], b_Delta [EH]
        nn.init.uniform_(self.dt_proj.weight, -R ** -0.5, R ** -0.5)
        dt = torch.exp(torch.rand(EH) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))  # [EH]
        dt = dt.clamp(min=1e-4)  # [EH]  the official dt_init_floor
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # [EH]  softplus(b_Delta) = dt
        A = torch.arange(1, N + 1, dtype=torch.float32).expand(EH, N)  # [EH, N]  S4D-real: A_n = -n
        register(self, "A_log", torch.log(A).contiguous(), lr)  # [EH, N]
        register(self, "D", torch.ones(EH), lr)  # [EH]
        self.out_proj = nn.Linear(EH, H, bias=False)  # W_out [H, EH]

    def transition(self, Delta):
        """Abar [b, L, EH, N] of Delta [b, L, EH]: exp(Delta A) in (0, 1], or 2 exp(Delta A) - 1 in (-1, 1]
        if ``signed`` (the scan's own ``transition``)."""
        return transition(Delta, -torch.exp(self.A_log), self.signed)  # [b, L, EH, N]

    def forward(self, u):
        xz = self.in_proj(u)  # [b, L, 2EH] ([b, L, EH] without the gate)
        x, z = xz.chunk(2, dim=-1) if self.gate else (xz, None)  # [b, L, EH], [b, L, EH]
        x = F.silu(short_conv(self.conv1d, x))  # [b, L, EH]  taps t-d_conv+1..t
        dt, B, C = self.x_proj(x).split([self.R, self.N, self.N], dim=-1)  # [b, L, R], [b, L, N], [b, L, N]
        with torch.autocast(u.device.type, enabled=False):  # the scan in full precision
            x, B, C = x.to(self.D.dtype), B.to(self.D.dtype), C.to(self.D.dtype)  # as above
            Delta = F.softplus(F.linear(dt.to(x.dtype), self.dt_proj.weight.to(x.dtype),
                                        self.dt_proj.bias.to(x.dtype)))  # [b, L, EH]
            A = -torch.exp(self.A_log)  # [EH, N]
            y = SelectiveScan.apply(Delta, x, B, C, A, self.signed, self.chunk) + self.D * x  # [b, L, EH]  C h + D x
        y = y.to(xz.dtype) * F.silu(z) if self.gate else y.to(xz.dtype)  # [b, L, EH]  (Table 1's "No gate": y)
        return self.out_proj(y)  # [b, L, H]
