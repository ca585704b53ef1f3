"""DeltaNet: linear attention with the delta rule (Yang, Wang, Zhang, Shen, Kim 2024; docs/models.md "DeltaNet").

As Grazzi et al. run it (automl/unlocking_state_tracking df8f840: xlstm/experiments/main.py 113-121 builds
``fla.models.DeltaNetForCausalLM`` of their flash-linear-attention_mod, "fla/" below). Shapes: b batch, L
positions, H the width, h heads of d = H / h (q, k, v all of width H: expand_k = expand_v = 1). Per head:

    q, k, v = SiLU(conv_K(x W_q)), SiLU(conv_K(x W_k)), SiLU(conv_K(x W_v))   causal depthwise, K = 4, no bias
    q, k = q / ||q||, k / ||k||                                            L2 over d (eps 1e-6)
    beta_t = s sigmoid(x_t w_beta)                                         s = 1: [0, 1];  ``signed``, s = 2: [0, 2]
    S_t = S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T                 S_t [d, d], S_{-1} = 0
    o_t = S_t q_t / sqrt(d)                                                the kernels' scale d^-1/2
    out = concat_h(RMSNorm(o_t)) W_o                                       RMSNorm over d, one weight [d] (eps 1e-6)

The transition I - beta k k^T has eigenvalues 1 (d - 1 times) and 1 - beta: in [0, 1], or [-1, 1] when
signed (Grazzi et al.: parity needs the negative ones). Two forms of the same recurrence: ``recurrent``
(step by step, the twin) and ``chunked`` (the WY / UT transform over chunks of C positions: one triangular
solve per chunk, then a loop over the chunks). Only torch and kernel.py's short convolution are imported here.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.layers.kernel import short_conv


def recurrent(q, k, v, beta):
    """o [b, h, L, d] of the delta rule, position by position (M = S^T [d_k, d_v], fla's layout)."""
    b, h, L, d = q.shape
    M = q.new_zeros(b, h, d, v.shape[-1])  # [b, h, d_k, d_v]
    out = []
    for t in range(L):
        k_t = k[:, :, t]  # [b, h, d_k]
        u = beta[:, :, t, None] * (v[:, :, t] - (k_t[..., None] * M).sum(-2))  # [b, h, d_v]  beta (v - S k)
        M = M + k_t[..., None] * u[..., None, :]  # [b, h, d_k, d_v]  S += u k^T
        out.append((q[:, :, t, :, None] * M).sum(-2))  # [b, h, d_v]  S q
    return torch.stack(out, 2)  # [b, h, L, d_v]


def chunked(q, k, v, beta, C=64):
    """The same o by chunks of C (positions padded to n C with k = v = beta = 0, which changes no output).

    Per chunk, from the state M entering it (T the UT transform, strictly lower part of beta K K^T):
    W = T diag(beta) K, U = T diag(beta) V, T = (I + tril(diag(beta) K K^T, -1))^-1;
    U' = U - W M (the chunk's beta (v - S k)); O = Q M + tril(Q K^T) U';  M <- M + K^T U'.
    """
    b, h, L, d = q.shape
    n = -(-L // C)
    pad = n * C - L
    q, k, v = (F.pad(x, (0, 0, 0, pad)).unflatten(2, (n, C)) for x in (q, k, v))  # [b, h, n, C, d] each
    beta = F.pad(beta, (0, pad)).unflatten(2, (n, C))[..., None]  # [b, h, n, C, 1]
    A = torch.tril((k * beta) @ k.transpose(-1, -2), -1)  # [b, h, n, C, C]  (unit diagonal implied)
    W = torch.linalg.solve_triangular(A, k * beta, upper=False, unitriangular=True)  # [b, h, n, C, d_k]
    U = torch.linalg.solve_triangular(A, v * beta, upper=False, unitriangular=True)  # [b, h, n, C, d_v]
    QK = torch.tril(q @ k.transpose(-1, -2))  # [b, h, n, C, C]  j <= i
    M = q.new_zeros(b, h, d, v.shape[-1])  # [b, h, d_k, d_v]
    out = []
    for c in range(n):
        U_c = U[:, :, c] - W[:, :, c] @ M  # [b, h, C, d_v]
        out.append(q[:, :, c] @ M + QK[:, :, c] @ U_c)  # [b, h, C, d_v]
        M = M + k[:, :, c].transpose(-1, -2) @ U_c  # [b, h, d_k, d_v]
    return torch.stack(out, 2).flatten(2, 3)[:, :, :L]  # [b, h, L, d_v]


def rms_norm(x, weight, eps):
    """fla's RMSNorm (fla/modules/layernorm.py 626-665): x / sqrt(mean(x^2) + eps) * weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class DeltaNet(nn.Module):
    """One DeltaNet layer on x [b, L, H] -> [b, L, H] (causal). ``form``: "chunk" | "recurrent"."""

    def __init__(self, H, heads=4, *, d_conv=4, signed=False, chunk=64, eps=1e-6, form="chunk"):
        super().__init__()
        if H % heads:
            raise ValueError(f"heads: must divide H = {H}, got {heads}")
        if form not in ("chunk", "recurrent"):
            raise ValueError(f"form: 'chunk' or 'recurrent', got {form!r}")
        self.heads, self.scale, self.chunk, self.eps, self.form = heads, 2.0 if signed else 1.0, chunk, eps, form
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(H, H, bias=False) for _ in range(3))  # W_q, W_k, W_v [H, H]
        self.b_proj = nn.Linear(H, heads, bias=False)  # w_beta [h, H]
        self.q_conv1d, self.k_conv1d, self.v_conv1d = (
            nn.Conv1d(H, H, d_conv, groups=H, padding=d_conv - 1, bias=False) for _ in range(3))  # [H, 1, K]
        self.o_norm = nn.Parameter(torch.ones(H // heads))  # [d]  RMSNorm weight
        self.o_proj = nn.Linear(H, H, bias=False)  # W_o [H, H]
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.b_proj, self.o_proj):  # fla delta_net.py 142-149
            nn.init.xavier_uniform_(lin.weight, gain=2 ** -2.5)

    def _conv(self, conv, x):
        return F.silu(short_conv(conv, x))  # [b, L, H]  taps t-K+1..t

    def forward(self, x):
        b, L, H = x.shape
        q = self._conv(self.q_conv1d, self.q_proj(x))  # [b, L, H]
        k = self._conv(self.k_conv1d, self.k_proj(x))  # [b, L, H]
        v = self._conv(self.v_conv1d, self.v_proj(x))  # [b, L, H]
        q, k, v = (z.unflatten(-1, (self.heads, -1)).transpose(1, 2) for z in (q, k, v))  # [b, h, L, d] each
        q = q * torch.rsqrt(q.pow(2).sum(-1, keepdim=True) + 1e-6)  # [b, h, L, d]  fla l2_norm_fn, eps 1e-6
        k = k * torch.rsqrt(k.pow(2).sum(-1, keepdim=True) + 1e-6)  # [b, h, L, d]
        q = q * q.shape[-1] ** -0.5  # [b, h, L, d]  the kernels' scale (naive.py 12, chunk.py 484)
        beta = self.scale * torch.sigmoid(self.b_proj(x)).transpose(1, 2)  # [b, h, L]
        with torch.autocast(x.device.type, enabled=False):  # the recurrence in full precision
            q, k, v, beta = (z.to(self.o_norm.dtype) for z in (q, k, v, beta))
            o = chunked(q, k, v, beta, self.chunk) if self.form == "chunk" else recurrent(q, k, v, beta)  # [b, h, L, d]
            o = rms_norm(o, self.o_norm, self.eps)  # [b, h, L, d]
        o = o.transpose(1, 2).reshape(b, L, H).to(x.dtype)  # [b, L, H]
        return self.o_proj(o)  # [b, L, H]


class SwiGLU(nn.Module):
    """fla's DeltaNetMLP (fla/models/delta_net/modeling_delta_net.py 28-65), the block's second sublayer:
    y = (SiLU(x W_g) * (x W_u)) W_d, width I = 256 ceil(int(8 H / 3) / 256) (hidden_ratio 4), no biases.
    Init (modeling_delta_net.py 156-181): N(0, 0.02), W_d then divided by sqrt(2 n_layers)."""

    def __init__(self, H, n_layers=1, hidden_ratio=4):
        super().__init__()
        inner = int(H * hidden_ratio * 2 / 3)
        inner = 256 * ((inner + 255) // 256)
        self.gate_proj = nn.Linear(H, 2 * inner, bias=False)  # [W_g; W_u] [2I, H]
        self.down_proj = nn.Linear(inner, H, bias=False)  # W_d [H, I]
        nn.init.normal_(self.gate_proj.weight, std=0.02)
        nn.init.normal_(self.down_proj.weight, std=0.02 / (2 * n_layers) ** 0.5)

    def forward(self, x):  # x [b, L, H]
        gate, y = self.gate_proj(x).chunk(2, dim=-1)  # [b, L, I], [b, L, I]
        return self.down_proj(F.silu(gate) * y)  # [b, L, H]
