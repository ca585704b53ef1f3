"""DLR: diagonal linear RNN layer (Gupta, Mehta, Berant 2022, section 2; docs/models.md).

    x_k = diag(Lambda) x_{k-1} + 1 u_k,   y_k = Re <W, x_k>   (per coordinate h)

computed as a convolution y = K * u with K_h[k] = sum_n W_hn Lambda_n^k (the FFT
convolution, kernel length, real cast and layer around it are in kernel.py).

Kernel without an [H, N, L] tensor: write k = c*C + j (chunk c of C positions, offset j):
    K_h[cC + j] = sum_n (W_hn Lambda_n^{cC}) Lambda_n^j,
one complex matmul [H, L/C, N] @ [N, C]: memory O(N*C + H*L) for C >= N, and exact
(both power tables come from exp(k log Lambda) with the phase k*Lambda_im reduced
mod 2 pi in float64, so no error accumulates with k). Only torch is imported here.
"""
import math

import torch

from longsynth.models_ref.layers.kernel import SSMLayer, exp_range, fft_conv  # noqa: F401  (fft_conv re-exported)


class DLR(SSMLayer):
    """One DLR layer on u [B, L, H] -> [B, L, H]: conv, skip D u, GELU, output Linear (kernel.py).

    ``lr``: learning rate of p, Lambda_im and W (None: the model's; 0: frozen).
    """

    def __init__(self, H, N, *, kernel="real", bidirectional=False, max_kernel_length=None,
                 dt_min=5e-4, dt_max=5e-1, lr=None, chunk=None, skip="learned", glu=False):
        super().__init__(H, cast=kernel, bidirectional=bidirectional, max_kernel_length=max_kernel_length, skip=skip,
                         glu=glu)
        self.N, self.kernel, self.chunk = N, kernel, chunk
        dt = torch.exp(torch.rand(N) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))  # [N]
        self.register("Lambda_re_sqrt", torch.sqrt(dt / 2), lr)  # [N]  p, |Lambda| = exp(-p^2)
        self.register("Lambda_im", 2 * math.pi * torch.arange(N, dtype=torch.float32) / N, lr)  # [N]
        H_k = 2 * H if bidirectional else H
        self.register("W", torch.randn(H_k, N, 2) / N, lr)  # [H_k, N, 2]  Re, Im ~ N(0, 1/N^2)

    def _factors(self, L):
        """M [H_k, L/C, N] = W_hn Lambda_n^{cC} and T [N, C] = Lambda_n^j, complex."""
        N = self.N
        C = self.chunk or min(L, max(N, 1 << math.ceil(math.log2(math.sqrt(L)))))
        n_chunks = -(-L // C)
        log_re = -self.Lambda_re_sqrt ** 2  # [N]  Re log Lambda
        T = exp_range(log_re, self.Lambda_im, C)  # [N, C]  Lambda^j
        A = exp_range(log_re, self.Lambda_im, n_chunks, C)  # [N, n_chunks]  Lambda^{cC}
        W = torch.view_as_complex(self.W.contiguous()).to(T.dtype)  # [H_k, N]
        M = W[:, None, :] * A.transpose(0, 1)[None]  # [H_k, n_chunks, N]
        return M, T

    def complex_kernel(self, L):
        """K [H_k, L] complex: K_h[k] = sum_n W_hn Lambda_n^k, chunked over positions."""
        M, T = self._factors(L)
        K = torch.matmul(M, T)  # [H_k, n_chunks, C]
        return K.reshape(K.shape[0], -1)[:, :L]  # [H_k, L]

    def real_part_kernel(self, L):
        """Re K [H_k, L] as one real matmul, Re(M T) = [Re M, -Im M] @ [Re T; Im T]: half the
        multiplications of the complex product (the kernel's cost at N = 1024-2048)."""
        M, T = self._factors(L)
        M2 = torch.cat((M.real, -M.imag), dim=-1)  # [H_k, n_chunks, 2N]
        T2 = torch.cat((T.real, T.imag), dim=0)  # [2N, C]
        K = torch.matmul(M2, T2)  # [H_k, n_chunks, C]
        return K.reshape(K.shape[0], -1)[:, :L]  # [H_k, L]


class DLRReal(SSMLayer):
    """DLR-R (DLR paper section 3.3, Table 2): Lambda_n = exp(-p_n^2) in (0, 1] and W real.

        K_h[k] = sum_n W_hn Lambda_n^k     (real Vandermonde product, chunked as DLR's)

    Same initialisation of p as DLR; W ~ N(0, 1/N^2). The paper proves (its appendix A.4)
    that such kernels cannot shift: a one-hot kernel needs |W| growing as exp(N).
    """

    def __init__(self, H, N, *, bidirectional=False, max_kernel_length=None, dt_min=5e-4, dt_max=5e-1, lr=None,
                 chunk=None, skip="learned", glu=False):
        super().__init__(H, cast="real", bidirectional=bidirectional, max_kernel_length=max_kernel_length, skip=skip,
                         glu=glu)
        self.N, self.chunk = N, chunk
        dt = torch.exp(torch.rand(N) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))  # [N]
        self.register("Lambda_re_sqrt", torch.sqrt(dt / 2), lr)  # [N]  p, Lambda = exp(-p^2)
        H_k = 2 * H if bidirectional else H
        self.register("W", torch.randn(H_k, N) / N, lr)  # [H_k, N]  real

    def real_part_kernel(self, L):
        """K [H_k, L] real: [H_k, L/C, N] @ [N, C] with powers exp(-p^2 k) formed in float64."""
        C = self.chunk or min(L, max(self.N, 1 << math.ceil(math.log2(math.sqrt(L)))))
        n_chunks = -(-L // C)
        log_lam = -self.Lambda_re_sqrt ** 2  # [N]  log Lambda <= 0
        zero = torch.zeros_like(log_lam)  # [N]  no phase
        T = exp_range(log_lam, zero, C).real.to(self.W.dtype)  # [N, C]  Lambda^j
        A = exp_range(log_lam, zero, n_chunks, C).real.to(self.W.dtype)  # [N, n_chunks]
        M = self.W[:, None, :] * A.transpose(0, 1)[None]  # [H_k, n_chunks, N]
        K = torch.matmul(M, T)  # [H_k, n_chunks, C]
        return K.reshape(K.shape[0], -1)[:, :L]  # [H_k, L]

    def complex_kernel(self, L):
        return self.real_part_kernel(L).to(torch.complex64)  # [H_k, L]  (real)
