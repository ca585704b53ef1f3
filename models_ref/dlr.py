"""DLR: diagonal linear RNN layer (Gupta, Mehta, Berant 2022, section 2; MODELS.md).

    x_k = diag(Lambda) x_{k-1} + 1 u_k,   y_k = Re <W, x_k>   (per coordinate h)

computed as a causal convolution y = K * u with K_h[k] = sum_n W_hn Lambda_n^k.

Kernel without an [H, N, L] tensor: write k = c*C + j (chunk c of C positions, offset j):
    K_h[cC + j] = sum_n (W_hn Lambda_n^{cC}) Lambda_n^j,
one complex matmul [H, L/C, N] @ [N, C]: memory O(N*C + H*L) for C >= N, and exact
(both power tables come from exp(k log Lambda) with the phase k*Lambda_im reduced
mod 2 pi in float64, so no error accumulates with k). Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _powers(log_re, im, k):
    """Lambda^k = exp(k (log_re + i im)) for Lambda [N] and positions k [K] -> [N, K]."""
    k = k.to(torch.float64)  # [K]
    mag = log_re.to(torch.float64)[:, None] * k  # [N, K]
    phase = torch.remainder(im.to(torch.float64)[:, None] * k, 2 * math.pi)  # [N, K]
    return torch.exp(torch.complex(mag, phase).to(_complex(log_re.dtype)))  # [N, K]


def _complex(dtype):
    return torch.complex128 if dtype == torch.float64 else torch.complex64


def fft_conv(u, K, bidirectional):
    """y = K * u along the last axis by FFT of size 2L: u [B, H, L], K [H, L] or [2H, L] -> [B, H, L]."""
    B, H, L = u.shape
    if bidirectional:  # circulant [K_fwd_0..K_fwd_{L-1}, K_bwd_{L-1}..K_bwd_0] (appendix A.1)
        K = torch.cat((K[:H], K[H:].flip(-1)), dim=-1)  # [H, 2L]
    K_f = torch.fft.rfft(K, n=2 * L)  # [H, L+1]
    u_f = torch.fft.rfft(u, n=2 * L)  # [B, H, L+1]
    return torch.fft.irfft(u_f * K_f, n=2 * L)[..., :L]  # [B, H, L]


class DLR(nn.Module):
    """One DLR layer on u [B, L, H] -> [B, L, H]: conv, residual, GELU, Linear(H, H)."""

    def __init__(self, H, N, *, kernel="real", bidirectional=False, max_kernel_length=None,
                 dt_min=5e-4, dt_max=5e-1, lr=None, chunk=None):
        super().__init__()
        if kernel not in ("real", "prod"):
            raise ValueError(f"kernel: must be 'real' or 'prod', got {kernel!r}")
        self.H, self.N, self.kernel, self.bidirectional = H, N, kernel, bidirectional
        self.max_kernel_length, self.chunk = max_kernel_length, chunk
        dt = torch.exp(torch.rand(N) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))  # [N]
        self.Lambda_re_sqrt = nn.Parameter(torch.sqrt(dt / 2))  # [N]  p, |Lambda| = exp(-p^2)
        self.Lambda_im = nn.Parameter(2 * math.pi * torch.arange(N, dtype=torch.float32) / N)  # [N]
        H_k = 2 * H if bidirectional else H
        self.W = nn.Parameter(torch.randn(H_k, N, 2) / N)  # [H_k, N, 2]  Re, Im ~ N(0, 1/N^2)
        for p in (self.Lambda_re_sqrt, self.Lambda_im, self.W):
            p._optim = {"weight_decay": 0.0} if lr is None else {"weight_decay": 0.0, "lr": lr}
        self.out = nn.Linear(H, H)

    def kernel_length(self, L):
        return L if self.max_kernel_length is None else min(L, self.max_kernel_length)

    def complex_kernel(self, L):
        """K [H_k, L] complex: K_h[k] = sum_n W_hn Lambda_n^k, chunked over positions."""
        N = self.N
        C = self.chunk or min(L, max(N, 1 << math.ceil(math.log2(math.sqrt(L)))))
        n_chunks = -(-L // C)
        log_re = -self.Lambda_re_sqrt ** 2  # [N]  Re log Lambda
        dev = log_re.device
        T = _powers(log_re, self.Lambda_im, torch.arange(C, device=dev))  # [N, C]  Lambda^j
        A = _powers(log_re, self.Lambda_im, torch.arange(n_chunks, device=dev) * C)  # [N, n_chunks]  Lambda^{cC}
        W = torch.view_as_complex(self.W.contiguous()).to(T.dtype)  # [H_k, N]
        M = W[:, None, :] * A.transpose(0, 1)[None]  # [H_k, n_chunks, N]
        K = torch.matmul(M, T)  # [H_k, n_chunks, C]
        return K.reshape(K.shape[0], n_chunks * C)[:, :L]  # [H_k, L]

    def real_kernel(self, L):
        """K [H_k, L] real: Re K, or Re K * Im K for kernel='prod'; zero beyond max_kernel_length."""
        K = self.complex_kernel(self.kernel_length(L))  # [H_k, L_k]
        K = K.real * K.imag if self.kernel == "prod" else K.real  # [H_k, L_k]
        return F.pad(K, (0, L - K.shape[-1]))  # [H_k, L]

    def forward(self, u):
        B, L, H = u.shape
        with torch.autocast(u.device.type, enabled=False):  # kernel and FFT in full precision
            x = u.to(self.W.dtype).transpose(1, 2)  # [B, H, L]
            K = self.real_kernel(L)  # [H_k, L]
            y = fft_conv(x, K, self.bidirectional) + x  # [B, H, L]  conv + residual
        y = F.gelu(y.transpose(1, 2).to(u.dtype))  # [B, L, H]
        return self.out(y)  # [B, L, H]
