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
mamba_mod.py ``PositiveNegativeMambaBlock``); Bbar unchanged. The recurrence is ``scan``: chunks of Q
positions, no logarithm or division, so negative Abar scans as positive. Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import register


def scan(a, bx, reverse=False, chunk=None):
    """h_t = a_t h_{t-1} + bx_t from h = 0 (``reverse``: h_t = a_t h_{t+1} + bx_t) on [b, L, ...].

    Two levels over n chunks of Q positions (no autograd; ``Scan`` is the differentiable form):
    every chunk at once from 0 -> its end state e and the product p of its a; a loop over the
    chunks -> the state s entering each; every chunk at once again from s; then the L - nQ
    positions left over one by one. 2Q + n + (L - nQ) steps, no padding copy.
    """
    L = a.shape[1]
    Q = min(chunk or math.ceil(math.sqrt(L)), L)
    n = L // Q
    body = slice(L - n * Q, L) if reverse else slice(0, n * Q)  # the chunks; the rest (< Q) after them
    ac, xc = a[:, body].unflatten(1, (n, Q)), bx[:, body].unflatten(1, (n, Q))  # [b, n, Q, ...] views
    h = torch.empty_like(bx)  # [b, L, ...]
    hc = h[:, body].unflatten(1, (n, Q))  # [b, n, Q, ...] view of h
    steps = range(Q - 1, -1, -1) if reverse else range(Q)
    e, p = xc[:, :, steps[0]].clone(), ac[:, :, steps[0]].clone()  # [b, n, ...], [b, n, ...]
    for j in steps[1:]:
        torch.addcmul(xc[:, :, j], ac[:, :, j], e, out=e)  # [b, n, ...]  local state from 0
        p.mul_(ac[:, :, j])  # [b, n, ...]  prod of the chunk's a
    s, state = torch.empty_like(e), torch.zeros_like(e[:, 0])  # [b, n, ...], [b, ...]
    for c in (range(n - 1, -1, -1) if reverse else range(n)):
        s[:, c] = state  # [b, ...]  the state entering chunk c
        state = torch.addcmul(e[:, c], p[:, c], state)  # [b, ...]
    for j in steps:
        s = torch.addcmul(xc[:, :, j], ac[:, :, j], s, out=hc[:, :, j])  # [b, n, ...]
    for t in (range(L - n * Q - 1, -1, -1) if reverse else range(n * Q, L)):
        state = torch.addcmul(bx[:, t], a[:, t], state, out=h[:, t])  # [b, ...]
    return h  # [b, L, ...]


class Scan(torch.autograd.Function):
    """``scan`` with its gradient, the same scan right to left: g_t = dh_t + a_{t+1} g_{t+1},
    d bx_t = g_t, d a_t = g_t h_{t-1}. Saves a and h only."""

    @staticmethod
    def forward(ctx, a, bx, chunk=None):
        h = scan(a, bx, chunk=chunk)  # [b, L, EH, N]
        ctx.save_for_backward(a, h)
        ctx.chunk = chunk
        return h

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dh):
        a, h = ctx.saved_tensors
        a_next = torch.cat((a[:, 1:], torch.ones_like(a[:, :1])), 1)  # [b, L, EH, N]  a_{t+1}
        g = scan(a_next, dh, reverse=True, chunk=ctx.chunk)  # [b, L, EH, N]
        da = torch.empty_like(h)  # [b, L, EH, N]
        da[:, 0] = 0  # h_{-1} = 0
        torch.mul(g[:, 1:], h[:, :-1], out=da[:, 1:])  # [b, L-1, EH, N]
        return da, g, None


class S6(nn.Module):
    """One Mamba block on u [b, L, H] -> [b, L, H] (causal; ``chunk``: the scan's Q).

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
        """Abar [b, L, EH, N] of Delta [b, L, EH]: exp(Delta A), or 2 exp(Delta A) - 1 if ``signed``."""
        A = -torch.exp(self.A_log)  # [EH, N]
        Abar = torch.exp(Delta[..., None] * A)  # [b, L, EH, N]  in (0, 1]
        return 2 * Abar - 1 if self.signed else Abar  # [b, L, EH, N]  signed: in (-1, 1]

    def forward(self, u):
        L = u.shape[1]
        xz = self.in_proj(u)  # [b, L, 2EH] ([b, L, EH] without the gate)
        x, z = xz.chunk(2, dim=-1) if self.gate else (xz, None)  # [b, L, EH], [b, L, EH]
        x = F.silu(self.conv1d(x.transpose(1, 2))[..., :L].transpose(1, 2))  # [b, L, EH]  taps t-d_conv+1..t
        dt, B, C = self.x_proj(x).split([self.R, self.N, self.N], dim=-1)  # [b, L, R], [b, L, N], [b, L, N]
        with torch.autocast(u.device.type, enabled=False):  # the scan in full precision
            x, B, C = x.to(self.D.dtype), B.to(self.D.dtype), C.to(self.D.dtype)  # as above
            Delta = F.softplus(F.linear(dt.to(x.dtype), self.dt_proj.weight.to(x.dtype),
                                        self.dt_proj.bias.to(x.dtype)))  # [b, L, EH]
            Abar = self.transition(Delta)  # [b, L, EH, N]
            Bx = torch.matmul((Delta * x)[..., None], B[:, :, None, :])  # [b, L, EH, N]  Bbar x = Delta B x (outer)
            h = Scan.apply(Abar, Bx, self.chunk)  # [b, L, EH, N]
            y = torch.matmul(h, C[..., None])[..., 0] + self.D * x  # [b, L, EH]  C h + D x
        y = y.to(xz.dtype) * F.silu(z) if self.gate else y.to(xz.dtype)  # [b, L, EH]  (Table 1's "No gate": y)
        return self.out_proj(y)  # [b, L, H]
