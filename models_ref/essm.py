"""eSSM: the efficient MIMO state space layer (Liang, Li 2024, sections 3-4; docs/models.md "eSSM").

The input's H channels are split into s heads of h = H/s channels (block diagonalisation,
eq. 14); head j is a multi-input multi-output SSM with diagonal state matrix (Lemma 1, eq. 8):

    z' = Lambda_j z + B_j u_j,   y_j = C_j Re(z) + D_j u_j,
    Lambda_j [N] complex, Re Lambda < 0;  B_j [N, h], C_j [h, N] real;  D_j = diag [h];  Delta_j [N].

Zero-order hold (eq. 4) per state: Lambdabar = exp(Delta Lambda), Bbar = (Lambdabar - 1)/Lambda B.
As B u is real, Re(z) = V * (B u) with the real system kernel (eqs. 7, 9-12)

    V_n[k] = Re(beta_n Lambdabar_n^k),   beta_n = (exp(Delta_n Lambda_n) - 1) / Lambda_n,

one univariate sequence per state, so the tensor convolution is N FFT convolutions of size 2L
(fast tensor convolution, eq. 13): O(L N max(h, log L)) per head (Proposition 2).
Bidirectional (eq. 16): the backward kernel is the forward one reversed, no new parameters.
The heads are concatenated and mixed by W [H, H] + b (eq. 15), then the gated activation
GELU(y) * sigmoid(W_g GELU(y)) of the paper's appendix E.1.

Initialisation (section 4.5, appendix B.3): Lambda from the eigenvalues of the normal part of
HiPPO-LegS (those with Im > 0 of a 2N-state LegS, models_ref/s4.py ``legs_nplr``), its real part
kept <= -1e-3 by clipping (f_+); B ~ N(0, 1/h), C ~ N(0, 1/N) truncated at 2 std; D = 1;
log Delta ~ U[log dt_min, log dt_max] per state. Only torch is imported here.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from longsynth.models_ref.kernel import SSMLayer, exp_times, fft_conv

RE_MAX = -1e-3  # Re Lambda is clipped to at most this (the paper's f_+, section 4.5)


class ESSM(SSMLayer):
    """One multi-head eSSM layer on u [B, L, H] -> [B, L, H].

    ``N``: states per head; ``heads``: s, dividing H. ``lr``: learning rate of Lambda, Delta
    and B (the paper's LR_SSM); C and D train at the model's (LR_other), all without weight decay.
    """

    def __init__(self, H, N, *, heads=1, bidirectional=False, max_kernel_length=None, dt_min=1e-3, dt_max=1e-1,
                 lr=None):
        super().__init__(H, bidirectional=bidirectional, max_kernel_length=max_kernel_length)
        if heads < 1 or H % heads:
            raise ValueError(f"heads: must divide H = {H}, got {heads}")
        from longsynth.models_ref.s4 import legs_nplr

        self.N, self.heads, h = N, heads, H // heads
        Lam = legs_nplr(2 * N)[0].to(torch.complex64)  # [N]  -1/2 + i w_n
        log_dt = torch.rand(heads, N) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # [s, N]
        self.register("log_dt", log_dt, lr)  # [s, N]
        self.register("Lambda_re", Lam.real.expand(heads, -1).clone(), lr)  # [s, N]  clipped to <= RE_MAX
        self.register("Lambda_im", Lam.imag.expand(heads, -1).clone(), lr)  # [s, N]
        self.register("B", torch.randn(heads, N, h) / math.sqrt(h), lr)  # [s, N, h]
        std = 1 / math.sqrt(N)
        C = nn.init.trunc_normal_(torch.empty(heads, h, N), std=std, a=-2 * std, b=2 * std)  # [s, h, N]  within 2 std
        self.register("C", C, None)  # [s, h, N]
        self.register("D", torch.ones(heads, h), None)  # [s, h]
        self.gate = nn.Linear(H, H)  # W_g of the activation GELU(y) * sigmoid(W_g GELU(y))

    def system_kernel(self, L):
        """V [s, N, L] real: V_n[k] = Re(beta_n exp(Delta_n Lambda_n k)), zero beyond max_kernel_length."""
        L_k = self.kernel_length(L)
        dt = torch.exp(self.log_dt)  # [s, N]
        re = torch.clamp(self.Lambda_re, max=RE_MAX)  # [s, N]  f_+: Re Lambda <= -1e-3
        P = exp_times(dt * re, dt * self.Lambda_im, torch.arange(L_k, device=dt.device))  # [s, N, L_k]  Lambdabar^k
        Lam = torch.complex(re, self.Lambda_im).to(P.dtype)  # [s, N]
        beta = torch.expm1(torch.complex(dt * re, dt * self.Lambda_im).to(P.dtype)) / Lam  # [s, N]  ZOH
        V = (beta[..., None] * P).real  # [s, N, L_k]
        return F.pad(V, (0, L - L_k))  # [s, N, L]

    def ssm(self, u):
        """y = C (V * B u) + D u per head: u [B, H, L] -> [B, H, L] (before mixing and activation)."""
        Bsz, H, L = u.shape
        s, N = self.heads, self.N
        uh = u.reshape(Bsz, s, H // s, L)  # [B, s, h, L]
        Bu = torch.einsum("snh,bshl->bsnl", self.B, uh)  # [B, s, N, L]
        V = self.system_kernel(L).reshape(s * N, L)  # [s N, L]
        if self.bidirectional:  # eq. 16: the same kernel, reversed, for the future
            V = torch.cat((V, V), dim=0)  # [2 s N, L]
        x = fft_conv(Bu.reshape(Bsz, s * N, L), V, self.bidirectional).reshape(Bsz, s, N, L)  # [B, s, N, L]
        y = torch.einsum("shn,bsnl->bshl", self.C, x) + self.D[..., None] * uh  # [B, s, h, L]
        return y.reshape(Bsz, H, L)  # [B, H, L]

    def forward(self, u):
        with torch.autocast(u.device.type, enabled=False):  # kernel and FFT in full precision
            x = u.to(self.out.weight.dtype).transpose(1, 2)  # [B, H, L]
            y = self.ssm(x).transpose(1, 2).to(u.dtype)  # [B, L, H]
        y = self.out(y)  # [B, L, H]  eq. 15: W Concat(heads) + b
        g = F.gelu(y)  # [B, L, H]
        return g * torch.sigmoid(self.gate(g))  # [B, L, H]
