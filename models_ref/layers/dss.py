"""DSS_exp: discretised diagonal state space layer (Gupta, Gu, Berant 2022; docs/models.md).

    dx/dt = diag(Lambda) x + 1 u,  y = Re <W, x>,  zero-order hold with step dt_h:
    K_h[k] = Re( sum_n W_hn (exp(dt_h Lambda_n) - 1) / Lambda_n * exp(dt_h Lambda_n k) )

(the FFT convolution, kernel length, real cast and layer around it are in kernel.py).
dt depends on h, so the powers form an [H, N, L] family; it is never materialised.
Write k = c*C + j with C ~ sqrt(L):
    K_h[cC + j] = sum_n (coef_hn exp(dt_h Lambda_n cC)) exp(dt_h Lambda_n j),
a batched matmul [H, L/C, N] @ [H, N, C]: memory O(H*N*sqrt(L) + H*L). Exponents are
formed in float64 with the phase reduced mod 2 pi, so the powers are exact to rounding.
Only torch is imported here.
"""
import math

import torch

from longsynth.models_ref.layers.kernel import SSMLayer, exp_range
from longsynth.models_ref.layers.kernel import fft_conv as _fft_conv

INITS = ("lin", "skew-hippo")


def fft_conv(u, K):
    """Causal y = K * u along the last axis by FFT of size 2L: u [B, H, L], K [H, L] -> [B, H, L]."""
    return _fft_conv(u, K, bidirectional=False)  # [B, H, L]


class DSSExp(SSMLayer):
    """One DSS_exp layer on u [B, L, H] -> [B, L, H]: conv, skip D u, GELU, output Linear (kernel.py).

    ``lr``: learning rate of log_dt, Lambda and W (None: the model's; 0: frozen). ``init``:
    "lin", Lambda_n = -1/2 + i pi n (the DLR paper's Table 1 runs, its README's
    ``Lambda_init='lin'``), or "skew-hippo", the eigenvalues of the skew part of HiPPO-LegS
    with positive imaginary part, less 1/2 (the DSS paper's default, ag1988/dss
    src/models/sequence/ss/standalone/dss.py ``hippo_skew_evals``, lines 199-207 and 268-269),
    which made its LRA figures.
    """

    def __init__(self, H, N, *, init="lin", max_kernel_length=None, dt_min=1e-4, dt_max=1e-1, lr=None, chunk=None,
                 skip="learned", glu=False):
        super().__init__(H, max_kernel_length=max_kernel_length, skip=skip, glu=glu)
        if init not in INITS:
            raise ValueError(f"init: must be one of {INITS}, got {init!r}")
        self.N, self.chunk = N, chunk
        self.register("log_dt", torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min), lr)  # [H]
        if init == "lin":
            Lam = torch.complex(torch.full((N,), -0.5), math.pi * torch.arange(N, dtype=torch.float32))  # [N]
        else:
            from longsynth.models_ref.layers.s4 import legs_nplr

            Lam = legs_nplr(2 * N)[0].to(torch.complex64)  # [N]  -1/2 + i w_n, w_n > 0
        self.register("Lambda_log_neg_re", torch.log(-Lam.real).clone(), lr)  # [N]  log(-Re Lambda)
        self.register("Lambda_im", Lam.imag.clone(), lr)  # [N]
        self.register("W", torch.randn(H, N, 2), lr)  # [H, N, 2]  Re W, Im W ~ N(0, 1) (DSS paper 3.3)

    def _factors(self, L):
        """M [H, L/C, N] = coef_hn exp(dt_h Lambda_n cC) and T [H, N, C] = exp(dt_h Lambda_n j)."""
        C = self.chunk or min(L, 1 << math.ceil(math.log2(math.sqrt(L))))
        n_chunks = -(-L // C)
        dt = torch.exp(self.log_dt)  # [H]
        re = -torch.exp(self.Lambda_log_neg_re)  # [N]  Re Lambda < 0
        dt_re = dt[:, None] * re[None]  # [H, N]
        dt_im = dt[:, None] * self.Lambda_im[None]  # [H, N]
        T = exp_range(dt_re, dt_im, C)  # [H, N, C]  exp(dt Lambda j)
        A = exp_range(dt_re, dt_im, n_chunks, C)  # [H, N, n_chunks]
        Lam = torch.complex(re, self.Lambda_im).to(T.dtype)  # [N]
        dtLam = torch.complex(dt_re, dt_im).to(T.dtype)  # [H, N]
        W = torch.view_as_complex(self.W.contiguous()).to(T.dtype)  # [H, N]
        coef = W * torch.expm1(dtLam) / Lam  # [H, N]
        M = (coef[..., None] * A).transpose(1, 2)  # [H, n_chunks, N]
        return M, T

    def complex_kernel(self, L):
        """sum_n W_hn (exp(dt_h Lambda_n) - 1) / Lambda_n exp(dt_h Lambda_n k) -> [H, L] complex."""
        M, T = self._factors(L)
        K = torch.bmm(M, T)  # [H, n_chunks, C]
        return K.reshape(self.H, -1)[:, :L]  # [H, L]

    def real_part_kernel(self, L):
        """Re K [H, L] as one real bmm, Re(M T) = [Re M, -Im M] @ [Re T; Im T] (half the work)."""
        M, T = self._factors(L)
        M2 = torch.cat((M.real, -M.imag), dim=-1)  # [H, n_chunks, 2N]
        T2 = torch.cat((T.real, T.imag), dim=1)  # [H, 2N, C]
        K = torch.bmm(M2, T2)  # [H, n_chunks, C]
        return K.reshape(self.H, -1)[:, :L]  # [H, L]
