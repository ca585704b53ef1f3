"""S4D: the diagonal S4 layer (Gu, Goel, Gupta, Re 2022; docs/models.md "S4D").

Per channel h, a diagonal SSM of state size N kept as N/2 complex conjugate pairs:

    x'(t) = A_h x(t) + B_h u(t),   y(t) = C_h x(t),   A_h = diag(A_hn), Re A_hn < 0,

zero-order hold with step Delta_h:  Abar = exp(Delta A),  Bbar = (exp(Delta A) - 1) / A * B,
and the Vandermonde kernel (the conjugate half doubles the real part):

    K_h[k] = 2 Re sum_{n < N/2} C_hn Bbar_hn exp(Delta_h A_hn k).

Initialisation ``init``: "legs" (S4D-LegS: A_n the eigenvalues of the normal part of
HiPPO-LegS, -1/2 + i w_n, and B = V^* B_legs with Im B clipped to [-2, 2], a trained
parameter, as state-spaces/s4 models/s4/s4.py ``ssm`` lines 530-537 for ``init: legs``) or
"lin" (S4D-Lin: A_n = -1/2 + i pi n, B = 1 fixed, as its standalone models/s4/s4d.py);
C ~ N(0, 1) complex (variance 1/2 per part), log Delta ~ U[log dt_min, log dt_max]. The
kernel is formed as DSS_exp's, over position chunks k = cC + j: a batched matmul
[H, L/C, N/2] @ [H, N/2, C], never an [H, N, L] tensor (the FFT convolution, kernel
length and layer around it are in kernel.py). Only torch is imported here.
"""
import math

import torch

from longsynth.models_ref.layers.kernel import SSMLayer, exp_range

INITS = ("legs", "lin")


def s4d_init(N, init):
    """A [N/2] complex of S4D-LegS or S4D-Lin (float64)."""
    if init == "lin":
        return torch.complex(torch.full((N // 2,), -0.5, dtype=torch.float64),
                             math.pi * torch.arange(N // 2, dtype=torch.float64))  # [N/2]
    from longsynth.models_ref.layers.s4 import legs_nplr

    return legs_nplr(N)[0]  # [N/2]  eigenvalues of the normal part of HiPPO-LegS


class S4D(SSMLayer):
    """One S4D layer on u [B, L, H] -> [B, L, H]: conv, skip D u, GELU, output Linear (kernel.py).

    ``N``: the real state size (N/2 conjugate pairs are stored). ``lr``: learning rate of
    log_dt, A, B and C (None: the model's; 0: frozen); B is HiPPO's for "legs", 1 for "lin".
    """

    def __init__(self, H, N, *, init="legs", bidirectional=False, max_kernel_length=None, dt_min=1e-3,
                 dt_max=1e-1, lr=None, chunk=None, skip="learned", glu=False):
        super().__init__(H, bidirectional=bidirectional, max_kernel_length=max_kernel_length, skip=skip, glu=glu)
        if init not in INITS:
            raise ValueError(f"init: must be one of {INITS}, got {init!r}")
        if N < 2 or N % 2:
            raise ValueError(f"N: S4D keeps N/2 conjugate pairs, N must be even and >= 2, got {N}")
        self.N, self.chunk = N, chunk
        H_k = 2 * H if bidirectional else H  # a second kernel runs right to left
        A = s4d_init(N, init).to(torch.complex64).expand(H_k, -1)  # [H_k, N/2]
        log_dt = torch.rand(H_k) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # [H_k]
        self.register("log_dt", log_dt, lr)  # [H_k]
        self.register("A_log_neg_re", torch.log(-A.real).clone(), lr)  # [H_k, N/2]  log(-Re A)
        self.register("A_im", A.imag.clone(), lr)  # [H_k, N/2]
        self.register("C", torch.randn(H_k, N // 2, 2) * math.sqrt(0.5), lr)  # [H_k, N/2, 2]  Re C, Im C
        if init == "legs":
            from longsynth.models_ref.layers.s4 import B_CLIP, legs_nplr

            B = legs_nplr(N)[2]  # [N/2]  V^* B_legs
            B = torch.complex(B.real, B.imag.clamp(-B_CLIP, B_CLIP)).to(torch.complex64)  # [N/2]
            self.register("B", torch.view_as_real(B).expand(H_k, -1, -1).clone(), lr)  # [H_k, N/2, 2]
        else:
            self.B = None  # B = 1

    def _factors(self, L):
        """M [H_k, L/C, N/2] = 2 C Bbar exp(Delta A cC) and T [H_k, N/2, C] = exp(Delta A j)."""
        C_len = self.chunk or min(L, 1 << math.ceil(math.log2(math.sqrt(L))))
        n_chunks = -(-L // C_len)
        dt = torch.exp(self.log_dt)  # [H_k]
        A_re = -torch.exp(self.A_log_neg_re)  # [H_k, N/2]
        dtA_re, dtA_im = dt[:, None] * A_re, dt[:, None] * self.A_im  # [H_k, N/2], [H_k, N/2]
        T = exp_range(dtA_re, dtA_im, C_len)  # [H_k, N/2, C]  Abar^j
        P = exp_range(dtA_re, dtA_im, n_chunks, C_len)  # [H_k, N/2, L/C]  Abar^{cC}
        A = torch.complex(A_re, self.A_im).to(T.dtype)  # [H_k, N/2]
        C = torch.view_as_complex(self.C.contiguous()).to(T.dtype)  # [H_k, N/2]
        CB = C if self.B is None else C * torch.view_as_complex(self.B.contiguous()).to(T.dtype)  # [H_k, N/2]
        CBbar = 2 * CB * torch.expm1(torch.complex(dtA_re, dtA_im).to(T.dtype)) / A  # [H_k, N/2]  2 C Bbar
        M = (CBbar[..., None] * P).transpose(1, 2)  # [H_k, L/C, N/2]
        return M, T

    def real_part_kernel(self, L):
        """K [H_k, L] = Re(M T) as one real bmm [Re M, -Im M] @ [Re T; Im T]."""
        M, T = self._factors(L)
        M2 = torch.cat((M.real, -M.imag), dim=-1)  # [H_k, L/C, N]
        T2 = torch.cat((T.real, T.imag), dim=1)  # [H_k, N, C]
        K = torch.bmm(M2, T2)  # [H_k, L/C, C]
        return K.reshape(K.shape[0], -1)[:, :L]  # [H_k, L]

    def complex_kernel(self, L):
        """The Vandermonde product M T as complex [H_k, L] (its real part is the kernel)."""
        M, T = self._factors(L)
        K = torch.bmm(M, T)  # [H_k, L/C, C]
        return K.reshape(K.shape[0], -1)[:, :L]  # [H_k, L]
