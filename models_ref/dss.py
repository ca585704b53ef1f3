"""DSS_exp: discretised diagonal state space layer (Gupta, Gu, Berant 2022; MODELS.md).

    dx/dt = diag(Lambda) x + 1 u,  y = Re <W, x>,  zero-order hold with step dt_h:
    K_h[k] = Re( sum_n W_hn (exp(dt_h Lambda_n) - 1) / Lambda_n * exp(dt_h Lambda_n k) )

dt depends on h, so the powers form an [H, N, L] family; it is never materialised.
Write k = c*C + j with C ~ sqrt(L):
    K_h[cC + j] = sum_n (coef_hn exp(dt_h Lambda_n cC)) exp(dt_h Lambda_n j),
a batched matmul [H, L/C, N] @ [H, N, C]: memory O(H*N*sqrt(L) + H*L). Exponents are
formed in float64 with the phase reduced mod 2 pi, so the powers are exact to rounding.
Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _exp_times(re, im, k):
    """exp(k (re + i im)) for rates re, im [H, N] and positions k [K] -> [H, N, K]."""
    k = k.to(torch.float64)  # [K]
    mag = re.to(torch.float64)[..., None] * k  # [H, N, K]
    phase = torch.remainder(im.to(torch.float64)[..., None] * k, 2 * math.pi)  # [H, N, K]
    ctype = torch.complex128 if re.dtype == torch.float64 else torch.complex64
    return torch.exp(torch.complex(mag, phase).to(ctype))  # [H, N, K]


def fft_conv(u, K):
    """Causal y = K * u along the last axis by FFT of size 2L: u [B, H, L], K [H, L] -> [B, H, L]."""
    L = u.shape[-1]
    K_f = torch.fft.rfft(K, n=2 * L)  # [H, L+1]
    u_f = torch.fft.rfft(u, n=2 * L)  # [B, H, L+1]
    return torch.fft.irfft(u_f * K_f, n=2 * L)[..., :L]  # [B, H, L]


class DSSExp(nn.Module):
    """One DSS_exp layer on u [B, L, H] -> [B, L, H]: conv, residual, GELU, Linear(H, H)."""

    def __init__(self, H, N, *, max_kernel_length=None, dt_min=1e-4, dt_max=1e-1, lr=None, chunk=None):
        super().__init__()
        self.H, self.N, self.max_kernel_length, self.chunk = H, N, max_kernel_length, chunk
        self.log_dt = nn.Parameter(torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))  # [H]
        self.Lambda_log_neg_re = nn.Parameter(torch.full((N,), math.log(0.5)))  # [N]  log(-Re Lambda)
        self.Lambda_im = nn.Parameter(math.pi * torch.arange(N, dtype=torch.float32))  # [N]
        self.W = nn.Parameter(torch.randn(H, N, 2))  # [H, N, 2]  Re W, Im W ~ N(0, 1) (DSS paper 3.3)
        for p in (self.log_dt, self.Lambda_log_neg_re, self.Lambda_im, self.W):
            p._optim = {"weight_decay": 0.0} if lr is None else {"weight_decay": 0.0, "lr": lr}
        self.out = nn.Linear(H, H)

    def kernel_length(self, L):
        return L if self.max_kernel_length is None else min(L, self.max_kernel_length)

    def complex_kernel(self, L):
        """sum_n W_hn (exp(dt_h Lambda_n) - 1) / Lambda_n exp(dt_h Lambda_n k) -> [H, L] complex."""
        C = self.chunk or min(L, 1 << math.ceil(math.log2(math.sqrt(L))))
        n_chunks = -(-L // C)
        dt = torch.exp(self.log_dt)  # [H]
        re = -torch.exp(self.Lambda_log_neg_re)  # [N]  Re Lambda < 0
        dt_re = dt[:, None] * re[None]  # [H, N]
        dt_im = dt[:, None] * self.Lambda_im[None]  # [H, N]
        dev = dt.device
        T = _exp_times(dt_re, dt_im, torch.arange(C, device=dev))  # [H, N, C]  exp(dt Lambda j)
        A = _exp_times(dt_re, dt_im, torch.arange(n_chunks, device=dev) * C)  # [H, N, n_chunks]
        Lam = torch.complex(re, self.Lambda_im).to(T.dtype)  # [N]
        dtLam = torch.complex(dt_re, dt_im).to(T.dtype)  # [H, N]
        W = torch.view_as_complex(self.W.contiguous()).to(T.dtype)  # [H, N]
        coef = W * torch.expm1(dtLam) / Lam  # [H, N]
        M = (coef[..., None] * A).transpose(1, 2)  # [H, n_chunks, N]
        K = torch.bmm(M, T)  # [H, n_chunks, C]
        return K.reshape(self.H, n_chunks * C)[:, :L]  # [H, L]

    def real_kernel(self, L):
        K = self.complex_kernel(self.kernel_length(L)).real  # [H, L_k]
        return F.pad(K, (0, L - K.shape[-1]))  # [H, L]

    def forward(self, u):
        B, L, H = u.shape
        with torch.autocast(u.device.type, enabled=False):  # kernel and FFT in full precision
            x = u.to(self.W.dtype).transpose(1, 2)  # [B, H, L]
            y = fft_conv(x, self.real_kernel(L)) + x  # [B, H, L]  conv + residual
        y = F.gelu(y.transpose(1, 2).to(u.dtype))  # [B, L, H]
        return self.out(y)  # [B, L, H]
